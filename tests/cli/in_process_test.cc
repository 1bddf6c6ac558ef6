// Every command run in this process through the Commands() registry (cli::RunCommandLine),
// its out and err streams captured: the format each --format selects, the one error for an
// unknown format (listing the command's formats), and a bad input refused with exit 2 and
// the fix. Nothing here spawns the binary.
#include "common/in_process.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "doctor/fixture.h"
#include "fabricscope/locate.h"
#include "fabricscope/platform.h"

namespace fabricscope {
namespace {

using test::Outcome;

std::string AnalyzeData(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/analyze/data/" + name;
}

std::string FabricData(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/fabric/data/" + name;
}

class InProcess : public test::InProcessTest {
 protected:
  // An unknown --format: exit 2, the one message every command gives, naming its formats;
  // nothing on out.
  void ExpectUnknownFormat(const std::string& args, const std::string& formats) {
    const Outcome o = Here(args + " --format yaml");
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.err;
    EXPECT_EQ(o.err, "fabricscope: error: unknown --format 'yaml': choose one of " + formats + "\n")
        << args;
    EXPECT_TRUE(o.out.empty()) << o.out;
  }

  // `--help` lists every format with its description.
  void ExpectFormatsInHelp(const std::string& command, const std::vector<std::string>& formats) {
    const Outcome o = Here(command + " --help");
    EXPECT_EQ(o.exit_code, 0) << o.err;
    for (const std::string& format : formats) {
      EXPECT_NE(o.out.find("  " + format + ": "), std::string::npos)
          << command << " --help lacks " << format << ":\n"
          << o.out;
    }
  }
};

// One healthy Inspector record of rank `rank` (the fields watch reads).
std::string InspectorLine(int rank, int step) {
  nlohmann::json j;
  j["header"] = {{"id", "0xc0ffee"}, {"rank", rank}, {"n_ranks", 2}, {"nnodes", 1}};
  j["metadata"] = {{"inspector_output_format_version", "v4.0"}, {"hostname", "node-a"}};
  const int64_t start = step * 10000 + rank * 3;
  j["coll_perf"] = {{"coll", "AllReduce"},
                    {"coll_sn", step},
                    {"coll_msg_size_bytes", 1 << 20},
                    {"coll_exec_time_us", 500},
                    {"coll_busbw_gbs", 40},
                    {"coll_algobw_gbs", 30},
                    {"coll_algo", "RING"},
                    {"coll_proto", "SIMPLE"},
                    {"event_trace_ts", {{"coll_start_ts", start}, {"coll_stop_ts", start + 500}}}};
  return j.dump() + "\n";
}

TEST(InProcessWords, SplitAsShDoesPlainAndQuotedWords) {
  EXPECT_EQ(test::Words(" run  -t 2 --title 'H200 runs' \"a b\"c x''y "),
            (std::vector<std::string>{"run", "-t", "2", "--title", "H200 runs", "a bc", "xy"}));
  EXPECT_EQ(test::Words("--label ''"), (std::vector<std::string>{"--label", ""}));
  EXPECT_TRUE(test::Words("  ").empty());
}

TEST_F(InProcess, UnknownFormatIsOneErrorListingEachCommandsFormats) {
  const std::string log = AnalyzeData("skypilot_h200_all_gather.log");
  ExpectUnknownFormat("run -b 8 -e 8 --backend gloo", "text, json, csv");
  ExpectUnknownFormat("analyze " + log, "text, md, json, csv");
  ExpectUnknownFormat("compare " + log + " " + log, "text, md, json, csv");
  ExpectUnknownFormat("check --platform a3-ultragpu-8g " + log, "text, json");
  ExpectUnknownFormat("locate --simulate 4", "text, json");
  ExpectUnknownFormat("doctor --root " + dir_.string(), "text, json");
  ExpectUnknownFormat("fabric --from " + FabricData("healthy"), "text, json, svg");
  ExpectUnknownFormat("watch " + Write("w.jsonl", InspectorLine(0, 0)), "text, json");
  ExpectUnknownFormat("model --platform dgx-h100", "text, json");
}

TEST_F(InProcess, HelpListsEachFormatWithItsDescription) {
  ExpectFormatsInHelp("run", {"text", "json", "csv"});
  ExpectFormatsInHelp("analyze", {"text", "md", "json", "csv"});
  ExpectFormatsInHelp("compare", {"text", "md", "json", "csv"});
  ExpectFormatsInHelp("check", {"text", "json"});
  ExpectFormatsInHelp("locate", {"text", "json"});
  ExpectFormatsInHelp("doctor", {"text", "json"});
  ExpectFormatsInHelp("fabric", {"text", "json", "svg"});
  ExpectFormatsInHelp("watch", {"text", "json"});
  ExpectFormatsInHelp("model", {"text", "json"});
}

TEST_F(InProcess, RunWritesTheChosenFormatToOut) {
  Outcome o = Here("run -t 2 -b 1K -e 2K -f 2 -n 2 --backend gloo --format csv");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("collective,", 0), 0u) << o.out;
  EXPECT_NE(o.out.find("\nall_reduce,"), std::string::npos) << o.out;
  o = Here("run -t 2 -b 1K -e 1K -n 2 --backend gloo --format json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  EXPECT_FALSE(json.empty());
  o = Here("run --dry-run -b 1K -e 4K -f 2 --format csv");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("report: csv on stdout"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("sizes: 3 (1024 to 4096 bytes)"), std::string::npos) << o.out;
}

TEST_F(InProcess, RunRefusesBadInputWithTheFix) {
  ExpectRefusedHere("run -t 0", 2, "--nthreads: 0 is out of range: give 1 to 1024 threads");
  ExpectRefusedHere("run -b 8 -e 8 --output /nonexistent-dir/r.txt", 3,
                    "cannot write the report to '/nonexistent-dir/r.txt'");
}

TEST_F(InProcess, AnalyzeWritesEachFormat) {
  const std::string log = AnalyzeData("skypilot_h200_all_gather.log");
  Outcome o = Here("analyze --format json " + log);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(nlohmann::json::parse(o.out)["tests"][0]["collective"], "all_gather") << o.out;
  o = Here("analyze --format md " + log);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("| all_gather |"), std::string::npos) << o.out;
  o = Here("analyze --format csv " + log);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find(",all_gather,float,"), std::string::npos) << o.out;
  o = Here("analyze --collective all_gather " + log);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("all_gather"), std::string::npos) << o.out;
  EXPECT_TRUE(o.err.empty()) << o.err;
}

TEST_F(InProcess, AnalyzeReportsReadErrorsOnErr) {
  ExpectRefusedHere("analyze " + dir_.string(), 2, "is a directory: give the result files in it");
  const std::string bad = Write("bad.log", "nothing to read here\n");
  const Outcome o = Here("analyze " + bad);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err.rfind(bad + ":", 0), 0u) << o.err;
}

TEST_F(InProcess, CompareWritesEachFormat) {
  const std::string log = AnalyzeData("skypilot_h200_all_gather.log");
  Outcome o = Here("compare --format json " + log + " " + log);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_FALSE(nlohmann::json::parse(o.out).empty());
  o = Here("compare --format md " + log + " " + log);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("|"), std::string::npos) << o.out;
  ExpectRefusedHere("compare " + log + " " + (dir_ / "none.log").string(), 2,
                    "no results could be read from");
}

TEST_F(InProcess, ReportWritesHtmlToOutOrAFile) {
  const std::string log = AnalyzeData("skypilot_h200_all_gather.log");
  Outcome o = Here("report --collective all_gather -o - " + log);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("<!DOCTYPE html>", 0), 0u) << o.out.substr(0, 200);
  const std::string html = (dir_ / "r.html").string();
  o = Here("report --collective all_gather -o " + html + " " + log);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(o.out.empty());
  EXPECT_EQ(o.err, "fabricscope: wrote " + html + "\n");
  EXPECT_EQ(test::Slurp(html).rfind("<!DOCTYPE html>", 0), 0u);
  ExpectRefusedHere("report -o - " + Write("empty.log", "\n"), 2,
                    "no results could be read from the inputs: nothing to report");
}

TEST_F(InProcess, CheckWritesEachFormat) {
  const std::string log = AnalyzeData("skypilot_h200_all_gather.log");
  Outcome o = Here("check --platform a3-ultragpu-8g --format json " + log);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  EXPECT_EQ(json["verdict"], "OK") << o.out;
  o = Here("check --platform a3-ultragpu-8g " + log);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("all_gather"), std::string::npos) << o.out;
  o = Here("check --platform a3-ultragpu-8g --dry-run");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out,
            "# fabricscope check: dry run, nothing is judged\n"
            "platform: gcp-a3-ultragpu-8g (--platform)\n");
}

TEST_F(InProcess, CheckRefusesBadInputWithTheFix) {
  const std::string log = AnalyzeData("skypilot_h200_all_gather.log");
  ExpectRefusedHere("check --platform a3-nonsense " + log, 2, "unknown platform 'a3-nonsense'");
  ExpectRefusedHere("check --nodes 0 --platform a3-ultragpu-8g " + log, 2,
                    "--nodes must be 1 or more");
}

TEST_F(InProcess, LocateWritesEachFormat) {
  Outcome o = Here("locate --simulate 6 --inject node:3:0.3 --format json");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  EXPECT_EQ(json["status"], "found") << o.out;
  o = Here("locate --simulate 6 --inject node:3:0.3");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.out.find("node"), std::string::npos) << o.out;
  EXPECT_FALSE(nlohmann::json::accept(o.out)) << o.out;
  o = Here("locate --dry-run --mode quick");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("# fabricscope locate: dry run, nothing is measured\n", 0), 0u) << o.out;
}

TEST_F(InProcess, LocateRefusesBadInputWithTheFix) {
  ExpectRefusedHere("locate --simulate 4 --threshold 2", 2,
                    "--threshold: 2 is out of range: give a fraction between 0 and 1");
  ExpectRefusedHere("locate --inject node:1", 2, "describes a simulated cluster: add --simulate N");
  ExpectRefusedHere("locate --stalls 0.1", 2, "--stalls describes a simulated cluster");
  ExpectRefusedHere("locate --simulate 4 --stalls 2", 2,
                    "the transient and stall rates in 0..1 and their depths in 0..1");
  ExpectRefusedHere("locate --simulate 4 --transients -1", 2,
                    "the transient and stall rates in 0..1 and their depths in 0..1");
}

// Two thread ranks as two nodes over Gloo, no --platform or --expect: rank 0 detects the
// platform from the node tree under --root (a DGX H100 written the way Linux lays out /sys
// and /proc: this machine has no GPU) and every rank judges the pair against check's
// expectation for it. The figure is the one --platform dgx-h100 gives.
TEST_F(InProcess, LocateJudgesTwoNodesAgainstThePlatformDetectedOnRankZero) {
  const doctor::testing::NodeTree tree(dir_ / "dgx", {});
  tree.Write("/sys/class/dmi/id/product_name", "DGX H100\n");
  tree.Write("/sys/class/dmi/id/sys_vendor", "NVIDIA\n");
  // NVIDIA's driver file naming each GPU (PCI class 0x0302) of the tree.
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(tree.root() / "sys/bus/pci/devices", error)) {
    std::ifstream in(entry.path() / "class");
    std::string code;
    in >> code;
    if (!code.starts_with("0x0302")) continue;
    const std::string bdf = entry.path().filename().string();
    tree.Write("/proc/driver/nvidia/gpus/" + bdf + "/information",
               "Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t " + bdf + "\n");
  }
  const std::string job =
      "locate -t 2 --group-by rank --backend gloo -b 1M -n 2 --max-sweeps 3 --skip-stragglers "
      "--format json";
  Outcome o = Here(job + " --root " + tree.root().string());
  ASSERT_TRUE(o.exit_code == 0 || o.exit_code == 4) << o.exit_code << "\n" << o.err;
  const auto detected = nlohmann::json::parse(o.out);
  const std::string source = detected["config"]["expect_source"];
  EXPECT_EQ(source.rfind("dgx-h100 detected on rank 0's host from " + tree.root().string(), 0), 0u)
      << source;
  const double expected =
      PlatformPairExpectation(Catalog::Builtin().Get("dgx-h100"), size_t{1} << 20).gbs;
  EXPECT_DOUBLE_EQ(detected["config"]["expect_gbs"].get<double>(), expected);
  // Gloo on loopback against a DGX H100's sendrecv: the pair is judged against that figure.
  // Gloo on loopback against a DGX H100's sendrecv: the verdict (ambiguous, or inconclusive
  // at this noise in three passes) judges the pair against that figure and says whose it is;
  // what detection read is in the notes.
  const std::string verdict = detected["verdict"];
  EXPECT_NE(verdict.find("x the expected"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("(dgx-h100 detected on rank 0's host"), std::string::npos) << verdict;
  bool noted = false;
  for (const auto& note : detected["notes"]) {
    noted =
        noted || note.get<std::string>().find("DMI product name 'DGX H100'") != std::string::npos;
  }
  EXPECT_TRUE(noted) << detected["notes"];

  // A node that fits no platform: nothing to judge against, as before.
  const doctor::testing::NodeTree plain(dir_ / "plain", {});
  o = Here(job + " --root " + plain.root().string());
  ASSERT_TRUE(o.exit_code == 0 || o.exit_code == 4) << o.exit_code << "\n" << o.err;
  const auto none = nlohmann::json::parse(o.out);
  EXPECT_EQ(none["config"]["expect_gbs"], 0.0) << none["config"];
  EXPECT_EQ(none["config"]["expect_source"], "") << none["config"];
}

TEST_F(InProcess, LocateRefusesABadRoot) {
  ExpectRefusedHere("locate --root " + (dir_ / "nowhere").string(), 2,
                    "is not a directory: give a node's tree");
  ExpectRefusedHere("locate --root " + dir_.string() + " --platform dgx-h100", 2,
                    "with --platform or --expect nothing is detected");
}

TEST_F(InProcess, DoctorWritesEachFormat) {
  const doctor::testing::NodeTree tree(dir_ / "node", {});
  const std::string root = tree.root().string();
  Outcome o = Here("doctor --no-env --root " + root + " --format json");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  EXPECT_FALSE(json.empty());
  o = Here("doctor --no-env --root " + root);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("gpudirect"), std::string::npos) << o.out;
  o = Here("doctor --list");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("gpudirect         GPUDirect RDMA"), std::string::npos) << o.out;
}

TEST_F(InProcess, DoctorRefusesBadInputWithTheFix) {
  ExpectRefusedHere("doctor --root " + (dir_ / "nowhere").string(), 2, "is not a directory");
  ExpectRefusedHere("doctor --root " + dir_.string() + " --timeout 0", 2,
                    "--timeout must be a positive number");
}

TEST_F(InProcess, FabricWritesEachFormat) {
  Outcome o = Here("fabric --from " + FabricData("healthy") + " --format json");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_FALSE(nlohmann::json::parse(o.out).empty());
  o = Here("fabric --from " + FabricData("healthy") + " --format svg");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("<svg", 0), 0u) << o.out.substr(0, 100);
  o = Here("fabric --from " + FabricData("healthy"));
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_FALSE(o.out.empty());
}

TEST_F(InProcess, FabricRefusesBadInputWithTheFix) {
  ExpectRefusedHere("fabric --from /nonexistent/dir", 2, "is not a directory");
  ExpectRefusedHere("fabric --from " + FabricData("healthy") + " --expect fast", 2, "e.g. 4xNDR");
}

TEST_F(InProcess, WatchWritesEachFormat) {
  std::string records;
  for (int step = 0; step < 10; ++step) records += InspectorLine(0, step) + InspectorLine(1, step);
  const std::string file = Write("job.jsonl", records);
  Outcome o = Here("watch --format json " + file);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  ASSERT_EQ(json.size(), 1u) << o.out;
  EXPECT_EQ(json[0]["records"], 20);
  o = Here("watch " + file);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("all_reduce"), std::string::npos) << o.out;
}

TEST_F(InProcess, WatchRefusesBadInputWithTheFix) {
  ExpectRefusedHere("watch " + Write("junk.jsonl", "not json\n"), 2, "no collective records in");
  ExpectRefusedHere("watch", 2, "give JSONL files or directories, or --prometheus URL");
}

TEST_F(InProcess, ModelWritesEachFormat) {
  Outcome o = Here("model --platform dgx-h100 --nodes 2 -b 1M -e 1M --format json");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  EXPECT_EQ(json["platform"], "dgx-h100") << o.out;
  o = Here("model --platform dgx-h100 --nodes 2 -b 1M -e 1M");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("all_reduce"), std::string::npos) << o.out;
}

TEST_F(InProcess, ModelRefusesBadInputWithTheFix) {
  ExpectRefusedHere("model --platform dgx-nonsense", 2, "unknown platform 'dgx-nonsense'");
  ExpectRefusedHere("model --platform dgx-h100 --calibrate /nonexistent/run.log", 2,
                    "/nonexistent/run.log");
}

TEST_F(InProcess, UnknownCommandAndBadFlagsAreUsageErrors) {
  ExpectRefusedHere("frobnicate", 2, "unknown command 'frobnicate'");
  ExpectRefusedHere("analyze --bogus", 2, "Run 'fabricscope analyze --help' for the flags.");
}

}  // namespace
}  // namespace fabricscope
