// Platform detection on node trees written the way Linux lays out /sys and /proc (the doctor
// tests' fixture builder), plus the DMI and GPU files detection reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "doctor/fixture.h"
#include "fabricscope/check.h"
#include "fabricscope/error.h"
#include "fmt/format.h"
#include "model/published_runs.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;
using doctor::testing::NodeSpec;
using doctor::testing::NodeTree;
using doctor::testing::TestDir;
using testing::BuiltinCatalog;

// The PCI addresses of the tree's GPUs (class 0x0302xx), as /sys/bus/pci/devices lists them.
std::vector<std::string> GpuAddresses(const fs::path& root) {
  std::vector<std::string> gpus;
  for (const auto& entry : fs::directory_iterator(root / "sys/bus/pci/devices")) {
    std::ifstream in(entry.path() / "class");
    std::string code;
    in >> code;
    if (code.starts_with("0x0302")) gpus.push_back(entry.path().filename().string());
  }
  return gpus;
}

// The DMI identity of the node and, when `gpu_model` is not empty, NVIDIA's driver file
// naming each GPU.
void Identify(const NodeTree& tree, const std::string& product, const std::string& vendor,
              const std::string& gpu_model) {
  if (!product.empty()) tree.Write("/sys/class/dmi/id/product_name", product + "\n");
  if (!vendor.empty()) tree.Write("/sys/class/dmi/id/sys_vendor", vendor + "\n");
  if (gpu_model.empty()) return;
  for (const std::string& bdf : GpuAddresses(tree.root())) {
    tree.Write("/proc/driver/nvidia/gpus/" + bdf + "/information",
               "Model: \t\t " + gpu_model + "\nIRQ:   \t\t 140\nBus Location: \t " + bdf + "\n");
  }
}

bool Mentions(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& line : lines) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string Lines(const PlatformChoice& c) {
  std::string out = "unavailable: " + c.unavailable + "\n";
  for (const auto& e : c.evidence) out += "evidence: " + e + "\n";
  for (const auto& n : c.notes) out += "note: " + n + "\n";
  return out;
}

TEST(Detect, DgxH100FromDmiGpusAndInfiniBand) {
  const NodeTree tree(TestDir("node"), NodeSpec{});
  Identify(tree, "DGX H100", "NVIDIA", "NVIDIA H100 80GB HBM3");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), tree.root().string());
  ASSERT_TRUE(c.platform) << Lines(c);
  EXPECT_EQ(c.platform->name, "dgx-h100");
  EXPECT_EQ(c.origin, "detected");
  EXPECT_TRUE(Mentions(c.evidence, "DMI product name 'DGX H100'")) << Lines(c);
  EXPECT_TRUE(Mentions(c.evidence, "8 GPUs 'NVIDIA H100 80GB HBM3'")) << Lines(c);
  EXPECT_TRUE(Mentions(c.evidence, "/proc/driver/nvidia/gpus/*/information")) << Lines(c);
  EXPECT_TRUE(Mentions(c.evidence, "8 RDMA ports, 8 at 400 Gb/s, link layer InfiniBand"))
      << Lines(c);
  EXPECT_TRUE(c.notes.empty()) << Lines(c);
}

TEST(Detect, A3UltraFromGceH200AndRoce) {
  NodeSpec spec;
  spec.roce = true;
  const NodeTree tree(TestDir("node"), spec);
  Identify(tree, "Google Compute Engine", "Google", "NVIDIA H200");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), tree.root().string());
  ASSERT_TRUE(c.platform) << Lines(c);
  EXPECT_EQ(c.platform->name, "gcp-a3-ultragpu-8g");
}

TEST(Detect, AzureNeedsTheVendorToo) {
  const NodeTree tree(TestDir("node"), NodeSpec{});
  Identify(tree, "Virtual Machine", "Microsoft Corporation", "NVIDIA H200");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), tree.root().string());
  ASSERT_TRUE(c.platform) << Lines(c);
  EXPECT_EQ(c.platform->name, "azure-nd-h200-v5");
}

TEST(Detect, GpuModelFromPciIdsWhenTheDriverSaysNothing) {
  const NodeTree tree(TestDir("node"), NodeSpec{});
  Identify(tree, "DGX H200", "", "");
  for (const std::string& bdf : GpuAddresses(tree.root())) {
    tree.Write("/sys/bus/pci/devices/" + bdf + "/device", "0x2335\n");
  }
  // "GH100" must not read as an H100.
  tree.Write("/usr/share/misc/pci.ids",
             "# pci.ids excerpt\n10de  NVIDIA Corporation\n\t2330  GH100 [H100 SXM5 80GB]\n"
             "\t2335  GH100 [H200 SXM 141GB]\n\t\t10de 18be  H200 board\n"
             "15b3  Mellanox Technologies\n\t1021  MT2910 Family [ConnectX-7]\n");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), tree.root().string());
  ASSERT_TRUE(c.platform) << Lines(c);
  EXPECT_EQ(c.platform->name, "dgx-h200");
  EXPECT_TRUE(Mentions(c.evidence, "'GH100 [H200 SXM 141GB]'")) << Lines(c);
  EXPECT_TRUE(Mentions(c.evidence, "pci.ids")) << Lines(c);
}

TEST(Detect, DegradedNicsStillDetectWithANote) {
  NodeSpec spec;
  spec.roce = true;
  spec.rate.fill("200 Gb/sec (4X HDR)");
  spec.port_state[3] = "1: DOWN";
  const NodeTree tree(TestDir("node"), spec);
  Identify(tree, "Google Compute Engine", "Google", "NVIDIA H200");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), tree.root().string());
  ASSERT_TRUE(c.platform) << Lines(c);
  EXPECT_EQ(c.platform->name, "gcp-a3-ultragpu-8g");
  EXPECT_TRUE(Mentions(c.evidence, "1 not ACTIVE")) << Lines(c);
  EXPECT_TRUE(Mentions(c.notes,
                       "has 8 x 400 Gb/s gIB NICs, this node shows 8 x NVIDIA H200, "
                       "8 x 200 Gb/s RDMA"))
      << Lines(c);
}

TEST(Detect, SameHardwareOfTwoMakersWithoutDmiIsAmbiguous) {
  const NodeTree tree(TestDir("node"), NodeSpec{});
  Identify(tree, "", "", "NVIDIA H100 80GB HBM3");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), tree.root().string());
  EXPECT_FALSE(c.platform) << Lines(c);
  EXPECT_EQ(c.origin, "none");
  EXPECT_NE(c.unavailable.find("fits several platforms with different figures"), std::string::npos)
      << c.unavailable;
  EXPECT_NE(c.unavailable.find("azure-nd-h100-v5"), std::string::npos) << c.unavailable;
  EXPECT_NE(c.unavailable.find("dgx-h100"), std::string::npos) << c.unavailable;
  EXPECT_TRUE(Mentions(c.evidence, "no DMI product name")) << Lines(c);
}

TEST(Detect, NoGpuCannotBeDetectedAndSaysWhy) {
  const fs::path empty = TestDir("empty");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), empty.string());
  EXPECT_FALSE(c.platform);
  EXPECT_EQ(c.unavailable, "could not detect the platform: this node has no GPU");
  EXPECT_TRUE(Mentions(c.evidence, "no DMI product name")) << Lines(c);
  EXPECT_TRUE(Mentions(c.evidence, "/sys/bus/pci/devices is absent")) << Lines(c);
  EXPECT_TRUE(Mentions(c.evidence, "no RDMA ports")) << Lines(c);
  fs::remove_all(empty);
}

TEST(Detect, GpusThatFitNoPlatform) {
  const NodeTree tree(TestDir("node"), NodeSpec{});
  Identify(tree, "SYS-421GE", "Supermicro", "NVIDIA L40S");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), tree.root().string());
  EXPECT_FALSE(c.platform);
  EXPECT_NE(c.unavailable.find("8 x NVIDIA L40S, 8 x 400 Gb/s RDMA (InfiniBand), DMI product "
                               "name 'SYS-421GE' fits no platform of the catalog"),
            std::string::npos)
      << c.unavailable;
}

// A GCE VM with GPUDirect-TCPX: eight H100 and five gVNIC functions (four data NICs and the
// primary one), no RDMA. Written by hand: the doctor's tree always has RDMA NICs.
TEST(Detect, A3HighFromPlainNicsAndItsTwinIsNamed) {
  const fs::path root = TestDir("gce");
  auto write = [&](const std::string& path, const std::string& text) {
    fs::create_directories((root / path).parent_path());
    std::ofstream(root / path) << text;
  };
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("sys/bus/pci/devices/0000:{:02x}:00.0", 0x80 + i);
    write(dir + "/class", "0x030200\n");
    write(dir + "/vendor", "0x10de\n");
    write(fmt::format("proc/driver/nvidia/gpus/0000:{:02x}:00.0/information", 0x80 + i),
          "Model: \t\t NVIDIA H100 80GB HBM3\n");
  }
  for (int i = 0; i < 5; ++i) {
    const std::string dir = fmt::format("sys/bus/pci/devices/0000:{:02x}:00.0", 0x10 + i);
    write(dir + "/class", "0x020000\n");
    write(dir + "/vendor", "0x1ae0\n");
    write(dir + fmt::format("/net/eth{}/mtu", i), "8244\n");
  }
  write("sys/class/dmi/id/product_name", "Google Compute Engine\n");
  const PlatformChoice c = DetectPlatform(BuiltinCatalog(), root.string());
  ASSERT_TRUE(c.platform) << Lines(c);
  EXPECT_EQ(c.platform->name, "gcp-a3-highgpu-8g");
  EXPECT_TRUE(Mentions(c.notes, "the node fits gcp-a3-edgegpu-8g equally")) << Lines(c);
  EXPECT_TRUE(Mentions(c.evidence, "5 network functions without RDMA")) << Lines(c);
  fs::remove_all(root);
}

TEST(Detect, RootThatIsNotADirectoryIsAUsageError) {
  EXPECT_THROW(DetectPlatform(BuiltinCatalog(), "/nonexistent/fabricscope-node"), UsageError);
}

}  // namespace
}  // namespace fabricscope
