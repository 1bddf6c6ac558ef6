// `fabricscope check` as users run it: real files, node trees for detection, the benchmark
// run through `--`, and every bad input, in this process on string streams; stdin through
// the real binary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "check/fixtures.h"
#include "common/in_process.h"
#include "doctor/fixture.h"
#include "fabricscope/finding.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::Outcome;
using test::Slurp;

std::string Data(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/analyze/data/" + name;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class CheckCli : public test::InProcessTest {
 protected:
  CheckCli() : InProcessTest("check") {}

  // The findings of the first test of a JSON report, by rule.
  static json FindingOf(const json& report, const std::string& rule) {
    for (const json& f : report["tests"][0]["findings"]) {
      if (f["source"] == rule) return f;
    }
    return json();
  }
};

TEST_F(CheckCli, PublishedRunsPassAsA3Ultra) {
  const Outcome o = Here("--platform a3-ultragpu-8g " + Data("skypilot_h200_all_gather.log") + " " +
                         Data("gke_h200_all_gather.log"));
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(Has(o.out, "fabricscope check: gcp-a3-ultragpu-8g (--platform): 8 x NVIDIA H200"))
      << o.out;
  EXPECT_TRUE(Has(o.out, "\nOK        all_gather: 16 ranks on 2 nodes (host names), 2 runs"))
      << o.out;
  EXPECT_TRUE(Has(
      o.out, "\n  OK            bandwidth       busbw 330.2 GB/s is 101% of the expected 325.7"))
      << o.out;
  EXPECT_TRUE(Has(o.out, "\nOK: 1 test, 1 OK\n")) << o.out;
  // The reader's note that the collective was inferred reaches stderr, not the verdicts.
  EXPECT_TRUE(Has(o.err, "read as all_gather")) << o.err;
}

TEST_F(CheckCli, PublishedRunAsJson) {
  const Outcome o = Here("--format json --collective all_gather --platform a3-ultragpu-8g " +
                         Data("gke_h200_all_gather.log"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.err, "");
  const json report = json::parse(o.out);
  EXPECT_EQ(report["version"], 3);
  EXPECT_EQ(report["findings_version"], kFindingsVersion);
  EXPECT_EQ(report["verdict"], "OK");
  EXPECT_EQ(report["platform"]["name"], "gcp-a3-ultragpu-8g");
  EXPECT_EQ(report["platform"]["nic_total_gbs"], 400.0);
  EXPECT_EQ(report["counts"], json({{"OK", 1}, {"WARN", 0}, {"CRITICAL", 0}}));
  const json& test = report["tests"][0];
  EXPECT_EQ(test["collective"], "all_gather");
  EXPECT_EQ(test["nodes"], 2);
  EXPECT_EQ(test["expected"]["basis"], "measured");
  EXPECT_EQ(test["expected"]["typical_busbw"], 325.7);
  EXPECT_TRUE(test["confidence"].is_null()) << "one run";
  const json bandwidth = FindingOf(report, "bandwidth");
  EXPECT_EQ(bandwidth["severity"], "OK");
  EXPECT_NEAR(bandwidth["figures"]["line_rate_percent"].get<double>(), 82.4, 0.2);
  // Every finding in the one JSON form (finding.h): every key, always.
  for (const json& f : test["findings"]) {
    for (const char* key : {"severity", "source", "what", "where", "evidence", "fix", "figures",
                            "decided", "element", "nodes"}) {
      EXPECT_TRUE(f.contains(key)) << key << " missing in " << f.dump();
    }
    EXPECT_EQ(f["decided"], true);
  }
}

TEST_F(CheckCli, TcpxTableWithAndWithoutGpuDirect) {
  const std::string with = Write("with_tcpx.log", check_testing::TcpxLog(true));
  const std::string without = Write("without_tcpx.log", check_testing::TcpxLog(false));
  const Outcome pass = Here("--platform a3-highgpu-8g " + with);
  EXPECT_EQ(pass.exit_code, 0) << pass.out << pass.err;
  EXPECT_TRUE(Has(pass.out, "\nOK        all_reduce: 16 ranks on 2 nodes")) << pass.out;

  const Outcome fail = Here("--format json --platform a3-highgpu-8g " + without);
  EXPECT_EQ(fail.exit_code, 1) << fail.out << fail.err;
  const json report = json::parse(fail.out);
  EXPECT_EQ(report["verdict"], "CRITICAL");
  EXPECT_EQ(report["counts"]["CRITICAL"], 1);
  const json gpudirect = FindingOf(report, "gpudirect");
  EXPECT_EQ(gpudirect["severity"], "CRITICAL");
  EXPECT_TRUE(Has(gpudirect["what"], "GPUDirect is most likely not in use")) << gpudirect["what"];
  EXPECT_EQ(gpudirect["figures"]["without_gpudirect_busbw"], 20.0);
}

TEST_F(CheckCli, SyntheticDegradedRuns) {
  // 20% low: WARN, which passes unless --strict.
  const std::string low = Write("low.log", check_testing::UltraLog(0.8));
  const Outcome warn = Here("--platform a3-ultragpu-8g " + low);
  EXPECT_EQ(warn.exit_code, 0) << warn.out;
  EXPECT_TRUE(
      Has(warn.out, "\n  WARN          bandwidth       busbw 264.2 GB/s is 81% of the expected"))
      << warn.out;
  EXPECT_TRUE(Has(warn.out, "\nWARN: 1 test, 1 WARN\n")) << warn.out;
  EXPECT_EQ(Here("--strict --platform a3-ultragpu-8g " + low).exit_code, 1);

  // TCP fallback: Socket in NCCL's lines.
  const std::string tcp =
      Write("tcp.log", check_testing::UltraLog(0.06, {"NET/Socket : Using [0]eth1:10.0.0.2<0>",
                                                      "Channel 00/0 : 0[0] -> 8[0] [send] via "
                                                      "NET/Socket/0"}));
  const Outcome fallback = Here("--platform a3-ultragpu-8g " + tcp);
  EXPECT_EQ(fallback.exit_code, 1) << fallback.out;
  EXPECT_TRUE(Has(fallback.out,
                  "\n  CRITICAL      gpudirect       GPUDirect/RDMA is not in use: NCCL's log "
                  "shows 'via NET/Socket'"))
      << fallback.out;

  // 2-node NVLS above the NIC total, below what the model expects through NVLSTree.
  check_testing::LogSpec nvls;
  nvls.rows = check_testing::CurveRows("all_reduce", 16, 420, 40, size_t{8} << 30);
  const Outcome algo = Here("--platform dgx-h100 " + Write("nvls.log", NcclTestsLog(nvls)));
  EXPECT_EQ(algo.exit_code, 0) << algo.out;
  EXPECT_TRUE(Has(algo.out, "\n  WARN          algorithm       busbw reaches")) << algo.out;
  EXPECT_TRUE(Has(algo.out, "not a network measurement")) << algo.out;
}

TEST_F(CheckCli, GenericPlatformFromFlags) {
  const std::string log = Write("ultra.log", check_testing::UltraLog(1.0));
  const Outcome o = Here(
      "--gpus-per-node 8 --intra-node-busbw 370 --nics 8 --nic-rate 400 "
      "--transport RoCE " +
      log);
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(Has(o.out, "generic (command line): 8 GPUs (ranks) a node, 8 x 400 Gb/s RoCE"))
      << o.out;
  EXPECT_TRUE(Has(o.out, "of the expected 360.0 GB/s")) << o.out;
  // Half the NICs: the derived band halves, the same run is then above it.
  const Outcome fewer = Here(
      "--format json --gpus-per-node 8 --intra-node-busbw 370 --nics 4 "
      "--nic-rate 400 " +
      log);
  const json report = json::parse(fewer.out);
  EXPECT_EQ(report["tests"][0]["expected"]["typical_busbw"], 180.0);
}

TEST_F(CheckCli, DetectsThePlatformFromANodeTree) {
  const doctor::testing::NodeTree tree(dir_ / "node", doctor::testing::NodeSpec{});
  tree.Write("/sys/class/dmi/id/product_name", "DGX H100\n");
  check_testing::LogSpec spec;
  spec.rows = check_testing::CurveRows("all_reduce", 16, 370, 40, size_t{4} << 30);
  const std::string log = Write("dgx.log", NcclTestsLog(spec));
  const Outcome o = Here("--root " + tree.root().string() + " " + log);
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(Has(o.out, "fabricscope check: dgx-h100 (detected)")) << o.out;
  EXPECT_TRUE(Has(o.out, "from: DMI product name 'DGX H100'")) << o.out;
  // No driver file and no pci.ids on the tree: the model is unknown, the count still fits.
  EXPECT_TRUE(Has(o.out, "note: the GPU model is unknown")) << o.out;
}

TEST_F(CheckCli, NothingToDetectIsAWarnThatSaysWhatToGive) {
  fs::create_directories(dir_ / "bare");
  const std::string log = Write("ultra.log", check_testing::UltraLog(1.0));
  const Outcome o = Here("--root " + (dir_ / "bare").string() + " " + log);
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(Has(o.out, "no platform: could not detect the platform: this node has no GPU"))
      << o.out;
  EXPECT_TRUE(Has(o.out, "Give --platform NAME (gcp-a3-highgpu-8g")) << o.out;
  EXPECT_EQ(Here("--strict --root " + (dir_ / "bare").string() + " " + log).exit_code, 1);
}

TEST_F(CheckCli, RunsTheBenchmarkOnThisMachine) {
  // Host memory through Gloo: no GPU platform can judge it, and the verdict says what to give.
  const Outcome o = Here("-- -b 1K -e 64K -t 2");
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(Has(o.err, "# Collective test starting: all_reduce_perf")) << o.err;
  EXPECT_TRUE(Has(o.out, "\nWARN      all_reduce: 2 ranks on 1 node")) << o.out;
  EXPECT_TRUE(Has(o.out, "\n  OK            correctness     every result validated")) << o.out;
  EXPECT_TRUE(Has(o.out, "not judged")) << o.out;
  EXPECT_TRUE(Has(o.out, "--gpus-per-node N --intra-node-busbw GB/s")) << o.out;

  // A catalog platform does not apply to host memory either.
  const Outcome gpu = Here("--platform dgx-h100 -- -b 1K -e 64K -t 2");
  EXPECT_EQ(gpu.exit_code, 0);
  EXPECT_TRUE(Has(gpu.out, "measured on host memory (backend gloo)")) << gpu.out;

  // Described on the command line, it is judged: from 16 KB, as asked. The run's rows are
  // noisy on a busy machine, so the test holds to the form of the verdict.
  const Outcome generic = Here(
      "--format json --gpus-per-node 2 --intra-node-busbw 1000 --nics 1 --nic-rate 10 --transport "
      "TCP --judge-from 16K -- -b 1K -e 64K -f 2 -t 2 -N 2");
  EXPECT_EQ(generic.exit_code, 1) << generic.out << generic.err;
  const json report = json::parse(generic.out);
  EXPECT_EQ(report["tests"][0]["expected"]["from_size"], 16384);
  EXPECT_EQ(report["tests"][0]["confidence"]["samples"], 2);
  EXPECT_EQ(FindingOf(report, "bandwidth")["severity"], "CRITICAL")
      << "1000 GB/s is out of reach of host memory";
}

TEST_F(CheckCli, ReadsStdin) {
  const Outcome o = Run("--platform a3-ultragpu-8g --collective all_gather",
                        Data("skypilot_h200_all_gather.log"));
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(Has(o.out, "1 run: <stdin>:5")) << o.out;
}

TEST_F(CheckCli, WritesTheReportToAFile) {
  const fs::path out = dir_ / "verdict.json";
  const Outcome o = Here("--format json --output " + out.string() + " --platform a3-ultragpu-8g " +
                         Data("gke_h200_all_gather.log"));
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(json::parse(Slurp(out))["verdict"], "OK");
}

// Every bad input: a clear message and exit 2, never a crash.
TEST_F(CheckCli, BadInputs) {
  const std::string log = Write("ultra.log", check_testing::UltraLog(1.0));
  const std::string empty = Write("empty.log", "");
  const std::string text = Write("notes.txt", "just some words\nno table here\n");
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"--platform a3-nonsense " + log,
       "unknown platform 'a3-nonsense'; known platforms: gcp-a3-highgpu-8g, gcp-a3-edgegpu-8g"},
      {"--platform a3-ultragpu-8g /nonexistent/results.log", "/nonexistent/results.log"},
      {"--platform a3-ultragpu-8g " + empty, "no results could be read from the inputs"},
      {"--platform a3-ultragpu-8g " + text, "notes.txt"},
      {"--format xml --platform a3-ultragpu-8g " + log,
       "unknown --format 'xml': choose one of text, json"},
      {"--nodes 0 --platform a3-ultragpu-8g " + log, "--nodes must be 1 or more"},
      {"--judge-from lots --platform a3-ultragpu-8g " + log, "--judge-from"},
      {"--nics 8 " + log, "a generic platform needs --intra-node-busbw"},
      {"--gpus-per-node 8 --intra-node-busbw 370 --nics 8 --nic-rate 0 " + log,
       "a generic platform needs --nic-rate"},
      {"--gpus-per-node 8 --intra-node-busbw 370 --nics 8 --nic-rate 400 --transport PIGEON " + log,
       "--transport 'PIGEON': choose IB, RoCE, gIB, TCPX, TCPXO, EFA or TCP"},
      {"--platform gb200-nvl72 --sharp maybe " + log,
       "--sharp is 'maybe': give yes (the fabric has in-network reduction, SHARP) or no"},
      {"--gpus-per-node 8 --intra-node-busbw 370 --nics 8 --nic-rate 400 --latency-floor -3 " + log,
       "--latency-floor: -3 is out of range: give a positive number of microseconds"},
      {"--platform dgx-h100 --nics 8 " + log, "--platform and a generic description"},
      {"--root /nonexistent/node " + log, "--root '/nonexistent/node' is not a directory"},
      {"--root / --platform dgx-h100 " + log, "--root is where detection reads the node"},
      // CLI11 itself refuses flags after -- once files came before it.
      {log + " -- -b 1K", "not expected"},
      {"-- --bogus", "after --: "},
      {"-- -t 0", "after --: --nthreads: 0 is out of range"},
      {"-- -N 0", "-N 0 runs forever"},
      {"--nodes two " + log, "--nodes"},
  };
  for (const Case& c : cases) {
    const Outcome o = Here(c.args);
    EXPECT_EQ(o.exit_code, 2) << c.args << "\n" << o.out << o.err;
    EXPECT_TRUE(Has(o.err, c.message)) << c.args << "\n" << o.err;
  }
}

// A row that cannot be read: the rest is still judged, the row is named, and the exit
// status says the input was bad.
TEST_F(CheckCli, AnUnreadableRowIsNamedAndTheRestJudged) {
  std::string log = check_testing::TcpxLog(true);
  const size_t row = log.find("     1048576 ");
  ASSERT_NE(row, std::string::npos);
  log.replace(row, log.find('\n', row) - row, "     1048576        262144     float     sum  xx");
  const size_t line = static_cast<size_t>(std::count(log.begin(), log.begin() + row, '\n')) + 1;
  const std::string path = Write("cut.log", log);
  const Outcome o = Here("--platform a3-highgpu-8g " + path);
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_TRUE(Has(o.err, path + ":" + std::to_string(line) + ": error:")) << o.err;
  EXPECT_TRUE(Has(o.out, "\nOK        all_reduce: 16 ranks on 2 nodes")) << o.out;
}

TEST_F(CheckCli, HelpListsThePlatformsAndTheExitStatus) {
  const Outcome o = Here("--help");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_TRUE(Has(o.out, "gcp-a3-ultragpu-8g")) << o.out;
  EXPECT_TRUE(Has(o.out, "Exit codes: 0 OK (and WARN unless --strict); 1 CRITICAL")) << o.out;
}

// Each test's findings are the one writer's lines (finding.h), indented under the test's line,
// with the rule column as wide as the longest rule name.
TEST_F(CheckCli, FindingsAreTheSharedWritersLines) {
  const std::string low = Write("low.log", check_testing::UltraLog(0.8));
  const Outcome o = Here("--platform a3-ultragpu-8g " + low);
  const Outcome j = Here("--format json --platform a3-ultragpu-8g " + low);
  const json report = json::parse(j.out);
  std::vector<Finding> findings;
  for (const json& f : report["tests"][0]["findings"]) {
    Finding x;
    x.severity = f["severity"] == "OK"     ? Severity::kOk
                 : f["severity"] == "INFO" ? Severity::kInfo
                 : f["severity"] == "WARN" ? Severity::kWarn
                                           : Severity::kCritical;
    x.source = f["source"];
    x.what = f["what"];
    x.where = f["where"];
    x.evidence = f["evidence"].get<std::vector<std::string>>();
    x.fix = f["fix"];
    findings.push_back(std::move(x));
  }
  ASSERT_FALSE(findings.empty()) << j.out;
  FindingTextStyle style;
  style.indent = "  ";
  style.source_width = std::string_view("ranks_per_node").size();
  const size_t line = o.out.find("\nWARN      ");
  ASSERT_NE(line, std::string::npos) << o.out;
  const size_t next = o.out.find('\n', line + 1) + 1;
  EXPECT_EQ(o.out.substr(next, o.out.find("\n\n", next) + 1 - next), FindingsText(findings, style))
      << o.out;
}

}  // namespace
}  // namespace fabricscope
