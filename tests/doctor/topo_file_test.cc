// Topology files: `nvidia-smi topo -m` text and NCCL topology XML, written in the formats the
// tools print, read for GPU-NIC affinity.
#include "doctor/topo_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "doctor/fixture.h"
#include "fabricscope/error.h"

namespace fabricscope::doctor::testing {
namespace {

namespace fs = std::filesystem;

// `nvidia-smi topo -m` of an 8-GPU, 8-NIC node (driver 535 layout: NIC0.. columns and a NIC
// legend). `nic_socket[n]` is the socket of NIC n; GPU g is on socket g / 4 and shares a
// switch with NIC g when both are on the same socket.
std::string NvidiaSmi(const std::array<int, 8>& nic_socket) {
  auto gpu_nic = [&](int g, int n) -> std::string {
    if (nic_socket[static_cast<size_t>(n)] != g / 4) return "SYS";
    return g == n ? "PXB" : "NODE";
  };
  std::string out = "\t";
  for (int g = 0; g < 8; ++g) out += fmt::format("GPU{}\t", g);
  for (int n = 0; n < 8; ++n) out += fmt::format("NIC{}\t", n);
  out += "CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  for (int g = 0; g < 8; ++g) {
    out += fmt::format("GPU{}\t", g);
    for (int h = 0; h < 8; ++h) out += g == h ? " X \t" : "NV18\t";
    for (int n = 0; n < 8; ++n) out += gpu_nic(g, n) + "\t";
    out += g < 4 ? "0-55,112-167\t0\t\tN/A\n" : "56-111,168-223\t1\t\tN/A\n";
  }
  for (int n = 0; n < 8; ++n) {
    out += fmt::format("NIC{}\t", n);
    for (int g = 0; g < 8; ++g) out += gpu_nic(g, n) + "\t";
    for (int m = 0; m < 8; ++m) {
      out += n == m ? " X \t"
                    : (nic_socket[static_cast<size_t>(n)] == nic_socket[static_cast<size_t>(m)]
                           ? "NODE\t"
                           : "SYS\t");
    }
    out += "\n";
  }
  out +=
      "\nLegend:\n\n"
      "  X    = Self\n"
      "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
      "(e.g., QPI/UPI)\n"
      "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
      "within a NUMA node\n"
      "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
      "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
      "Bridge)\n"
      "  PIX  = Connection traversing at most a single PCIe bridge\n"
      "  NV#  = Connection traversing a bonded set of # NVLinks\n\n"
      "NIC Legend:\n\n";
  for (int n = 0; n < 8; ++n) out += fmt::format("  NIC{}: mlx5_{}\n", n, n);
  return out;
}

// An NCCL topology dump: two CPUs, each with PCIe switches holding a GPU and a NIC.
// `nic_cpu[n]`: the CPU NIC n hangs under.
std::string NcclXml(const std::array<int, 8>& nic_cpu, int no_gdr_nic = -1) {
  std::string out = "<system version=\"1\">\n";
  for (int cpu = 0; cpu < 2; ++cpu) {
    out += fmt::format(
        "  <cpu numaid=\"{}\" affinity=\"{}\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
        "familyid=\"6\" modelid=\"143\">\n",
        cpu, cpu == 0 ? "00000000,000000ff" : "0000ff00,00000000");
    for (int s = cpu * 4; s < cpu * 4 + 4; ++s) {
      out += fmt::format(
          "    <pci busid=\"0000:{:02x}:00.0\" class=\"0x060400\" vendor=\"0x1000\" "
          "device=\"0xc030\" subsystem_vendor=\"0x1000\" subsystem_device=\"0x100b\" "
          "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n",
          0x18 + s * 0x13);
      out += fmt::format(
          "      <pci busid=\"0000:{:02x}:00.0\" class=\"0x030200\" vendor=\"0x10de\" "
          "device=\"0x2330\" subsystem_vendor=\"0x10de\" subsystem_device=\"0x16c1\" "
          "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
          "        <gpu dev=\"{}\" sm=\"90\" rank=\"{}\" gdr=\"1\">\n"
          "          <nvlink target=\"0000:05:00.0\" count=\"2\" tclass=\"0x068000\"/>\n"
          "        </gpu>\n"
          "      </pci>\n",
          0x1a + s * 0x13, s, s);
      for (int n = 0; n < 8; ++n) {
        // NIC n sits under the switch of the same position on its CPU.
        if (nic_cpu[static_cast<size_t>(n)] != cpu || n % 4 != s % 4) continue;
        out += fmt::format(
            "      <pci busid=\"0000:{:02x}:00.0\" class=\"0x020700\" vendor=\"0x15b3\" "
            "device=\"0x1021\" subsystem_vendor=\"0x15b3\" subsystem_device=\"0x0023\" "
            "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
            "        <nic>\n"
            "          <net name=\"mlx5_{}\" dev=\"{}\" speed=\"400000\" port=\"1\" "
            "latency=\"0.000000\" guid=\"0x{:x}\" maxconn=\"131072\" gdr=\"{}\"/>\n"
            "        </nic>\n"
            "      </pci>\n",
            0x1b + n * 0x13, n, n, 0xa1000 + n, n == no_gdr_nic ? 0 : 1);
      }
      out += "    </pci>\n";
    }
    out += "  </cpu>\n";
  }
  return out + "</system>\n";
}

class TopoFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TestDir("topo"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  // The topo_file check on a root without GPUs, reading `text`.
  CheckResult Check(const std::string& text, const std::string& name = "topo.txt") {
    const std::string file = WriteFile(name, text);
    fs::create_directories(dir_ / "empty-root");
    report_ = Diagnose(dir_ / "empty-root", {}, "", file);
    return Find(report_, "topo_file");
  }
  // The message of the UsageError `text` causes.
  std::string Refusal(const std::string& text, const std::string& name = "bad.txt") {
    try {
      ParseTopoFile(WriteFile(name, text));
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
  NodeReport report_;
};

constexpr std::array<int, 8> kBalanced = {0, 0, 0, 0, 1, 1, 1, 1};
constexpr std::array<int, 8> kAllOnSocket1 = {1, 1, 1, 1, 1, 1, 1, 1};

TEST_F(TopoFileTest, NvidiaSmiMatrixIsParsed) {
  const PciTopology t = ParseNvidiaSmiTopo(NvidiaSmi(kBalanced), "topo.txt");
  ASSERT_EQ(t.Gpus().size(), 8u);
  ASSERT_EQ(t.Nics().size(), 8u);
  EXPECT_EQ(t.Nics()[5]->name, "mlx5_5");  // from the NIC legend
  EXPECT_EQ(t.Gpus()[6]->numa, 1);
  EXPECT_EQ(t.Path(*t.Gpus()[2], *t.Nics()[2]), PathType::kPxb);
  EXPECT_EQ(t.Path(*t.Gpus()[2], *t.Nics()[3]), PathType::kNode);
  EXPECT_EQ(t.Path(*t.Gpus()[2], *t.Nics()[7]), PathType::kSys);
}

TEST_F(TopoFileTest, HealthyNvidiaSmiMatrixIsOk) {
  const CheckResult c = Check(NvidiaSmi(kBalanced));
  EXPECT_EQ(c.severity(), Severity::kOk) << Dump(report_);
  EXPECT_TRUE(Has(c, Severity::kOk, "nvidia-smi topo -m")) << Dump(report_);
  EXPECT_TRUE(Has(c, Severity::kOk, "8 of 8 GPUs have a NIC behind"));
  // sysfs has no GPU here: that check skips and points at this one.
  EXPECT_EQ(Find(report_, "gpu_nic_affinity").severity(), Severity::kInfo);
}

TEST_F(TopoFileTest, NvidiaSmiMatrixWithNicsAcrossTheSocket) {
  const CheckResult c = Check(NvidiaSmi(kAllOnSocket1));
  EXPECT_TRUE(Has(c, Severity::kCritical,
                  "GPU0, GPU1, GPU2, GPU3: the closest NIC is across the socket (SYS)"))
      << Dump(report_);
  EXPECT_TRUE(Has(c, Severity::kOk, "4 of 8 GPUs"));
}

TEST_F(TopoFileTest, OldNvidiaSmiLayoutNamesNicColumnsDirectly) {
  const std::string text =
      "        GPU0    GPU1    mlx5_0  mlx5_1  CPU Affinity    NUMA Affinity\n"
      "GPU0     X      NV12    PHB     SOC     0-23    0\n"
      "GPU1    NV12     X      SOC     SOC     0-23    0\n"
      "mlx5_0  PHB     SOC      X      SOC\n"
      "mlx5_1  SOC     SOC     SOC      X\n";
  const CheckResult c = Check(text);
  EXPECT_TRUE(Has(c, Severity::kWarn, "GPU0: the closest NIC is PHB")) << Dump(report_);
  EXPECT_TRUE(Has(c, Severity::kCritical, "GPU1: the closest NIC is across")) << Dump(report_);
}

TEST_F(TopoFileTest, TerminalEscapesAreIgnored) {
  std::string text = NvidiaSmi(kBalanced);
  text.insert(0, "\x1b[4m");
  const size_t newline = text.find('\n');
  text.insert(newline, "\x1b[0m");
  EXPECT_EQ(ParseNvidiaSmiTopo(text, "t").Gpus().size(), 8u);
}

TEST_F(TopoFileTest, NcclXmlIsParsed) {
  const PciTopology t = ParseNcclTopoXml(NcclXml(kBalanced), "topo.xml");
  ASSERT_EQ(t.Gpus().size(), 8u);
  ASSERT_EQ(t.Nics().size(), 8u);
  const PciDevice& gpu3 = *t.Gpus()[3];
  EXPECT_EQ(gpu3.name, "GPU3");
  EXPECT_EQ(gpu3.numa, 0);
  EXPECT_EQ(gpu3.bdf, "0000:53:00.0");
  EXPECT_EQ(t.Path(gpu3, *t.Nics()[3]), PathType::kPix);  // both under one switch
  EXPECT_EQ(t.Path(gpu3, *t.Nics()[2]), PathType::kPhb);  // another switch of the same CPU
  EXPECT_EQ(t.Path(gpu3, *t.Nics()[4]), PathType::kSys);
}

TEST_F(TopoFileTest, NcclXmlChecks) {
  CheckResult c = Check(NcclXml(kBalanced), "topo.xml");
  EXPECT_EQ(c.severity(), Severity::kOk) << Dump(report_);
  EXPECT_TRUE(Has(c, Severity::kOk, "NCCL topology XML"));
  c = Check(NcclXml(kAllOnSocket1), "topo.xml");
  EXPECT_TRUE(Has(c, Severity::kCritical, "GPU0, GPU1, GPU2, GPU3: the closest NIC is across"))
      << Dump(report_);
  c = Check(NcclXml(kBalanced, 6), "topo.xml");
  EXPECT_TRUE(Has(c, Severity::kWarn, "no GPUDirect RDMA support for mlx5_6 (gdr=\"0\")"))
      << Dump(report_);
}

TEST_F(TopoFileTest, NcclTopoFileFromTheEnvironmentIsRead) {
  NodeTree tree(dir_ / "node", NodeSpec{});
  tree.Write("/opt/nccl/topo.xml", NcclXml(kBalanced));
  const NodeReport r = Diagnose(tree.root(), {{"NCCL_TOPO_FILE", "/opt/nccl/topo.xml"}});
  EXPECT_TRUE(Has(Find(r, "topo_file"), Severity::kOk, "8 GPU(s), 8 NIC(s)")) << Dump(r);
  EXPECT_EQ(Find(r, "nccl_env").severity(), Severity::kOk) << Dump(r);
}

TEST_F(TopoFileTest, MalformedFilesAreRefusedWithTheLine) {
  std::string xml = NcclXml(kBalanced);
  xml.replace(xml.find("</gpu>"), 6, "</gpux>");
  const std::string broken = Refusal(xml, "broken.xml");
  EXPECT_NE(broken.find("broken.xml:"), std::string::npos) << broken;
  EXPECT_NE(broken.find("not well-formed XML"), std::string::npos) << broken;
  EXPECT_NE(broken.find(":7:"), std::string::npos) << broken;  // the line of </gpux>

  const std::string wrong_root = Refusal("<?xml version=\"1.0\"?>\n<topology/>\n", "t.xml");
  EXPECT_NE(wrong_root.find("t.xml:2: the root element is <topology>, not <system>"),
            std::string::npos)
      << wrong_root;

  std::string smi = NvidiaSmi(kBalanced);
  const size_t row = smi.find("\nGPU3\t") + 1;
  smi.erase(row + 5, smi.find('\n', row) - row - 5);  // GPU3's row loses its cells
  const std::string short_row = Refusal(smi);
  EXPECT_NE(short_row.find("bad.txt:5: row GPU3 has 0 cells but the header has 16"),
            std::string::npos)
      << short_row;

  std::string cell = NvidiaSmi(kBalanced);
  cell.replace(cell.find("PXB"), 3, "PXQ");
  EXPECT_NE(Refusal(cell).find("cell 'PXQ' (row GPU0, column NIC0) is not a PCIe path"),
            std::string::npos)
      << Refusal(cell);

  EXPECT_NE(Refusal("just some text\n").find("neither `nvidia-smi topo -m` output"),
            std::string::npos);
  EXPECT_NE(Refusal("").find("neither"), std::string::npos);
  try {
    ParseTopoFile((dir_ / "missing").string());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read --topo-file"), std::string::npos);
  }
}

}  // namespace
}  // namespace fabricscope::doctor::testing
