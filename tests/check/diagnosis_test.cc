// check on what users paste: the corpus of public reports (tests/check/data/reports, each
// with the thread and the post that established its cause) must have its cause named, healthy
// runs must stay OK, and no paste that holds a row, a trailer or an NCCL line is refused; and
// the diagnosis's own rules on small pastes: a harmless WARN is a note, evidence decides
// between causes, and undecided causes are ranked with the check that tells them apart.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/in_process.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::Outcome;

const fs::path kReports = fs::path(FABRICSCOPE_SOURCE_DIR) / "tests/check/data/reports";

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One report of the corpus, as its manifest gives it.
struct Report {
  json entry;
  std::string Name() const { return entry["file"].get<std::string>(); }
};

std::vector<Report> Corpus() {
  std::vector<Report> out;
  for (const auto& file : fs::directory_iterator(kReports)) {
    const std::string name = file.path().filename().string();
    if (!name.starts_with("index-") || file.path().extension() != ".json") continue;
    for (const json& e : json::parse(Slurp(file.path()))) out.push_back({e});
  }
  std::sort(out.begin(), out.end(),
            [](const Report& a, const Report& b) { return a.Name() < b.Name(); });
  return out;
}

// `check --format json [flags] FILE` in this process.
Outcome CheckReport(const Report& r, json& doc) {
  std::vector<std::string> args = {"check", "--format", "json"};
  for (const json& f : r.entry["flags"]) args.push_back(f.get<std::string>());
  args.push_back((kReports / r.Name()).string());
  Outcome o = test::RunInProcess(args);
  doc = o.out.empty() ? json() : json::parse(o.out, nullptr, false);
  return o;
}

std::string NamedCause(const json& doc) {
  if (!doc.is_object()) return "";
  for (const json& d : doc["diagnoses"]) {
    if (!d["cause"].get<std::string>().empty()) return d["cause"];
  }
  return "";
}

class CorpusTest : public testing::TestWithParam<Report> {};

// Each report: never refused, never OK when it failed, never CRITICAL when healthy; its
// confirmed cause named unless the manifest records why the paste cannot tell (known_miss),
// and a known miss that is now named must lose that mark.
TEST_P(CorpusTest, NamesTheConfirmedCause) {
  const Report& r = GetParam();
  json doc;
  const Outcome o = CheckReport(r, doc);
  ASSERT_NE(o.exit_code, 2) << r.Name() << " was refused:\n" << o.err;
  ASSERT_TRUE(doc.is_object()) << o.out << o.err;
  const std::string expected = r.entry["cause"];
  const std::string verdict = doc["verdict"];
  const bool known_miss = r.entry.contains("known_miss");
  if (expected == "healthy") {
    EXPECT_NE(verdict, "CRITICAL") << r.Name() << ": a healthy run called CRITICAL\n" << o.out;
    if (!known_miss) {
      EXPECT_EQ(verdict, "OK") << r.Name() << "\n" << o.out;
    } else if (verdict == "OK") {
      ADD_FAILURE() << r.Name() << " is OK now: drop known_miss";
    }
    return;
  }
  EXPECT_NE(verdict, "OK") << r.Name() << ": a failed or slow run called OK\n" << o.out;
  const std::string named = NamedCause(doc);
  if (known_miss) {
    EXPECT_NE(named, expected) << r.Name() << " now names its cause: drop known_miss";
    return;
  }
  EXPECT_EQ(named, expected) << r.Name() << " (" << r.entry["thread"] << ")\n" << o.out;
}

INSTANTIATE_TEST_SUITE_P(Reports, CorpusTest, testing::ValuesIn(Corpus()),
                         [](const testing::TestParamInfo<Report>& param) {
                           std::string name = param.param.Name();
                           name = name.substr(0, name.rfind('.'));
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(Corpus, HoldsFortyReportsOfEnoughCausesAndEightHealthyRuns) {
  const std::vector<Report> corpus = Corpus();
  size_t healthy = 0;
  size_t named = 0;
  std::set<std::string> causes;
  for (const Report& r : corpus) {
    EXPECT_TRUE(fs::exists(kReports / r.Name())) << r.Name();
    EXPECT_TRUE(r.entry.contains("thread") && r.entry.contains("cause_post")) << r.Name();
    if (r.entry["cause"] == "healthy") {
      ++healthy;
    } else {
      causes.insert(r.entry["cause"].get<std::string>());
    }
    if (!r.entry.contains("known_miss")) ++named;
  }
  EXPECT_GE(corpus.size(), 40u);
  EXPECT_GE(healthy, 8u);
  EXPECT_GE(causes.size(), 18u);
  // A ratchet on the count named (each CorpusTest holds its own report too): held-out sets,
  // added as they come and unseen by the rules, lower the share, never the count. The share
  // and the first-sight figures of each held-out set are in docs/failures.md.
  EXPECT_GE(named, 84u);
}

// A paste written to a temporary file and checked.
class PasteTest : public testing::Test {
 protected:
  Outcome Check(const std::string& text, const std::vector<std::string>& flags = {}) {
    const fs::path path =
        fs::temp_directory_path() / ("fabricscope-paste-" + std::to_string(::getpid()) + ".log");
    std::ofstream(path) << text;
    std::vector<std::string> args = {"check"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(path.string());
    Outcome o = test::RunInProcess(args);
    fs::remove(path);
    return o;
  }
};

const char kHealthyTable[] =
    "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
    "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
    "#\n# Using devices\n"
    "#  Rank  0 Group  0 Pid   6899 on nodea device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid   6900 on nodeb device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
    "nodea:6899:6899 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal "
    "net plugin.\n"
    "nodea:6899:6899 [0] NCCL WARN NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.\n"
    "#\n"
    "#                                                              out-of-place                "
    "       in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    " (us)  (GB/s)  (GB/s)       \n"
    "  1073741824     268435456     float     sum      -1    50000   21.47   21.47      0    "
    "50000   21.47   21.47      0\n"
    "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 21.47\n#\n";

TEST_F(PasteTest, AHarmlessWarnIsANoteAndDoesNotFailTheRun) {
  const Outcome o = Check(kHealthyTable);
  EXPECT_EQ(o.out.find("the run reported"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("harmless here"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("nccl-collnet-symbol"), std::string::npos) << o.out;
}

TEST_F(PasteTest, TheLineThatExplainsWinsOverTheFirstWarn) {
  const Outcome o = Check(
      "host:1:1 [0] NCCL WARN NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.\n"
      "host:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.0.2<4000> "
      "failed : Connection refused\n"
      "host: Test NCCL failure common.cu:1005 'unhandled system error (run with "
      "NCCL_DEBUG=INFO for details) / '\n");
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("cause bootstrap_unreachable"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("decided by: nccl-socket-connect; Connection refused"), std::string::npos)
      << o.out;
}

TEST_F(PasteTest, EvidenceFromTheSameLogDecidesBetweenCauses) {
  const std::string line =
      "host:1:1 [0] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n";
  EXPECT_NE(Check(line).out.find("cause memlock_limit"), std::string::npos);
  const std::string bad_address =
      "host:1:1 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address\n";
  EXPECT_NE(Check(bad_address).out.find("cause gdr_unavailable"), std::string::npos);
}

TEST_F(PasteTest, UndecidedCausesAreRankedWithTheCheckThatTells) {
  const Outcome o = Check(
      "host: Test NCCL failure common.cu:1005 'unhandled system error (run with "
      "NCCL_DEBUG=INFO for details) / '\n");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("most likely cause (not decided)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("INCONCLUSIVE"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("also possible"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("to tell: "), std::string::npos) << o.out;
}

TEST_F(PasteTest, RanksThatRanAloneAreNamed) {
  const std::string header =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n";
  const Outcome o = Check("mpirun -np 2 -H a,b ./all_reduce_perf -b 8 -e 128\n" + header + header +
                          "# Avg bus bandwidth    : 0\n# Avg bus bandwidth    : 0\n");
  EXPECT_NE(o.out.find("cause no_mpi_build"), std::string::npos) << o.out << o.err;
}

TEST_F(PasteTest, AnAssignmentAfterTheCommandWasNeverSeen) {
  const Outcome o = Check("$ ./build/all_reduce_perf -b 8 -e 1G -g 8 NCCL_DEBUG=INFO\n" +
                          std::string(kHealthyTable));
  EXPECT_NE(o.out.find("cause late_env"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("NCCL_DEBUG=INFO"), std::string::npos) << o.out;
}

TEST_F(PasteTest, APureNcclLogIsReadNotRefused) {
  const Outcome o = Check(
      "a:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
      "a:1:1 [0] NCCL INFO Using network Socket\n"
      "b:2:2 [0] NCCL INFO Using network Socket\n",
      {"--platform", "dgx-h100"});
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;  // a WARN: slow, not failed
  EXPECT_NE(o.out.find("cause socket_fallback"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("no nccl-tests table in it"), std::string::npos) << o.err;
}

// A header and no rows: killed at Slurm's time limit it hung; with nothing after it, the paste
// may only be cut, and that comes first among the candidates.
TEST_F(PasteTest, AHangIsToldApartFromACutLog) {
  const std::string header =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid   1 on nodea device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid   2 on nodeb device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
      "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong "
      "    time   algbw   busbw #wrong\n";
  const Outcome killed = Check(header +
                               "slurmstepd: error: *** JOB 77 ON nodea CANCELLED AT "
                               "2026-12-01T10:00:00 DUE TO TIME LIMIT ***\n");
  EXPECT_NE(killed.out.find("cause run_hung"), std::string::npos) << killed.out;
  const Outcome cut = Check(header);
  EXPECT_NE(cut.out.find("most likely cause (not decided)"), std::string::npos) << cut.out;
  EXPECT_NE(cut.out.find("the log ends after the header"), std::string::npos) << cut.out;
}

// NCCL's nranks wins over the table's guess (issue 36 item 6): a device list cut to its first
// line, with rows whose algbw is too small for busbw/algbw to tell the rank count.
TEST_F(PasteTest, NcclsRankCountWinsOverTheTablesGuess) {
  const std::string log =
      "#  Rank  0 Group  0 Pid      1 on          a device  0 [0000:04:00] NVIDIA H100 80GB "
      "HBM3\n"
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE\n"
      "b:2:2 [0] NCCL INFO comm 0x2 rank 8 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong "
      "    time   algbw   busbw #wrong\n"
      "  1073741824     268435456     float     sum      -1  214748.4    5.00    9.38      0 "
      " 214748.4    5.00    9.38      0\n";
  const Outcome o = Check(log, {"--platform", "dgx-h100", "--format", "json"});
  const json doc = json::parse(o.out);
  ASSERT_EQ(doc["tests"].size(), 1u) << o.out;
  EXPECT_EQ(doc["tests"][0]["ranks"], 16) << o.out;
}

TEST_F(PasteTest, APasteWithNothingToJudgeIsRefused) {
  const Outcome o = Check("hello\nworld\n");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("no benchmark results found"), std::string::npos) << o.err;
}

TEST_F(PasteTest, OnePlatformsTransportDecidesWhatASocketFallbackMeans) {
  const std::string log =
      "a:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal "
      "implementation\n"
      "a:1:1 [0] NCCL INFO Using network Socket\nb:1:1 [0] NCCL INFO Using network Socket\n";
  EXPECT_NE(Check(log, {"--platform", "aws-p5"}).out.find("cause efa_unused"), std::string::npos);
  EXPECT_NE(Check(log, {"--platform", "gcp-a3-megagpu-8g"}).out.find("cause tcpx_missing"),
            std::string::npos);
  EXPECT_NE(Check(log, {"--platform", "dgx-h100"}).out.find("cause socket_fallback"),
            std::string::npos);
}

}  // namespace
}  // namespace fabricscope

namespace fabricscope {
namespace {

// A 2-host job that died after the header, launched as `launch`.
std::string DiedAfterHeader(const std::string& launch, bool remote_lines) {
  std::string log = launch +
                    "\n# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 "
                    "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
                    "#  Rank  0 Group  0 Pid   1 on nodea device  0 [0x00] Tesla T4\n"
                    "#  Rank  1 Group  0 Pid   2 on nodeb device  0 [0x00] Tesla T4\n"
                    "nodea:1:1 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 1.\n";
  if (remote_lines) log += "nodeb:2:2 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 1.\n";
  return log +
         "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong "
         "    time   algbw   busbw #wrong\n";
}

// Open MPI passes the ranks on other hosts only what -x names: variables given to mpirun itself
// (before it, or exported) are named, with NCCL's lines from one host of two as the evidence.
TEST_F(PasteTest, VariablesGivenToMpirunWithoutDashXAreNamed) {
  const Outcome before = Check(DiedAfterHeader(
      "$ NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO mpirun -H nodea,nodeb -np 2 ./all_reduce_perf", false));
  EXPECT_NE(before.out.find("cause env_not_propagated"), std::string::npos) << before.out;
  EXPECT_NE(before.out.find("NCCL_DEBUG, NCCL_SHM_DISABLE set for mpirun"), std::string::npos)
      << before.out;
  EXPECT_NE(before.out.find("NCCL printed lines on 1 of the job's 2 hosts (none from nodeb)"),
            std::string::npos)
      << before.out;
  // An export, and a command continued over lines.
  const Outcome exported = Check(DiedAfterHeader(
      "export NCCL_IB_GID_INDEX=3\n/opt/openmpi/bin/mpirun \\\n  --hostfile hosts \\\n"
      "  -x NCCL_DEBUG=INFO ./all_reduce_perf -b 8 -e 128",
      true));
  // Without NCCL's lines to show it, the variable is the likely cause, not a decided one.
  EXPECT_NE(exported.out.find("most likely cause (not decided) env_not_propagated"),
            std::string::npos)
      << exported.out;
  EXPECT_NE(exported.out.find("NCCL_IB_GID_INDEX set for mpirun"), std::string::npos)
      << exported.out;
}

TEST_F(PasteTest, VariablesPassedOnOrToHydraAreNotNamed) {
  for (const char* launch :
       {"NCCL_SHM_DISABLE=1 mpirun -x NCCL_SHM_DISABLE -H nodea,nodeb -np 2 ./all_reduce_perf",
        "NCCL_SHM_DISABLE=1 mpiexec -hosts nodea,nodeb -ppn 1 ./all_reduce_perf",
        "NCCL_SHM_DISABLE=1 srun -N 2 ./all_reduce_perf"}) {
    const Outcome o = Check(DiedAfterHeader(launch, true));
    EXPECT_EQ(o.out.find("env_not_propagated"), std::string::npos) << launch << "\n" << o.out;
  }
}

// "Channel ... via SHM" and none via P2P: on NVLink GPUs P2P is off (a setting, most likely);
// on PCIe GPUs without P2P it is how NCCL connects them, a note.
std::string ChannelsViaShm(const std::string& gpu, const std::string& extra) {
  std::string log = "#  Rank  0 Group  0 Pid   1 on nodea device  0 [0x00] " + gpu + "\n" +
                    "#  Rank  1 Group  0 Pid   1 on nodea device  1 [0x00] " + gpu + "\n" + extra;
  for (int c = 0; c < 2; ++c) {
    log += fmt::format(
        "nodea:1:2 [0] NCCL INFO Channel 0{} : 0[27000] -> 1[2a000] via "
        "SHM/direct/direct\n",
        c);
  }
  return log + "nodea:1:2 [0] NCCL INFO Connected all rings\n";
}

TEST_F(PasteTest, ChannelsViaShmBetweenNvlinkGpusSayP2pIsOff) {
  const Outcome sxm = Check(ChannelsViaShm("NVIDIA A100-SXM4-80GB", ""));
  EXPECT_NE(sxm.out.find("cause p2p_forced_off"), std::string::npos) << sxm.out;
  EXPECT_NE(sxm.out.find("2 of NCCL's channel connections go via SHM and none via P2P"),
            std::string::npos)
      << sxm.out;
  const Outcome level =
      Check(ChannelsViaShm("NVIDIA A100-SXM4-80GB",
                           "nodea:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC\n"));
  EXPECT_NE(level.out.find("decided by: shape-p2p-via-shm; NCCL_P2P_LEVEL set by environment"),
            std::string::npos)
      << level.out;
  const Outcome pcie = Check(ChannelsViaShm("NVIDIA GeForce RTX 4090", ""));
  EXPECT_EQ(pcie.out.find("p2p_forced_off"), std::string::npos) << pcie.out;
  EXPECT_NE(pcie.out.find("harmless here"), std::string::npos) << pcie.out;
}

// Two nodes, 1 GPU each, `hosts`, and the rows `rows` ("size time busbw").
std::string TwoNodeRun(const std::string& host_a, const std::string& host_b,
                       const std::vector<std::tuple<size_t, double, double>>& rows,
                       const std::string& extra = "") {
  std::string log =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: "
      "20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid   1 on " +
      host_a + " device  0 [0000:33:00] NVIDIA H100 80GB HBM3\n#  Rank  1 Group  0 Pid   2 on " +
      host_b + " device  0 [0000:33:00] NVIDIA H100 80GB HBM3\n" + extra +
      "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong "
      "    time   algbw   busbw #wrong\n#        (B)    (elements)                               "
      "(us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n";
  for (const auto& [size, time, busbw] : rows) {
    log += fmt::format(
        "{:>12} {:>13} float sum -1 {:>8.1f} {:>7.2f} {:>7.2f} 0 {:>8.1f} {:>7.2f} "
        "{:>7.2f} 0\n",
        size, size / 4, time, busbw, busbw, time, busbw, busbw);
  }
  return log + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n#\n";
}

TEST_F(PasteTest, TcpClassFiguresOnSeveralNodesNameTheFallback) {
  const std::vector<std::tuple<size_t, double, double>> slow = {
      {8, 120.0, 0.0}, {1024, 121.0, 0.01}, {524288, 480.0, 1.09}};
  // EC2's host names: the AWS platforms, and EFA unused.
  const Outcome ec2 = Check(TwoNodeRun("ip-172-31-41-23", "ip-172-31-37-112", slow));
  EXPECT_NE(ec2.out.find("only the aws-* platforms kept"), std::string::npos) << ec2.out;
  EXPECT_NE(ec2.out.find("cause efa_unused"), std::string::npos) << ec2.out;
  // Slingshot's node names: the CXI provider.
  const std::vector<std::tuple<size_t, double, double>> plateau = {
      {8, 50.0, 0.0}, {33554432, 17000.0, 3.4}, {134217728, 43000.0, 5.4}};
  const Outcome cray = Check(TwoNodeRun("nid005471", "nid005487", plateau));
  EXPECT_NE(cray.out.find("cause libfabric_cxi_unused"), std::string::npos) << cray.out;
  EXPECT_NE(cray.out.find("busbw tops at 5.4 GB/s from 32 MB up"), std::string::npos) << cray.out;
  // Names that say nothing: sockets.
  const Outcome plain = Check(TwoNodeRun("nodea", "nodeb", plateau));
  EXPECT_NE(plain.out.find("socket_fallback"), std::string::npos) << plain.out;
}

TEST_F(PasteTest, FastFiguresOrANamedFastNetworkAreNotTcpClass) {
  const std::vector<std::tuple<size_t, double, double>> fast = {{8, 18.0, 0.0},
                                                                {134217728, 2900.0, 46.3}};
  EXPECT_EQ(Check(TwoNodeRun("nodea", "nodeb", fast)).out.find("shape-tcp-class"),
            std::string::npos);
  // Slow, but NCCL says it used InfiniBand: not a fallback to sockets.
  const std::vector<std::tuple<size_t, double, double>> slow = {{8, 20.0, 0.0},
                                                                {134217728, 43000.0, 5.4}};
  const Outcome ib = Check(
      TwoNodeRun("nodea", "nodeb", slow,
                 "nodea:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"));
  EXPECT_EQ(ib.out.find("shape-tcp-class"), std::string::npos) << ib.out;
  // One node: no network at all.
  EXPECT_EQ(Check(TwoNodeRun("nodea", "nodea", slow)).out.find("shape-tcp-class"),
            std::string::npos);
}

}  // namespace
}  // namespace fabricscope

namespace fabricscope {
namespace {

// NCCL 2.2 and older print "host:pid:tid [dev] INFO ..." and "... file.cu:61 WARN ..." without
// the word NCCL: read as NCCL's lines, their signatures matched and their hosts kept.
TEST_F(PasteTest, NcclLinesWithoutTheWordNcclAreRead) {
  const Outcome o = Check(
      "e66aa18dc444:3171:3171 [0] misc/ibvwrap.cu:61 WARN Failed to open libibverbs.so[.1]\n"
      "e66aa18dc444:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : Address "
      "family not supported by protocol\n"
      "e66aa18dc444:3171:3171 [0] INFO Using internal Network Socket\n");
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("cause container_no_network"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("judged on its 3 NCCL lines"), std::string::npos) << o.err;
}

// NCCL's error trace ("file:line -> 2" as the failed call returns) says which part failed; in
// the bootstrap with its socket on an IPoIB interface, the interface is the suspect.
TEST_F(PasteTest, TheErrorTraceNamesThePartThatFailed) {
  const std::string trace =
      "h:1:2 [2] NCCL INFO misc/socket.cc:567 -> 2\nh:1:2 [2] NCCL INFO bootstrap.cc:270 -> 2\n";
  const Outcome ipoib = Check(
      "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB "
      "ibp75s0:192.168.0.3<0>\n" +
      trace);
  EXPECT_NE(ipoib.out.find("cause socket_ifname_no_match"), std::string::npos) << ipoib.out;
  EXPECT_NE(ipoib.out.find("NCCL's error trace: misc/socket.cc:567 -> 2, bootstrap.cc:270 -> 2"),
            std::string::npos)
      << ipoib.out;
  const Outcome eth =
      Check("h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.3<0>\n" + trace);
  EXPECT_NE(eth.out.find("bootstrap_unreachable"), std::string::npos) << eth.out;
}

// Connections over InfiniBand without GDRDMA beside some with it: GPUDirect RDMA is off on part
// of the job (a node without nvidia-peermem); the lines may come without NCCL's prefix.
TEST_F(PasteTest, NetConnectionsWithoutGdrdmaAreNamed) {
  const Outcome mixed = Check(
      "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
      "9[1a000] -> 2[6b000] [receive] via NET/IB/1\n");
  EXPECT_EQ(mixed.exit_code, 0) << mixed.out << mixed.err;  // slow, not failed: a WARN
  EXPECT_NE(mixed.out.find("cause gdr_unavailable"), std::string::npos) << mixed.out;
  EXPECT_NE(mixed.out.find("works on some GPUs or nodes and not on others"), std::string::npos)
      << mixed.out;
  const Outcome all = Check(
      "a:1:2 [0] NCCL INFO Channel 00/0 : 9[1a000] -> 2[6b000] [send] via "
      "NET/IB/0/GDRDMA\n");
  EXPECT_EQ(all.out.find("gdr_unavailable"), std::string::npos) << all.out;
}

}  // namespace
}  // namespace fabricscope

namespace fabricscope {
namespace {

// A header and no rows from a job of one rank (nccl-tests -g 1, one process): it has no peer,
// so the P2P and network causes of a hang are not candidates; the log cut or a local hang are.
TEST_F(PasteTest, AOneRankJobThatStoppedIsNotBlamedOnP2p) {
  const Outcome o = Check(
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid  69438 on hosta device  0 [0x01] NVIDIA RTX A6000\n"
      "hosta:69438:69444 [0] NCCL INFO NET/Socket : Using [0]enp3s0f0:10.50.56.33<0>\n");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_EQ(o.out.find("acs_iommu"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("most likely cause (not decided) log_cut"), std::string::npos) << o.out;
}

// aws-ofi-nccl loaded and found no libfabric provider (0.9's "Could not", 1.1-1.8's "Couldn't"):
// NCCL went on without EFA, which a paste of the init lines alone shows before any row; its
// trace of the first try with GPUDirect RDMA, after which it tries again without, is not that.
TEST_F(PasteTest, AnOfiPluginWithoutAProviderIsEfaUnused) {
  const std::string init =
      "# Using devices\n"
      "#   Rank  0 Pid  1 on ip-10-0-1-5 device  0 [0x00] Tesla V100-SXM2-32GB\n"
      "#   Rank  1 Pid  2 on ip-10-0-1-6 device  0 [0x00] Tesla V100-SXM2-32GB\n"
      "ip-10-0-1-5:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.1.5<0>\n";
  for (const char* warn :
       {"Could not find any optimal provider", "Couldn't find any optimal provider"}) {
    const Outcome o =
        Check(init + "ip-10-0-1-5:1:1 [0] get_ofi_provider:425 NCCL WARN NET/OFI " + warn + "\n");
    // Not decided: on HPE Slingshot the same plugin looks for the CXI provider (a log with cxi).
    EXPECT_NE(o.out.find("most likely cause (not decided) efa_unused"), std::string::npos)
        << warn << "\n"
        << o.out;
    EXPECT_EQ(o.out.find("log_cut"), std::string::npos) << o.out;
  }
  const Outcome retried = Check(init +
                                "ip-10-0-1-5:1:1 [0] NCCL TRACE NET/OFI Could not find any optimal "
                                "provider supporting GPUDirect RDMA\n");
  EXPECT_EQ(retried.out.find("efa_unused"), std::string::npos) << retried.out;
}

// NCCL 2.18 gives ncclInternalError's "please report this issue" to failures that are not
// NCCL's (NVIDIA/nccl-tests#275): with its version in the log that, not a guessed interface, is
// the lead; without the version, or on another release, it is not named.
TEST_F(PasteTest, NcclTwoEighteensInternalErrorIsTheReleasesBug) {
  const std::string error =
      "host: Test NCCL failure common.cu:1012 'internal error - please report this issue to the "
      "NCCL developers / ' .. host pid 1: Test failure common.cu:891\n";
  const Outcome v218 = Check("host:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n" + error);
  EXPECT_NE(v218.out.find("cause nccl_version_bug"), std::string::npos) << v218.out;
  const Outcome torch = Check(
      "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
      "NCCLUtils.hpp:275, internal error - please report this issue to the NCCL developers, NCCL "
      "version 2.18.1\n");
  EXPECT_NE(torch.out.find("nccl_version_bug"), std::string::npos) << torch.out;
  EXPECT_EQ(Check(error).out.find("nccl_version_bug"), std::string::npos);
  const Outcome v219 = Check("host:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n" + error);
  EXPECT_EQ(v219.out.find("nccl_version_bug"), std::string::npos) << v219.out;
}

// A table pasted under its command, with no device lines: the command names the collective,
// and a rank count nothing gave is said to be unknown, not 0.
TEST_F(PasteTest, AnUnnamedTableUnderItsCommandIsThatCollectiveOnUnknownRanks) {
  const Outcome o = Check(
      "./build/sendrecv_perf -b 128M -e 128M -g 8\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "   134217728      33554432     float     sum      -1   1211.2  110.81  110.81      0   "
      "1211.8  110.76  110.76    N/A\n");
  EXPECT_NE(o.out.find("sendrecv: an unknown number of ranks on an unknown number of nodes"),
            std::string::npos)
      << o.out << o.err;
  EXPECT_EQ(o.err.find("read as all_reduce"), std::string::npos) << o.err;
}

// EMFILE's text names the open-files limit whoever prints it: NCCL 2.7's "Call to accept
// failed : %s", a Python OSError, another runtime's WARN; an accept failure for another
// reason does not.
TEST_F(PasteTest, TooManyOpenFilesIsTheOpenFilesLimitInAnyReportersWords) {
  for (const std::string line :
       {"node1:311:402 [0] bootstrap.cc:106 NCCL WARN Call to accept failed : Too many open files",
        "OSError: [Errno 24] Too many open files: '/dev/shm/nccl-XXXX'"}) {
    const Outcome o = Check(line + "\n");
    EXPECT_EQ(o.exit_code, 1) << line << "\n" << o.out << o.err;
    EXPECT_NE(o.out.find("cause fd_limit"), std::string::npos) << line << "\n" << o.out;
  }
  const Outcome other = Check(
      "node1:311:402 [0] bootstrap.cc:106 NCCL WARN Call to accept failed : Invalid argument\n");
  EXPECT_EQ(other.out.find("cause fd_limit"), std::string::npos) << other.out;
}

// ibv_modify_qp's errno, read as NCCL 2.30.7 reads it (printIbModifyQpHint, ibvwrap.cc:335-353):
// ETIMEDOUT between two IPv4-mapped RoCE v2 GIDs is NICs on rails that do not reach each other,
// a link-local GID is the wrong GID index; NCCL's own HINT lines decide alone.
TEST_F(PasteTest, ModifyQpTimeoutIsCrossRailBetweenRoceV2GidsAndTheGidIndexOnALinkLocalOne) {
  const std::string head =
      "n1:1:2 [0] misc/ibvwrap.cc:376 NCCL WARN Call to ibv_modify_qp failed with 110 Connection "
      "timed out, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ";
  const Outcome v2 = Check(head + "::ffff:10.1.0.1, remote GID ::ffff:10.2.0.1\n");
  EXPECT_NE(v2.out.find("cause cross_rail_unreachable"), std::string::npos) << v2.out;
  const Outcome v1 = Check(head + "fe80::1, remote GID fe80::2\n");
  EXPECT_NE(v1.out.find("cause roce_gid"), std::string::npos) << v1.out;
  const Outcome hint = Check(
      "n1:1:2 [0] NCCL INFO HINT: In many cases this error occurs when NICs are not cross-rail "
      "connected.\n");
  EXPECT_NE(hint.out.find("cause cross_rail_unreachable"), std::string::npos) << hint.out;
  const Outcome gid = Check(
      "n1:1:2 [0] NCCL INFO HINT: In many cases this error occurs when the incorrect GID index is "
      "forced by NCCL_IB_GID_INDEX\n");
  EXPECT_NE(gid.out.find("cause roce_gid"), std::string::npos) << gid.out;
}

// errno's text decides between the causes a failed call could have: ENOMEM creating a CQ or QP is
// the locked-memory limit, EACCES creating NCCL's /dev/shm file its permissions.
TEST_F(PasteTest, TheErrnoOfAFailedCallDecidesItsCause) {
  const Outcome cq = Check(
      "n:1:1 [0] misc/ibvwrap.cc:240 NCCL WARN Call to ibv_create_cq failed with error Cannot "
      "allocate memory\n");
  EXPECT_NE(cq.out.find("cause memlock_limit"), std::string::npos) << cq.out;
  EXPECT_EQ(cq.out.find("not decided"), std::string::npos) << cq.out;
  const Outcome shm = Check(
      "n:1:1 [0] os/linux.cc:780 NCCL WARN Error: failed to create shared memory file "
      "/dev/shm/nccl-AbCd, error Permission denied (13)\n");
  EXPECT_NE(shm.out.find("cause shm_permission"), std::string::npos) << shm.out;
  const Outcome oom = Check("RuntimeError: CUDA error: out of memory\n");
  EXPECT_NE(oom.out.find("cause cuda_oom"), std::string::npos) << oom.out;
}

// PyTorch's store client that never reached MASTER_ADDR:MASTER_PORT: the address or a rank that
// never started, ranked, not decided.
TEST_F(PasteTest, AStoreClientTimeoutRanksTheAddressAboveAMissingRank) {
  const Outcome o = Check(
      "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while "
      "trying to connect to (10.10.12.11, 25000).\n");
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("not decided between bootstrap_unreachable and rank_missing"),
            std::string::npos)
      << o.out;
}

// NCCL's NVLS bind WARN is one format with newlines in it: a paste that re-flowed or cut its
// first line still has the second, which names the Fabric Manager or the NVSwitches.
TEST_F(PasteTest, TheNvlsBindWarnsSecondLineNamesTheFabricManager) {
  const Outcome o = Check(
      "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152:\n"
      "CUDA error 401 'the operation cannot be performed in the present state'.\n"
      "This is usually caused by a system or configuration error in the Fabric Manager or "
      "NVSwitches.\n"
      "Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future.\n");
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("cause fabric_manager"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("decided by: nccl-nvls-bind-hint"), std::string::npos) << o.out;
}

// NCCL 2.22-2.28's completion line ("NET/IB: Got completion", the HCA at its end) is read as the
// 2.21 and 2.30 ones are: error 12 is retry exceeded, with localGid (RoCE) the GID index.
TEST_F(PasteTest, TheCompletionLineOfTwoTwentyTwoToTwoTwentyEightIsRead) {
  const std::string line =
      "n:1:2 [4] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer "
      "10.0.0.2<44206> with status=12 opcode=129 len=65536 vendor err 129 (Recv)";
  EXPECT_NE(Check(line + " hca mlx5_0\n").out.find("cause ib_retry_exceeded"), std::string::npos);
  const Outcome roce =
      Check(line + " localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_0\n");
  EXPECT_NE(roce.out.find("cause roce_gid"), std::string::npos) << roce.out;
  EXPECT_NE(roce.out.find("nccl-ib-completion-2.22"), std::string::npos) << roce.out;
}

// A completion error 12 (transport retry counter exceeded) is a timeout; on RoCE, at the first
// transfer, it is most often a GID the peer cannot reach (NVIDIA/nccl#426). What says RoCE:
// localGid on the line (NCCL prints it only on an Ethernet link layer), RoCE in the log,
// NCCL_IB_GID_INDEX, a RoCE platform. Without any of them it stays retry exceeded.
TEST_F(PasteTest, ErrorTwelveOnRoceIsTheGidIndex) {
  const std::string v212 =
      "h:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
      "10.0.0.2<38560> with error 12, opcode 0, len 0, vendor err 129\n";
  const std::string v221 =
      "h:1:2 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer "
      "10.0.0.2<45678> with status=12 opcode=0 len=0 vendor err 129 (Send)";
  EXPECT_NE(Check(v221 + " localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2\n")
                .out.find("cause roce_gid"),
            std::string::npos);
  EXPECT_NE(Check("h:1:1 [0] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.\n" + v212)
                .out.find("cause roce_gid"),
            std::string::npos);
  EXPECT_NE(
      Check("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n" +
            v212)
          .out.find("cause roce_gid"),
      std::string::npos);
  EXPECT_NE(Check(v212).out.find("cause ib_retry_exceeded"), std::string::npos);
  EXPECT_NE(Check(v221 + "\n").out.find("cause ib_retry_exceeded"), std::string::npos);
  const Outcome ib = Check(
      "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n" +
      v212);
  EXPECT_NE(ib.out.find("cause ib_retry_exceeded"), std::string::npos) << ib.out;
}

// NCCL found no IB device where the job asked for IB (NCCL_IB_DISABLE=0) or ran in a container
// given no /dev/infiniband: the process sees no HCA, a WARN (sockets carry the job) that names
// no_ib_in_container; the same line with nothing that wanted IB stays a note.
TEST_F(PasteTest, NoIbDeviceWhereIbWasWantedIsAContainerWithoutIt) {
  const std::string none = "node1:1:2 [0] NCCL INFO NET/IB : No device found.\n";
  const Outcome wanted =
      Check(none + "node1:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n");
  EXPECT_EQ(wanted.exit_code, 0) << wanted.out << wanted.err;
  EXPECT_NE(wanted.out.find("cause no_ib_in_container"), std::string::npos) << wanted.out;
  const Outcome docker = Check("$ docker run --gpus all img torchrun train.py\n" + none +
                               "node1:1:2 [0] NCCL INFO Using network Socket\n");
  EXPECT_NE(docker.out.find("cause no_ib_in_container"), std::string::npos) << docker.out;
  const Outcome mounted =
      Check("$ docker run --gpus all --device=/dev/infiniband img torchrun train.py\n" + none +
            "node1:1:2 [0] NCCL INFO Using network Socket\n");
  EXPECT_EQ(mounted.out.find("cause no_ib_in_container"), std::string::npos) << mounted.out;
  const Outcome both =
      Check(none + "node1:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n" +
            "node1:1:2 [0] NCCL INFO Using network Socket\n");
  EXPECT_NE(both.out.find("cause no_ib_in_container"), std::string::npos) << both.out;
  EXPECT_NE(Check(none).out.find("harmless here"), std::string::npos);
}

}  // namespace
}  // namespace fabricscope
