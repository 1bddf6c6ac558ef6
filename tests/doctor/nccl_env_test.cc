// The NCCL variable lint against a node tree: every rule, and names NCCL does not know.
#include "doctor/nccl_env.h"

#include <gtest/gtest.h>

#include "doctor/fixture.h"

namespace fabricscope::doctor::testing {
namespace {

class NcclEnvTest : public ::testing::Test {
 protected:
  // The nccl_env findings of the healthy InfiniBand node (or RoCE) with `env` set.
  CheckResult Lint(const std::map<std::string, std::string>& env, bool roce = false,
                   const std::string& platform = "") {
    if (!tree_ || roce != roce_) {
      NodeSpec spec;
      spec.roce = roce;
      roce_ = roce;
      tree_.reset();  // its directory goes before the new tree takes the same path
      tree_ = std::make_unique<NodeTree>(TestDir("node"), spec);
    }
    DoctorOptions options;
    options.root = tree_->root().string();
    options.env = env;
    options.checks = {"nccl_env"};
    options.platform = platform;
    report_ = RunDoctor(options);
    return Find(report_, "nccl_env");
  }
  std::unique_ptr<NodeTree> tree_;
  bool roce_ = false;
  NodeReport report_;
};

TEST_F(NcclEnvTest, HarmlessSettingsAreOk) {
  const CheckResult c = Lint({{"NCCL_DEBUG", "INFO"},
                              {"NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"},
                              {"NCCL_SOCKET_IFNAME", "=eno1"},
                              {"NCCL_NET_GDR_LEVEL", "PHB"},
                              {"NCCL_SOCKET_NTHREADS", "4"},
                              {"NCCL_NSOCKS_PERTHREAD", "8"},
                              {"NCCL_TESTS_SPLIT_MASK", "0x7"},
                              {"NCCL_GPUDIRECTTCPX_FORCE_ACK", "0"}});
  EXPECT_EQ(c.severity(), Severity::kOk) << Dump(report_);
  EXPECT_TRUE(Has(c, Severity::kOk, "8 NCCL variable(s) set, none known to cost bandwidth"));
}

TEST_F(NcclEnvTest, GpuDirectOffIsCritical) {
  EXPECT_TRUE(Has(Lint({{"NCCL_NET_GDR_LEVEL", "LOC"}}), Severity::kCritical,
                  "switches GPUDirect RDMA off"));
  EXPECT_TRUE(Has(Lint({{"NCCL_NET_GDR_LEVEL", "FAR"}}), Severity::kWarn, "not a level"));
  // The old name still works, and gets both findings.
  const CheckResult c = Lint({{"NCCL_IB_GDR_LEVEL", "0"}});
  EXPECT_TRUE(Has(c, Severity::kCritical, "switches GPUDirect RDMA off"));
  EXPECT_TRUE(Has(c, Severity::kWarn, "obsolete: current versions read NCCL_NET_GDR_LEVEL"));
}

TEST_F(NcclEnvTest, TransportsSwitchedOff) {
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_DISABLE", "1"}}), Severity::kCritical, "sockets"));
  EXPECT_EQ(Lint({{"NCCL_IB_DISABLE", "0"}}).severity(), Severity::kOk);
  EXPECT_TRUE(Has(Lint({{"NCCL_P2P_DISABLE", "1"}}), Severity::kCritical, "peer-to-peer"));
  EXPECT_TRUE(Has(Lint({{"NCCL_P2P_LEVEL", "LOC"}}), Severity::kCritical, "not even over NVLink"));
  EXPECT_TRUE(Has(Lint({{"NCCL_SHM_DISABLE", "1"}}), Severity::kWarn, "shared memory"));
  EXPECT_TRUE(Has(Lint({{"NCCL_NET", "Socket"}}), Severity::kCritical, "forces TCP sockets"));
  EXPECT_TRUE(Has(Lint({{"NCCL_NET_GDR_READ", "0"}}), Severity::kWarn, "host memory"));
}

TEST_F(NcclEnvTest, ForcedAlgorithmsAndProtocolsWarn) {
  const CheckResult c = Lint({{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
  EXPECT_TRUE(Has(c, Severity::kWarn, "NCCL_ALGO=Ring forces"));
  EXPECT_TRUE(Has(c, Severity::kWarn, "NCCL_PROTO=Simple forces"));
}

TEST_F(NcclEnvTest, SocketThreadsTimesSocketsAbove64) {
  EXPECT_TRUE(Has(Lint({{"NCCL_SOCKET_NTHREADS", "8"}, {"NCCL_NSOCKS_PERTHREAD", "16"}}),
                  Severity::kWarn, "= 128 exceeds NCCL's limit of 64"));
  EXPECT_TRUE(Has(Lint({{"NCCL_NSOCKS_PERTHREAD", "65"}}), Severity::kWarn, "= 65 exceeds"));
  EXPECT_TRUE(Has(Lint({{"NCCL_SOCKET_NTHREADS", "32"}}), Severity::kWarn, "outside 1..16"));
}

TEST_F(NcclEnvTest, IbHcaNamingMissingDevices) {
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_HCA", "mlx4"}}), Severity::kCritical, "selects no RDMA device"));
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_HCA", "=mlx5_0,mlx5_12"}}), Severity::kWarn,
                  "names devices this node does not have: mlx5_12"));
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_HCA", "^mlx5"}}), Severity::kCritical, "selects no RDMA device"));
  EXPECT_EQ(Lint({{"NCCL_IB_HCA", "^=mlx5_7"}}).severity(), Severity::kOk);
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_HCA", "=mlx5_0:2"}}), Severity::kWarn, "has no such port"));
  // A prefix matches all eight.
  EXPECT_EQ(Lint({{"NCCL_IB_HCA", "mlx5"}}).severity(), Severity::kOk);
}

TEST_F(NcclEnvTest, SocketIfnameNamingMissingInterfaces) {
  EXPECT_TRUE(Has(Lint({{"NCCL_SOCKET_IFNAME", "eth"}}), Severity::kCritical,
                  "selects no network interface"));
  EXPECT_TRUE(Has(Lint({{"NCCL_SOCKET_IFNAME", "=eno1,eth0"}}), Severity::kWarn,
                  "names interfaces this node does not have: eth0"));
  EXPECT_TRUE(
      Has(Lint({{"NCCL_SOCKET_IFNAME", "lo"}}), Severity::kWarn, "other nodes cannot reach"));
  EXPECT_EQ(Lint({{"NCCL_SOCKET_IFNAME", "^lo,docker"}}).severity(), Severity::kOk);
}

TEST_F(NcclEnvTest, CrossNicWarns) {
  EXPECT_TRUE(Has(Lint({{"NCCL_CROSS_NIC", "1"}}), Severity::kWarn, "rail-optimized"));
  EXPECT_EQ(Lint({{"NCCL_CROSS_NIC", "0"}}).severity(), Severity::kOk);
}

TEST_F(NcclEnvTest, GidIndexOnRoce) {
  EXPECT_EQ(Lint({{"NCCL_IB_GID_INDEX", "3"}}, true).severity(), Severity::kOk);
  EXPECT_TRUE(
      Has(Lint({{"NCCL_IB_GID_INDEX", "2"}}, true), Severity::kWarn, "IB/RoCE v1 GID on mlx5_0/1"));
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_GID_INDEX", "6"}}, true), Severity::kCritical,
                  "has no GID at that index"));
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_GID_INDEX", "x"}}, true), Severity::kWarn, "not a number"));
  // InfiniBand ports ignore it.
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_GID_INDEX", "3"}}), Severity::kOk, "InfiniBand ignores it"));
}

TEST_F(NcclEnvTest, UnknownNamesAreLikelyTypos) {
  const CheckResult c = Lint({{"NCCL_IB_HCAS", "mlx5"},
                              {"NCCL_SOCKET_IF_NAME", "eno1"},
                              {"NCCL_COMPLETELY_MADE_UP_THING", "1"}});
  EXPECT_TRUE(Has(c, Severity::kWarn,
                  "NCCL_IB_HCAS is not a variable NCCL reads: did you mean "
                  "NCCL_IB_HCA?"));
  EXPECT_TRUE(Has(c, Severity::kWarn, "did you mean NCCL_SOCKET_IFNAME?"));
  EXPECT_TRUE(
      Has(c, Severity::kWarn, "NCCL_COMPLETELY_MADE_UP_THING is not a variable NCCL reads"));
  EXPECT_FALSE(Has(c, Severity::kWarn,
                   "NCCL_COMPLETELY_MADE_UP_THING is not a variable NCCL "
                   "reads: did you mean"));
}

TEST_F(NcclEnvTest, ObsoleteAndPyTorchNames) {
  EXPECT_TRUE(Has(Lint({{"NCCL_IB_CUDA_SUPPORT", "1"}}), Severity::kWarn, "NCCL_NET_GDR_LEVEL"));
  // NCCL 2.30.7 still reads NCCL_MAX_NRINGS (an alias of NCCL_MAX_NCHANNELS): not obsolete.
  EXPECT_EQ(Lint({{"NCCL_MAX_NRINGS", "8"}}).severity(), Severity::kOk);
  EXPECT_TRUE(Has(Lint({{"NCCL_ASYNC_ERROR_HANDLING", "1"}}), Severity::kWarn,
                  "TORCH_NCCL_ASYNC_ERROR_HANDLING"));
}

TEST_F(NcclEnvTest, TopoFileThatDoesNotExist) {
  const CheckResult c = Lint({{"NCCL_TOPO_FILE", "/opt/topo/missing.xml"}});
  EXPECT_TRUE(Has(c, Severity::kWarn, "names a file that does not exist"));
  DoctorOptions options;
  options.root = tree_->root().string();
  options.env = {{"NCCL_TOPO_FILE", "/opt/topo/missing.xml"}};
  options.checks = {"topo_file"};
  const NodeReport r = RunDoctor(options);
  EXPECT_TRUE(Has(Find(r, "topo_file"), Severity::kInfo, "does not exist")) << Dump(r);
}

// Issue 37: every variable NCCL 2.30.7 or its bundled plugins read is known (the generated
// table, data/nccl/env-variables.json), none gets "not a variable" or rename advice that
// would change what it does; a typo of one is still caught.
TEST_F(NcclEnvTest, EveryVariableTheSourceReadsIsKnown) {
  const GeneratedVariables& table = NcclSourceVariables();
  ASSERT_EQ(table.newest, "v2.30.7-1");
  std::map<std::string, std::string> env;
  for (const GeneratedVariable& v : table.variables) {
    if (v.last == table.newest) env[v.name] = "1";
  }
  ASSERT_GE(env.size(), 250u);
  Lint(env);
  for (const Finding& f : Find(report_, "nccl_env").findings) {
    EXPECT_EQ(f.what.find("is not a variable NCCL reads"), std::string::npos) << f.what;
    EXPECT_EQ(f.what.find("did you mean"), std::string::npos) << f.what;
  }
  const CheckResult c = Lint({{"NCCL_RMA_DISABLE", "1"},
                              {"NCCL_PAT_ENABLE", "0"},
                              {"NCCL_SYM_CTAS", "4"},
                              {"NCCL_INSPECTOR_ENABLE", "1"}});
  EXPECT_EQ(c.severity(), Severity::kOk) << Dump(report_);
  EXPECT_TRUE(Has(Lint({{"NCCL_PAT_ENABEL", "1"}}), Severity::kWarn,
                  "NCCL_PAT_ENABEL is not a variable NCCL reads: did you mean NCCL_PAT_ENABLE?"));
}

TEST_F(NcclEnvTest, RemovedVariablesNameTheReleasesThatReadThem) {
  EXPECT_TRUE(Has(Lint({{"NCCL_AGG_CHANNEL_SIZE", "4"}}), Severity::kWarn,
                  "NCCL_AGG_CHANNEL_SIZE is no longer read: NCCL read it from v2.18.6-1 to "
                  "v2.19.4-1"));
}

TEST_F(NcclEnvTest, LevelsAcceptWhatNcclsParserAccepts) {
  for (const char* level : {"NVB", "C2C", "P2C", "PXN", "SYS", "3"}) {
    EXPECT_EQ(Lint({{"NCCL_NET_GDR_LEVEL", level}}).severity(), Severity::kOk) << level;
    EXPECT_EQ(Lint({{"NCCL_P2P_LEVEL", level}}).severity(), Severity::kOk) << level;
  }
  EXPECT_TRUE(Has(Lint({{"NCCL_P2P_LEVEL", "NVLINK"}}), Severity::kWarn, "not a level"));
}

TEST_F(NcclEnvTest, GidIndexMinusOneIsNcclsOwnChoice) {
  const CheckResult c = Lint({{"NCCL_IB_GID_INDEX", "-1"}}, true);
  EXPECT_EQ(c.severity(), Severity::kOk) << Dump(report_);
  EXPECT_TRUE(Has(c, Severity::kOk, "NCCL selects the GID itself"));
}

// The Kubernetes recipe this project started from (shared/reference/seeds) on an AMD node:
// RCCL's own variables and the ROCm runtime's are known from their sources, not "unknown".
TEST_F(NcclEnvTest, RcclAndRocmVariablesAreLintedOnAmd) {
  const std::string amd = "amd-mi325x";
  EXPECT_EQ(Lint({{"RCCL_MSCCL_ENABLE", "1"},
                  {"HSA_FORCE_FINE_GRAIN_PCIE", "1"},
                  {"HSA_ENABLE_SDMA", "0"},
                  {"NCCL_MIN_NCHANNELS", "32"}},
                 false, amd)
                .severity(),
            Severity::kOk)
      << Dump(report_);
  // RCCL rocm-6.0.2 .. rocm-6.2.2 reads no RCCL_KERNEL_DEBUG.
  EXPECT_TRUE(Has(Lint({{"RCCL_KERNEL_DEBUG", "0"}}, false, amd), Severity::kWarn,
                  "RCCL_KERNEL_DEBUG is not a variable RCCL reads (ROCm/rccl rocm-6.0.2 .. "
                  "rocm-6.2.2)"));
  EXPECT_TRUE(Has(Lint({{"RCCL_MSCCL_ENABEL", "1"}}, false, amd), Severity::kWarn,
                  "did you mean RCCL_MSCCL_ENABLE?"));
  // A name RCCL drops: NCCL reads it, RCCL does not.
  EXPECT_TRUE(Has(Lint({{"NCCL_GIN_ENABLE", "1"}}, false, amd), Severity::kWarn,
                  "NCCL_GIN_ENABLE is read by NCCL"));
  // HSA_* outside ROCR-Runtime's table (the thunk reads some): not checked, not unknown.
  const CheckResult thunk = Lint({{"HSA_OVERRIDE_GFX_VERSION", "9.4.2"}}, false, amd);
  EXPECT_LT(thunk.severity(), Severity::kWarn) << Dump(report_);
  EXPECT_TRUE(Has(thunk, Severity::kInfo, "HSA_OVERRIDE_GFX_VERSION: not checked"));
  // RCCL's variables on an NVIDIA platform do nothing.
  EXPECT_TRUE(Has(Lint({{"RCCL_MSCCL_ENABLE", "1"}}, false, "dgx-h100"), Severity::kWarn,
                  "which dgx-h100 does not use"));
}

// GCP's plugins: every variable the TCPX plugin reads is fine on a TCPX platform (and where
// the platform is unknown); TCPXO's on a TCPX node is named as having no effect.
TEST_F(NcclEnvTest, TcpxAndTcpxoVariablesFollowThePlatform) {
  std::map<std::string, std::string> env;
  for (const GeneratedVariable& v : SourceVariables("tcpx").variables) env[v.name] = "1";
  ASSERT_GE(env.size(), 50u);
  for (const std::string& platform : {std::string("gcp-a3-highgpu-8g"), std::string()}) {
    Lint(env, false, platform);
    for (const Finding& f : Find(report_, "nccl_env").findings) {
      EXPECT_EQ(f.what.find("is not a variable"), std::string::npos) << platform << f.what;
      EXPECT_EQ(f.what.find("did you mean"), std::string::npos) << platform << f.what;
      EXPECT_EQ(f.what.find("does not use"), std::string::npos) << platform << f.what;
    }
  }
  EXPECT_EQ(Lint({{"NCCL_FASTRAK_NUM_FLOWS", "2"}}, false, "gcp-a3-megagpu-8g").severity(),
            Severity::kOk);
  EXPECT_TRUE(Has(Lint({{"NCCL_FASTRAK_NUM_FLOWS", "2"}}, false, "gcp-a3-highgpu-8g"),
                  Severity::kWarn, "which gcp-a3-highgpu-8g does not use"));
  EXPECT_TRUE(Has(Lint({{"NCCL_FASTRAK_NUM_FLOW", "2"}}), Severity::kWarn,
                  "did you mean NCCL_FASTRAK_NUM_FLOWS?"));
  // GCP's own profile exports it; the plugin's source never reads it.
  EXPECT_TRUE(Has(Lint({{"NCCL_FASTRAK_USE_SNAP", "1"}}, false, "gcp-a3-megagpu-8g"),
                  Severity::kInfo, "own profile script"));
}

// aws-ofi-nccl: its parameters, the ones it removed, the FI_* it sets for libfabric.
TEST_F(NcclEnvTest, AwsOfiNcclVariablesAreLintedOnEfa) {
  const std::string efa = "aws-p5";
  EXPECT_EQ(Lint({{"OFI_NCCL_PROTOCOL", "RDMA"}, {"FI_EFA_FORK_SAFE", "1"}, {"FI_PROVIDER", "efa"}},
                 false, efa)
                .severity(),
            Severity::kOk)
      << Dump(report_);
  EXPECT_TRUE(Has(Lint({{"OFI_NCCL_RDMA_MIN_POSTED_BOUNCE_BUFFERS", "64"}}, false, efa),
                  Severity::kWarn, "is removed in the aws-ofi-nccl network plugin"));
  // libfabric's own variables: not checked.
  EXPECT_TRUE(Has(Lint({{"FI_EFA_USE_DEVICE_RDMA", "1"}}, false, efa), Severity::kInfo,
                  "FI_EFA_USE_DEVICE_RDMA: not checked"));
  // OFI_NCCL_CM_SIZE is one letter from OFI_NCCL_CQ_SIZE, but CM is a word of the plugin's
  // (OFI_NCCL_CM_NUM_RX_BUFFERS): another setting, not a typo, so no suggestion.
  const CheckResult cm = Lint({{"OFI_NCCL_CM_SIZE", "1"}}, false, efa);
  EXPECT_TRUE(Has(cm, Severity::kWarn, "OFI_NCCL_CM_SIZE is not a variable the aws-ofi-nccl"));
  for (const Finding& f : Find(report_, "nccl_env").findings) {
    EXPECT_EQ(f.what.find("did you mean"), std::string::npos) << f.what;
  }
  EXPECT_TRUE(Has(Lint({{"OFI_NCCL_CQ_SIZ", "1"}}, false, efa), Severity::kWarn,
                  "did you mean OFI_NCCL_CQ_SIZE?"));
}

TEST_F(NcclEnvTest, VariableTableIsSortedAndUnique) {
  const auto& v = NcclVariables();
  for (size_t i = 1; i < v.size(); ++i) EXPECT_LT(v[i - 1].name, v[i].name);
  EXPECT_EQ(ClosestVariable("NCCL_ALOG"), "NCCL_ALGO");
  EXPECT_EQ(ClosestVariable("SOMETHING_ELSE_ENTIRELY_DIFFERENT"), "");
  // Three edits away is another variable, not a typo of it.
  EXPECT_EQ(ClosestVariable("NCCL_XYZ_DISABLE"), "");
}

}  // namespace
}  // namespace fabricscope::doctor::testing
