// The checks on node trees: a healthy 8-GPU, 8-NIC node, and one tree per fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "doctor/fixture.h"
#include "fabricscope/error.h"

namespace fabricscope::doctor::testing {
namespace {

class ChecksTest : public ::testing::Test {
 protected:
  NodeReport Run(const NodeSpec& spec, const std::map<std::string, std::string>& env = {}) {
    tree_.reset();  // its directory goes before the new tree takes the same path
    tree_ = std::make_unique<NodeTree>(TestDir("node"), spec);
    return Diagnose(tree_->root(), env);
  }
  std::unique_ptr<NodeTree> tree_;
};

TEST_F(ChecksTest, HealthyInfinibandNodeHasNoProblem) {
  const NodeReport r = Run({});
  EXPECT_EQ(r.severity(), Severity::kOk) << Dump(r);
  EXPECT_EQ(r.host, "gpu-node");
  EXPECT_TRUE(Has(Find(r, "pci"), Severity::kOk, "8 GPUs (8 NVIDIA), 9 NICs (8 RDMA")) << Dump(r);
  EXPECT_TRUE(
      Has(Find(r, "numa"), Severity::kOk,
          "2 NUMA node(s); node 0: 4 GPU(s), 4 RDMA NIC(s); node 1: 4 GPU(s), 4 RDMA NIC(s)"))
      << Dump(r);
  EXPECT_TRUE(Has(Find(r, "gpu_nic_affinity"), Severity::kOk, "8 of 8 GPUs have a NIC behind"))
      << Dump(r);
  EXPECT_TRUE(Has(Find(r, "gpudirect"), Severity::kOk, "nvidia_peermem is loaded")) << Dump(r);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kOk, "8 of 8 RDMA port(s) active")) << Dump(r);
  EXPECT_EQ(Find(r, "mtu").severity(), Severity::kInfo);  // InfiniBand: no RoCE MTU
  EXPECT_TRUE(Has(Find(r, "shm"), Severity::kOk, "/dev/shm is 64 GiB")) << Dump(r);
  EXPECT_TRUE(Has(Find(r, "memlock"), Severity::kOk, "unlimited"));
  EXPECT_TRUE(Has(Find(r, "nccl_env"), Severity::kOk, "no NCCL variable set"));
  EXPECT_EQ(Find(r, "nccl_log").severity(), Severity::kInfo);
  EXPECT_EQ(Find(r, "topo_file").severity(), Severity::kInfo);
  // Facts for drift detection.
  EXPECT_EQ(r.facts.at("gpus"), "8");
  EXPECT_EQ(r.facts.at("driver.nvidia"), "535.129.03");
  EXPECT_EQ(r.facts.at("ib.mlx5_3/1.rate"), "400 Gb/sec (4X NDR)");
  EXPECT_EQ(r.facts.at("affinity.GPU5"), "mlx5_5 PXB");
  EXPECT_EQ(r.facts.at("gpudirect"), "nvidia_peermem");
  EXPECT_EQ(r.facts.at("kernel"), "5.15.0-91-generic");
}

TEST_F(ChecksTest, HealthyRoceNodeHasNoProblem) {
  NodeSpec spec;
  spec.roce = true;
  const NodeReport r = Run(spec);
  EXPECT_EQ(r.severity(), Severity::kOk) << Dump(r);
  EXPECT_TRUE(Has(Find(r, "mtu"), Severity::kOk, "8 RoCE interface(s) carry 4096-byte")) << Dump(r);
  EXPECT_EQ(r.facts.at("ib.mlx5_0/1.roce_v2_gid"), "3");
  EXPECT_EQ(r.facts.at("mtu.enp27s0np0"), "9000");
}

TEST_F(ChecksTest, MissingPeerMemoryModuleIsCritical) {
  NodeSpec spec;
  spec.peermem = false;
  const NodeReport r = Run(spec);
  const CheckResult& c = Find(r, "gpudirect");
  EXPECT_TRUE(Has(c, Severity::kCritical, "GPUDirect RDMA is inactive")) << Dump(r);
  EXPECT_TRUE(Has(c, Severity::kCritical, "needs NVIDIA's open GPU kernel modules")) << Dump(r);
  EXPECT_NE(c.findings.front().fix.find("modprobe nvidia_peermem"), std::string::npos);
  EXPECT_EQ(r.severity(), Severity::kCritical);
  EXPECT_EQ(r.facts.at("gpudirect"), "none");
}

TEST_F(ChecksTest, OldKernelCannotUseDmaBuf) {
  NodeSpec spec;
  spec.peermem = false;
  spec.kernel = "5.4.0-150-generic";
  spec.open_kernel_module = true;
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "gpudirect"), Severity::kCritical, "dma-buf needs Linux 5.12"))
      << Dump(r);
}

TEST_F(ChecksTest, DmaBufReplacesThePeerMemoryModule) {
  NodeSpec spec;
  spec.peermem = false;
  spec.kernel = "6.5.0-1015-aws";
  spec.open_kernel_module = true;
  NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "gpudirect"), Severity::kOk, "GPUDirect RDMA through dma-buf"))
      << Dump(r);
  // ... unless NCCL is told not to use it.
  r = Diagnose(tree_->root(), {{"NCCL_DMABUF_ENABLE", "0"}});
  EXPECT_TRUE(Has(Find(r, "gpudirect"), Severity::kCritical, "NCCL_DMABUF_ENABLE=0")) << Dump(r);
}

TEST_F(ChecksTest, NicsOnTheOtherSocketAreCritical) {
  NodeSpec spec;
  spec.nic_switch = {4, 4, 5, 5, 6, 6, 7, 7};  // every NIC on socket 1
  const NodeReport r = Run(spec);
  const CheckResult& a = Find(r, "gpu_nic_affinity");
  EXPECT_TRUE(Has(a, Severity::kCritical,
                  "GPU0, GPU1, GPU2, GPU3: the closest NIC is across the socket (SYS)"))
      << Dump(r);
  EXPECT_TRUE(Has(a, Severity::kOk, "4 of 8 GPUs have a NIC behind their own PCIe switch (PXB)"))
      << Dump(r);
  // One line of evidence per GPU, naming a few of the equally distant NICs.
  for (const auto& f : a.findings) {
    if (f.severity != Severity::kCritical) continue;
    ASSERT_EQ(f.evidence.size(), 4u);
    EXPECT_NE(f.evidence[0].find("GPU0 (0000:1a:00.0): NUMA 0, pci0000:17"), std::string::npos)
        << f.evidence[0];
    EXPECT_NE(f.evidence[0].find("closest mlx5_0 (0000:9b:00.0) on NUMA 1 under pci0000:97"),
              std::string::npos)
        << f.evidence[0];
    EXPECT_NE(f.evidence[0].find("+5 more at the same distance"), std::string::npos);
  }
  EXPECT_TRUE(Has(Find(r, "numa"), Severity::kWarn, "NUMA node 0 has 4 GPU(s) but no RDMA NIC"))
      << Dump(r);
  EXPECT_EQ(r.facts.at("affinity.worst"), "SYS");
}

TEST_F(ChecksTest, UnknownNumaNodesAreReported) {
  NodeSpec spec;
  spec.numa_known = false;
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "numa"), Severity::kWarn, "reports no NUMA node")) << Dump(r);
  // Each GPU still shares a PCIe switch with its NIC: that needs no NUMA information.
  EXPECT_TRUE(Has(Find(r, "gpu_nic_affinity"), Severity::kOk, "8 of 8")) << Dump(r);
}

TEST_F(ChecksTest, PortDownIsCritical) {
  NodeSpec spec;
  spec.port_state[2] = "1: DOWN";
  spec.phys_state[2] = "2: Polling";
  const NodeReport r = Run(spec);
  const CheckResult& c = Find(r, "ib_ports");
  EXPECT_TRUE(Has(c, Severity::kCritical, "mlx5_2/1: is DOWN (physical state Polling)")) << Dump(r);
  EXPECT_TRUE(Has(c, Severity::kOk, "7 of 8 RDMA port(s)"));
}

TEST_F(ChecksTest, PortWithoutSubnetManagerIsCritical) {
  NodeSpec spec;
  spec.port_state[1] = "2: INIT";
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kCritical, "no subnet manager")) << Dump(r);
}

TEST_F(ChecksTest, DisabledPortIsOnlyAWarning) {
  NodeSpec spec;
  spec.port_state[7] = "1: DOWN";
  spec.phys_state[7] = "3: Disabled";
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kWarn, "administratively disabled")) << Dump(r);
  EXPECT_EQ(r.severity(), Severity::kWarn);
}

TEST_F(ChecksTest, PortTrainedDownToFewerLanesIsCritical) {
  NodeSpec spec;
  spec.rate[5] = "200 Gb/sec (2X NDR)";
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kCritical,
                  "mlx5_5/1: runs at 200 Gb/sec (2X NDR) (50% of the node's fastest port"))
      << Dump(r);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kCritical, "trained down to fewer lanes"));
}

TEST_F(ChecksTest, SlowerGenerationPortIsAWarning) {
  NodeSpec spec;
  spec.rate[6] = "200 Gb/sec (4X HDR)";
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kWarn, "mlx5_6/1: runs at 200 Gb/sec (4X HDR)"))
      << Dump(r);
}

// Every port at HDR: no port is slower than another, but a ConnectX-7 can run NDR.
TEST_F(ChecksTest, PortBelowItsCardsRateIsAFindingWithoutAFasterPort) {
  NodeSpec spec;
  spec.rate.fill("200 Gb/sec (4X HDR)");
  NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kWarn,
                  "mlx5_0/1: runs at 200 Gb/sec (4X HDR) while its ConnectX-7 can run 4X NDR "
                  "(400 Gb/s): 50% of the card's rate"))
      << Dump(r);
  // One port up, the others down: still found; the model comes from the PCI device id when
  // the driver gives no hca_type.
  spec = NodeSpec();
  spec.hca_type = "";
  spec.port_state.fill("1: DOWN");
  spec.phys_state.fill("3: Disabled");
  spec.port_state[0] = "4: ACTIVE";
  spec.phys_state[0] = "5: LinkUp";
  spec.rate[0] = "100 Gb/sec (1X NDR)";
  r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kCritical,
                  "mlx5_0/1: runs at 100 Gb/sec (1X NDR) while its ConnectX-7"))
      << Dump(r);
  // A card the table does not know: no claim.
  spec = NodeSpec();
  spec.hca_type = "MT9999";
  spec.nic_device = "0x9999";
  spec.rate.fill("200 Gb/sec (4X HDR)");
  r = Run(spec);
  EXPECT_FALSE(Has(Find(r, "ib_ports"), Severity::kWarn, "can run")) << Dump(r);
}

// The catalog's NIC rate for the node's platform (--platform, or detected as check does).
class CatalogRateTest : public ChecksTest {
 protected:
  // The old tree goes first: its directory is the path the new one takes.
  void Make(const NodeSpec& spec) {
    tree_.reset();
    tree_ = std::make_unique<NodeTree>(TestDir("node"), spec);
  }
  NodeReport Diagnose(const std::string& platform = "") {
    DoctorOptions options;
    options.root = tree_->root().string();
    options.platform = platform;
    return RunDoctor(options);
  }
};

TEST_F(CatalogRateTest, PortsBelowThePlatformsNicRateAreCritical) {
  // A card the HCA table does not know, every port at HDR: only the catalog can tell.
  NodeSpec spec;
  spec.hca_type = "MT9999";
  spec.nic_device = "0x9999";
  spec.rate.fill("200 Gb/sec (4X HDR)");
  Make(spec);
  NodeReport r = Diagnose("dgx-h100");
  const CheckResult& c = Find(r, "ib_ports");
  EXPECT_TRUE(Has(c, Severity::kCritical,
                  "mlx5_0/1: runs at 200 Gb/sec (4X HDR) where dgx-h100 has 8 x 400 Gb/s "
                  "ConnectX-7 NICs: 50% of the platform's NIC rate"))
      << Dump(r);
  bool catalog_evidence = false;
  for (const auto& f : c.findings) {
    for (const auto& e : f.evidence) {
      catalog_evidence = catalog_evidence ||
                         e == "catalog dgx-h100: 8 x 400 Gb/s IB (ConnectX-7; platform --platform)";
    }
  }
  EXPECT_TRUE(catalog_evidence) << Dump(r);
  EXPECT_EQ(r.facts.at("platform"), "dgx-h100");
  // Without a platform nothing says 200 Gb/s is short for this card.
  r = Diagnose();
  EXPECT_EQ(Find(r, "ib_ports").severity(), Severity::kOk) << Dump(r);
  // A platform whose NICs run at 200 (ND A100 v4: 8 x HDR) is satisfied by the same ports.
  r = Diagnose("azure-nd-a100-v4");
  EXPECT_EQ(Find(r, "ib_ports").severity(), Severity::kOk) << Dump(r);
}

TEST_F(CatalogRateTest, ACardSlowerThanThePlatformsNicIsNamed) {
  // ConnectX-6 at its full HDR rate: the HCA table is satisfied, the catalog is not.
  NodeSpec spec;
  spec.hca_type = "MT4123";
  spec.nic_device = "0x101b";
  spec.rate.fill("200 Gb/sec (4X HDR)");
  Make(spec);
  const NodeReport r = Diagnose("dgx-h100");
  const CheckResult& c = Find(r, "ib_ports");
  EXPECT_TRUE(Has(c, Severity::kCritical, "and its ConnectX-6 cannot run faster (200 Gb/s)"))
      << Dump(r);
  const auto it = std::find_if(c.findings.begin(), c.findings.end(), [](const Finding& f) {
    return f.what.find("ConnectX-6 cannot") != std::string::npos;
  });
  ASSERT_NE(it, c.findings.end());
  EXPECT_NE(it->fix.find("fit a ConnectX-7"), std::string::npos) << it->fix;
}

TEST_F(CatalogRateTest, RoCEPlatformAndDetectedPlatform) {
  // a3-ultragpu-8g's NICs are 400 Gb/s RoCE.
  NodeSpec spec;
  spec.roce = true;
  spec.hca_type = "MT9999";
  spec.nic_device = "0x9999";
  spec.rate.fill("200 Gb/sec (4X HDR)");
  Make(spec);
  NodeReport r = Diagnose("a3-ultragpu-8g");
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kCritical,
                  "where gcp-a3-ultragpu-8g has 8 x 400 Gb/s ConnectX-7 NICs"))
      << Dump(r);
  // Detected: the DMI name and the GPUs make it a DGX H100 although its ports are slow.
  spec = NodeSpec();
  spec.hca_type = "MT9999";
  spec.nic_device = "0x9999";
  spec.rate.fill("200 Gb/sec (4X HDR)");
  Make(spec);
  tree_->Write("/sys/class/dmi/id/product_name", "DGX H100\n");
  for (const auto& entry :
       std::filesystem::directory_iterator(tree_->root() / "sys/bus/pci/devices")) {
    std::ifstream in(entry.path() / "class");
    std::string code;
    in >> code;
    if (!code.starts_with("0x0302")) continue;
    const std::string bdf = entry.path().filename().string();
    tree_->Write("/proc/driver/nvidia/gpus/" + bdf + "/information",
                 "Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t " + bdf + "\n");
  }
  r = Diagnose();
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kCritical, "where dgx-h100 has 8 x 400 Gb/s"))
      << Dump(r);
  EXPECT_EQ(r.facts.at("platform"), "dgx-h100");
}

TEST_F(CatalogRateTest, UnknownPlatformIsAUsageError) {
  Make(NodeSpec{});
  try {
    Diagnose("no-such-platform");
    ADD_FAILURE() << "an unknown platform was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--platform 'no-such-platform' is not a platform of the "
                                         "catalog; give one of "),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("dgx-h100"), std::string::npos) << e.what();
  }
}

TEST_F(ChecksTest, ErrorCountersAreAWarning) {
  NodeSpec spec;
  spec.errors_on_port = 4;
  const NodeReport r = Run(spec);
  const CheckResult& c = Find(r, "ib_ports");
  EXPECT_TRUE(Has(c, Severity::kWarn, "mlx5_4/1: has 2 non-zero error counter(s)")) << Dump(r);
  bool symbol = false;
  for (const auto& f : c.findings) {
    for (const auto& e : f.evidence) {
      symbol = symbol || e.find("counters/symbol_error: 17") != std::string::npos;
    }
  }
  EXPECT_TRUE(symbol) << Dump(r);
}

TEST_F(ChecksTest, RoceWithMtu1500IsAWarning) {
  NodeSpec spec;
  spec.roce = true;
  spec.mtu = 1500;
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "mtu"), Severity::kWarn,
                  "8 RoCE interface(s) have MTU 1500: RoCE packets carry only 1024 bytes"))
      << Dump(r);
  EXPECT_EQ(r.severity(), Severity::kWarn);
}

TEST_F(ChecksTest, RoceWithoutV2GidIsCritical) {
  NodeSpec spec;
  spec.roce = true;
  spec.roce_v2_gids = false;
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kCritical, "has no RoCE v2 GID")) << Dump(r);
}

TEST_F(ChecksTest, RoceWithoutAddressHasOnlyLinkLocalGids) {
  NodeSpec spec;
  spec.roce = true;
  spec.roce_ip = false;
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "ib_ports"), Severity::kWarn, "only link-local RoCE v2 GIDs")) << Dump(r);
}

TEST_F(ChecksTest, DockerDefaultShmIsCritical) {
  NodeSpec spec;
  spec.shm_option = "size=65536k";
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "shm"), Severity::kCritical, "/dev/shm is 64 MiB")) << Dump(r);
}

TEST_F(ChecksTest, ShmBelowOneGibIsAWarning) {
  NodeSpec spec;
  spec.shm_option = "size=512m";
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "shm"), Severity::kWarn, "/dev/shm is 512 MiB")) << Dump(r);
}

TEST_F(ChecksTest, ShmWithoutSizeIsHalfOfMemory) {
  NodeSpec spec;
  spec.shm_option = "";
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "shm"), Severity::kOk, "/dev/shm is 1008 GiB")) << Dump(r);
}

TEST_F(ChecksTest, ShmOnlyInsideSmallDevIsCritical) {
  NodeSpec spec;
  spec.shm_mount = false;
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "shm"), Severity::kCritical, "/dev/shm is 64 MiB")) << Dump(r);
}

TEST_F(ChecksTest, LimitedMemlockIsAWarning) {
  NodeSpec spec;
  spec.memlock = "65536";
  const NodeReport r = Run(spec);
  EXPECT_TRUE(Has(Find(r, "memlock"), Severity::kWarn, "limited to 64 KiB")) << Dump(r);
}

TEST_F(ChecksTest, NarrowGpuLinkAndMissingDriverAreReported) {
  NodeSpec spec;
  spec.gpu0_link_width = 8;
  spec.gpu0_driver = false;
  const NodeReport r = Run(spec);
  const CheckResult& c = Find(r, "pci");
  EXPECT_TRUE(Has(c, Severity::kWarn, "GPU0 (0000:1a:00.0): runs its PCIe link at x8 of x16"))
      << Dump(r);
  EXPECT_TRUE(Has(c, Severity::kCritical, "GPU0 (0000:1a:00.0): has no kernel driver bound"))
      << Dump(r);
}

TEST_F(ChecksTest, HarmfulNcclEnvironmentIsCritical) {
  const NodeReport r = Run({}, {{"NCCL_NET_GDR_LEVEL", "0"}, {"NCCL_IB_DISABLE", "1"}});
  const CheckResult& c = Find(r, "nccl_env");
  EXPECT_TRUE(Has(c, Severity::kCritical, "NCCL_NET_GDR_LEVEL=0 switches GPUDirect RDMA off"))
      << Dump(r);
  EXPECT_TRUE(Has(c, Severity::kCritical, "NCCL_IB_DISABLE=1 turns InfiniBand/RoCE off"));
  EXPECT_EQ(r.facts.at("env.NCCL_IB_DISABLE"), "1");
}

TEST_F(ChecksTest, NcclConfIsLintedAndTheEnvironmentWins) {
  NodeSpec spec;
  spec.nccl_conf = {"# site defaults", "NCCL_P2P_DISABLE=1", "NCCL_IB_HCA=mlx5_9"};
  const NodeReport r = Run(spec, {{"NCCL_IB_HCA", "=mlx5_0,mlx5_1"}});
  const CheckResult& c = Find(r, "nccl_env");
  EXPECT_TRUE(Has(c, Severity::kCritical, "NCCL_P2P_DISABLE=1")) << Dump(r);
  bool conf_source = false;
  for (const auto& f : c.findings) {
    for (const auto& e : f.evidence)
      conf_source = conf_source || e.find("/etc/nccl.conf:2") != std::string::npos;
  }
  EXPECT_TRUE(conf_source) << Dump(r);
  EXPECT_FALSE(Has(c, Severity::kCritical, "NCCL_IB_HCA")) << Dump(r);
  EXPECT_EQ(r.facts.at("env.NCCL_IB_HCA"), "=mlx5_0,mlx5_1");
}

TEST_F(ChecksTest, NoEnvSkipsTheLint) {
  tree_ = std::make_unique<NodeTree>(TestDir("node"), NodeSpec{});
  DoctorOptions options;
  options.root = tree_->root().string();
  options.lint_env = false;
  options.env = {{"NCCL_IB_DISABLE", "1"}};
  const NodeReport r = RunDoctor(options);
  EXPECT_EQ(Find(r, "nccl_env").severity(), Severity::kInfo);
  EXPECT_EQ(r.facts.count("env.NCCL_IB_DISABLE"), 0u);
}

TEST_F(ChecksTest, ChecksAreSelectedByNameOrPrefix) {
  tree_ = std::make_unique<NodeTree>(TestDir("node"), NodeSpec{});
  DoctorOptions options;
  options.root = tree_->root().string();
  options.checks = {"nccl", "shm"};
  const NodeReport r = RunDoctor(options);
  ASSERT_EQ(r.checks.size(), 3u);
  EXPECT_EQ(r.checks[0].name, "shm");
  EXPECT_EQ(r.checks[1].name, "nccl_env");
  EXPECT_EQ(r.checks[2].name, "nccl_log");
  options.checks = {"nope"};
  EXPECT_THROW(RunDoctor(options), UsageError);
}

TEST_F(ChecksTest, EmptyRootIsSkippedNotCrashed) {
  const auto dir = TestDir("empty");
  const NodeReport r = Diagnose(dir);
  EXPECT_EQ(r.severity(), Severity::kOk) << Dump(r);
  for (const char* check : {"pci", "gpu_nic_affinity", "gpudirect", "ib_ports", "mtu", "shm",
                            "memlock", "nccl_log", "topo_file", "numa"}) {
    EXPECT_EQ(Find(r, check).severity(), Severity::kInfo) << check << "\n" << Dump(r);
  }
  std::filesystem::remove_all(dir);
}

TEST_F(ChecksTest, RootThatIsNotADirectoryIsAUsageError) {
  EXPECT_THROW(Diagnose("/nonexistent/fabricscope-root"), UsageError);
}

}  // namespace
}  // namespace fabricscope::doctor::testing
