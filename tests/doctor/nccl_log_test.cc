// NCCL_DEBUG=INFO logs, written in the formats NCCL prints, and what the doctor reads in them.
#include "doctor/nccl_log.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/fixture.h"
#include "fabricscope/error.h"

namespace fabricscope::doctor::testing {
namespace {

namespace fs = std::filesystem;

// The lines NCCL 2.18 prints for a 2-node, 16-rank job on 8 HCAs, from rank 0's process.
// `net` is what the connections go through ("IB/0/GDRDMA", "Socket/0", ...).
std::string TwoNodeLog(const std::string& net, const std::string& extra = "") {
  const std::string p = "node-a:2871:2900 [0] NCCL INFO ";
  std::string log = "node-a:2871:2871 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n";
  log += "node-a:2871:2871 [0] NCCL INFO cudaDriverVersion 12020\n";
  log += "NCCL version 2.18.5+cuda12.2\n";
  log += p + "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n";
  log += extra;
  log += p + "comm 0x55d5c4a0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n";
  for (int c = 0; c < 4; ++c) {
    log += p + fmt::format(
                   "Channel {:02d}/04 :    0   1   2   3   4   5   6   7   8   9  10  11  "
                   "12  13  14  15\n",
                   c);
  }
  log += p + "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n";
  for (int c = 0; c < 4; ++c) {
    log += p + fmt::format("Channel {:02d}/0 : 15[7] -> 0[0] [receive] via NET/{}\n", c, net);
    log += p + fmt::format("Channel {:02d}/0 : 0[0] -> 8[0] [send] via NET/{}\n", c, net);
  }
  log += p + "Connected all rings\n";
  log += p +
         "4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 4 p2p "
         "channels per peer\n";
  return log;
}

std::string IbUsing() {
  std::string line = "node-a:2871:2900 [0] NCCL INFO NET/IB : Using";
  for (int i = 0; i < 8; ++i) line += fmt::format(" [{}]mlx5_{}:1/IB", i, i);
  return line + " [RO]; OOB eth0:10.0.0.1<0>\nnode-a:2871:2900 [0] NCCL INFO Using network IB\n";
}

class NcclLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestDir("log");
    tree_ = std::make_unique<NodeTree>(dir_ / "node", NodeSpec{});
  }
  void TearDown() override {
    tree_.reset();
    fs::remove_all(dir_);
  }
  NcclLog Parse(const std::string& text) {
    std::istringstream in(text);
    return ParseNcclLog(in, "nccl.log");
  }
  // The nccl_log check of the healthy node with this log.
  CheckResult Check(const std::string& text) {
    const fs::path file = dir_ / "nccl.log";
    std::ofstream(file) << text;
    DoctorOptions options;
    options.root = tree_->root().string();
    options.nccl_log = file.string();
    options.checks = {"nccl_log"};
    report_ = RunDoctor(options);
    return Find(report_, "nccl_log");
  }
  fs::path dir_;
  std::unique_ptr<NodeTree> tree_;
  NodeReport report_;
};

TEST_F(NcclLogTest, ParsesVersionNetworkChannelsAndConnections) {
  const NcclLog log = Parse(IbUsing() + TwoNodeLog("IB/0/GDRDMA"));
  EXPECT_EQ(log.version, "2.18.5+cuda12.2");
  EXPECT_EQ(log.cuda_driver, "12020");
  EXPECT_EQ(log.network, "IB");
  ASSERT_EQ(log.ib_devices.size(), 8u);
  EXPECT_EQ(log.ib_devices[3], "[3]mlx5_3:1/IB");
  EXPECT_EQ(log.channels, 4);
  EXPECT_EQ(log.ranks, 16);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.hosts.at("node-a"), log.nccl_lines - 1);  // all but the bare version banner
  ASSERT_EQ(log.connections.size(), 9u);
  EXPECT_EQ(log.connections[0].transport, "P2P");
  const NcclConnection& c = log.connections[2];
  EXPECT_EQ(c.transport, "NET");
  EXPECT_EQ(c.network, "IB");
  EXPECT_EQ(c.direction, "send");
  EXPECT_EQ(c.from, 0);
  EXPECT_EQ(c.to, 8);
  EXPECT_TRUE(c.gdr);
  EXPECT_FALSE(c.pxn);
}

TEST_F(NcclLogTest, HealthyIbLogIsOk) {
  const CheckResult c = Check(IbUsing() + TwoNodeLog("IB/0/GDRDMA"));
  EXPECT_EQ(c.severity(), Severity::kOk) << Dump(report_);
  EXPECT_TRUE(Has(c, Severity::kOk,
                  "NCCL 2.18.5+cuda12.2, network IB, 16 ranks on 2 node(s), 4 "
                  "channels"));
  EXPECT_TRUE(Has(c, Severity::kOk, "all 8 NET/IB connection(s) use GPUDirect RDMA"));
  EXPECT_EQ(report_.facts.at("nccl.version"), "2.18.5+cuda12.2");
}

TEST_F(NcclLogTest, PxnConnectionsAreRecognized) {
  const NcclLog log = Parse(IbUsing() + TwoNodeLog("IB/0(1)/GDRDMA"));
  EXPECT_TRUE(log.connections.back().pxn);
  EXPECT_EQ(log.connections.back().net_device, 0);
  EXPECT_TRUE(Has(Check(IbUsing() + TwoNodeLog("IB/0(1)/GDRDMA")), Severity::kOk, "through PXN"));
}

TEST_F(NcclLogTest, IbWithoutGpuDirectIsCritical) {
  const std::string disabled =
      "node-a:2871:2900 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no "
      "module)\n";
  const CheckResult c = Check(IbUsing() + TwoNodeLog("IB/0", disabled));
  EXPECT_TRUE(Has(c, Severity::kCritical, "8 of 8 NET/IB connection(s) run without GPUDirect RDMA"))
      << Dump(report_);
  bool cites = false;
  for (const auto& f : c.findings) {
    for (const auto& e : f.evidence) cites = cites || e.find("(no module)") != std::string::npos;
  }
  EXPECT_TRUE(cites) << Dump(report_);
}

TEST_F(NcclLogTest, SocketFallbackIsCritical) {
  const std::string p = "node-a:2871:2900 [0] NCCL INFO ";
  const std::string head =
      p + "NET/IB : No device found.\n" + p + "NET/Socket : Using [0]eth0:10.0.0.1<0>\n" + p +
      "Using network Socket\n" + p + "NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'\n";
  const NcclLog log = Parse(head + TwoNodeLog("Socket/0"));
  EXPECT_EQ(log.network, "Socket");
  EXPECT_EQ(log.socket_devices.front(), "[0]eth0:10.0.0.1<0>");
  EXPECT_TRUE(log.gdr_disabled.empty());  // a socket's "Disabled" says nothing about HCAs
  const CheckResult c = Check(head + TwoNodeLog("Socket/0"));
  EXPECT_TRUE(Has(c, Severity::kCritical, "8 inter-node connection(s) fell back to TCP sockets"))
      << Dump(report_);
  bool no_device = false;
  for (const auto& f : c.findings) {
    for (const auto& e : f.evidence)
      no_device = no_device || e.find("No device found") != std::string::npos;
  }
  EXPECT_TRUE(no_device) << Dump(report_);
}

TEST_F(NcclLogTest, SocketNetworkWithoutConnectionLinesIsCritical) {
  const std::string p = "node-a:1:1 [0] NCCL INFO ";
  const CheckResult c = Check(p + "NET/IB : No device found.\n" + p + "Using network Socket\n");
  EXPECT_TRUE(Has(c, Severity::kCritical, "NCCL chose TCP sockets")) << Dump(report_);
}

TEST_F(NcclLogTest, GpuDirectTcpxAndFasTrakPluginsAreOk) {
  const std::string p = "a3-node:77:88 [0] NCCL INFO ";
  CheckResult c = Check(p + "Using network GPUDirectTCPX\n" + TwoNodeLog("GPUDirectTCPX/1"));
  EXPECT_TRUE(Has(c, Severity::kOk, "8 inter-node connection(s) through the GPUDirectTCPX network"))
      << Dump(report_);
  EXPECT_EQ(c.severity(), Severity::kOk);
  c = Check(p + "Using network FasTrak\n" + TwoNodeLog("FasTrak/3"));
  EXPECT_TRUE(Has(c, Severity::kOk, "through the FasTrak network plugin")) << Dump(report_);
  // A plugin whose name has a space.
  const NcclLog log = Parse(TwoNodeLog("AWS Libfabric/0/GDRDMA"));
  EXPECT_EQ(log.connections.back().network, "AWS Libfabric");
  EXPECT_TRUE(log.connections.back().gdr);
}

TEST_F(NcclLogTest, DistanceDisabledPairsAndWarningsAreReported) {
  const std::string extra =
      "node-a:2871:2900 [1] NCCL INFO GPU Direct RDMA Disabled for GPU 1 / HCA 4 (distance 6 > "
      "5)\nnode-a:2871:2900 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 4 "
      "<= 5), read 1 mode Default\nnode-b:100:200 [3] NCCL WARN NET/IB : Got completion from "
      "peer 10.0.0.2<45678> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n";
  const CheckResult c = Check(IbUsing() + TwoNodeLog("IB/0/GDRDMA", extra));
  EXPECT_TRUE(Has(c, Severity::kWarn, "turned GPUDirect RDMA off for 1 GPU/HCA pair"))
      << Dump(report_);
  // The WARN line is diagnosed as check diagnoses it (docs/failures.md), as the log's nodes'.
  EXPECT_TRUE(Has(c, Severity::kCritical,
                  "the InfiniBand/RoCE peer stopped answering (transport retry counter exceeded)"))
      << Dump(report_);
  const auto cause = std::find_if(c.findings.begin(), c.findings.end(), [](const Finding& f) {
    return f.severity == Severity::kCritical;
  });
  ASSERT_NE(cause, c.findings.end());
  EXPECT_EQ(cause->where.rfind("the log's nodes (", 0), 0u) << cause->where;
  // Nothing of a failed log is OK.
  EXPECT_FALSE(Has(c, Severity::kOk, ""));
  const NcclLog log = Parse(IbUsing() + TwoNodeLog("IB/0/GDRDMA", extra));
  EXPECT_EQ(log.gdr_enabled.size(), 1u);
  EXPECT_EQ(log.hosts.at("node-b"), 1);
}

TEST_F(NcclLogTest, OldFormatsAndLauncherPrefixes) {
  const NcclLog log = Parse(
      "[1,0]<stdout>:dgx1:5021:5060 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB "
      "ib0:10.1.1.1<0>\n"
      "NCCL version 2.4.8+cuda10.1\n"
      "0: dgx1:5021:5060 [0] NCCL INFO Ring 00 : 0 -> 8 [send] via NET/IB/0/GDRDMA\n"
      "0: dgx1:5021:5060 [0] NCCL INFO Ring 00 : 8 -> 0 [receive] via NET/IB/0\n");
  EXPECT_EQ(log.version, "2.4.8+cuda10.1");
  EXPECT_EQ(log.hosts.at("dgx1"), 3);
  ASSERT_EQ(log.connections.size(), 2u);
  EXPECT_TRUE(log.connections[0].gdr);
  EXPECT_FALSE(log.connections[1].gdr);
  EXPECT_EQ(log.connections[1].direction, "receive");
}

TEST_F(NcclLogTest, MultiNodeLogWithoutConnectionsWarns) {
  const CheckResult c =
      Check("n:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0\n");
  EXPECT_TRUE(Has(c, Severity::kWarn, "shows no network connection")) << Dump(report_);
}

TEST_F(NcclLogTest, FilesThatAreNotNcclLogsAreRefused) {
  try {
    Parse("hello\nthis is not it\n");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no NCCL line"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NCCL_DEBUG=INFO"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ParseNcclLog((dir_ / "missing.log").string()), UsageError);
  EXPECT_THROW(ParseNcclLog(dir_.string()), UsageError);  // a directory
}

}  // namespace
}  // namespace fabricscope::doctor::testing

namespace fabricscope::doctor::testing {
namespace {

// `format` (a printf format of NCCL's) with numbers for its numeric conversions and `words`,
// in order, for its %s.
std::string Instantiate(const std::string& format, std::vector<std::string> words) {
  std::string out;
  size_t word = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    size_t j = i + 1;
    while (j < format.size() &&
           std::string_view("0123456789.lzh").find(format[j]) != std::string_view::npos) {
      ++j;
    }
    if (j >= format.size()) break;
    if (format[j] == 's') {
      out += word < words.size() ? words[word] : "IB";
      ++word;
    } else if (format[j] == '%') {
      out += '%';
    } else if (format[j] == 'p') {
      out += "0x1";
    } else {
      out += "1";
    }
    i = j;
  }
  return out;
}

// Every format string the log reader cites is the one its release prints at that line
// (data/nccl/log-strings, generated from NVIDIA/nccl), and a line of exactly that form is
// the pattern's: its marker is in it.
TEST(NcclLogCitations, EachPatternReadsTheLineItsReleasePrints) {
  ASSERT_GE(NcclLogCitations().size(), 20u);
  for (const NcclLogCitation& c : NcclLogCitations()) {
    const std::string table = std::string(FABRICSCOPE_SOURCE_DIR) + "/data/nccl/log-strings/" +
                              std::string(c.tag) + ".json";
    std::ifstream in(table);
    ASSERT_TRUE(in) << table;
    const nlohmann::json doc = nlohmann::json::parse(in);
    std::string format;
    for (const auto& s : doc["strings"]) {
      if (s["file"] == c.file && s["line"] == c.line && s["level"] == "INFO") format = s["format"];
    }
    ASSERT_FALSE(format.empty()) << c.tag << " " << c.file << ":" << c.line << " prints no INFO";
    const std::string message = Instantiate(format, {"IB", "Disabled", "mlx5_0"});
    EXPECT_NE(message.find(c.marker), std::string::npos)
        << "'" << c.marker << "' is not in " << c.tag << "'s " << message;
  }
}

// NCCL 2.30's forms: the connection line's "/GDRDMA(PCI)/Shared", the per-HCA GDR line, and
// the HINT line that names GPU Direct RDMA without saying its state.
TEST(NcclLogCitations, Nccl230LinesAreRead) {
  std::istringstream in(
      "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n"
      "h:1:1 [0] NCCL INFO HINT: In many cases this error occurs when ACS is enabled which would "
      "break GPU Direct RDMA protocol.\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA(PCI)/Shared\n"
      "h:1:1 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IB/1\n");
  const NcclLog log = ParseNcclLog(in, "log");
  EXPECT_EQ(log.gdr_enabled.size(), 1u);
  EXPECT_EQ(log.gdr_disabled.size(), 0u);
  ASSERT_EQ(log.connections.size(), 2u);
  EXPECT_TRUE(log.connections[0].gdr);
  EXPECT_EQ(log.connections[0].net_device, 0);
  EXPECT_FALSE(log.connections[1].gdr);
}

}  // namespace
}  // namespace fabricscope::doctor::testing
