// `fabricscope run` as a user runs it: real Gloo and every bad input, in this process on
// string streams; the binary for its nccl-tests names (argv[0]) and the environment.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/in_process.h"
namespace {

namespace fs = std::filesystem;
using fabricscope::test::Outcome;
using fabricscope::test::Slurp;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

class CliTest : public fabricscope::test::InProcessTest {
 protected:
  std::string PerfBinary(const std::string& name) const {
    return (fs::path(FABRICSCOPE_BINARY).parent_path() / name).string();
  }
};

TEST_F(CliTest, HelpDocumentsEveryFlag) {
  const Outcome o = Here("run --help");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* flag : {"-t,--nthreads",
                           "-g,--ngpus",
                           "-b,--minbytes",
                           "-e,--maxbytes",
                           "-i,--stepbytes",
                           "-f,--stepfactor",
                           "-n,--iters",
                           "-w,--warmup_iters",
                           "-m,--agg_iters",
                           "-N,--run_cycles",
                           "-p,--parallel_init",
                           "-c,--check",
                           "-o,--op",
                           "-d,--datatype",
                           "-r,--root",
                           "-z,--blocking",
                           "-y,--stream_null",
                           "-T,--timeout",
                           "-G,--cudagraph",
                           "-C,--report_cputime",
                           "-S,--report_timestamps",
                           "-J,--output_file",
                           "-a,--average",
                           "-R,--local_register",
                           "-M,--memory",
                           "-u,--unalign",
                           "-I,--per_iter_timing",
                           "-K,--per_iter_skip",
                           "--backend",
                           "--nccl-lib",
                           "--gpu-runtime-lib",
                           "--collective",
                           "--format",
                           "--output",
                           "--memory-limit",
                           "--inject-fault",
                           "--inject-size-fault"}) {
    EXPECT_NE(o.out.find(flag), std::string::npos) << flag;
  }
}

TEST_F(CliTest, TextOutputFollowsTheNcclTestsLayoutLineByLine) {
  const Outcome o = Here("run -t 2 -b 1K -e 4K -f 2 -n 3");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto lines = Lines(o.out);
  ASSERT_EQ(lines.size(), 20u) << o.out;
  EXPECT_TRUE(std::regex_match(
      lines[0],
      std::regex(R"(# fabricscope version \d+\.\d+\.\d+ backend=gloo gloo-library=0\.5\.0)")))
      << lines[0];
  EXPECT_EQ(lines[1], "# Collective test starting: all_reduce_perf");
  EXPECT_EQ(lines[2],
            "# nThread 2 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 1 "
            "iters: 3 agg iters: 1 validation: 1 graph: 0 unalign: 0");
  EXPECT_EQ(lines[3], "#");
  EXPECT_EQ(lines[4], "# Using devices");
  // One line per rank, in rank order; thread t of the process drives device t.
  for (int r = 0; r < 2; ++r) {
    const std::regex rank_line("#  Rank  " + std::to_string(r) + R"( Group  0 Pid +\d+ on +\S+ )" +
                               "device  " + std::to_string(r) + R"( \[host\] host memory.*)");
    EXPECT_TRUE(std::regex_match(lines[5 + static_cast<size_t>(r)], rank_line))
        << lines[5 + static_cast<size_t>(r)];
  }
  EXPECT_EQ(lines[7], "#");
  EXPECT_EQ(lines[8],
            "#                                                              out-of-place           "
            "            in-place          ");
  EXPECT_EQ(lines[9],
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong "
            "    time   algbw   busbw  #wrong ");
  EXPECT_EQ(lines[10],
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
            "    (us)  (GB/s)  (GB/s)         ");
  // The sizes in sweep order, 1024, 2048, 4096.
  for (size_t i = 11; i < 14; ++i) {
    const std::regex row(
        " {8}" + std::to_string(1024 << (i - 11)) +
        R"( {9,11}\d+ {5}float {5}sum {6}-1( {2}[ \d.e+]{7} {2}[ \d.e+]{6} {2}[ \d.e+]{6} {7}0){2})");
    EXPECT_TRUE(std::regex_match(lines[i], row)) << lines[i];
  }
  EXPECT_EQ(lines[14], "# Out of bounds values : 0 OK");
  EXPECT_TRUE(std::regex_match(lines[15], std::regex(R"(# Avg bus bandwidth    : [\d.e+-]+ )")))
      << lines[15];
  EXPECT_EQ(lines[16], "#");
  EXPECT_EQ(lines[17], "# Collective test concluded: all_reduce_perf");
  EXPECT_EQ(lines[18], "#");
  EXPECT_EQ(lines[19], "");
}

TEST_F(CliTest, NcclTestsNamesDispatchOnArgv0) {
  for (const char* name :
       {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "broadcast_perf",
        "reduce_perf", "alltoall_perf", "sendrecv_perf", "gather_perf", "scatter_perf"}) {
    const Outcome o = RunProgram(PerfBinary(name), "-t 2 -b 1K -e 1K -n 2");
    EXPECT_EQ(o.exit_code, 0) << name << ": " << o.err;
    EXPECT_NE(o.out.find(std::string("# Collective test starting: ") + name), std::string::npos)
        << o.out;
    EXPECT_NE(o.out.find("# Out of bounds values : 0 OK"), std::string::npos) << o.out;
  }
  const Outcome help = RunProgram(PerfBinary("broadcast_perf"), "--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.find("--collective"), std::string::npos);  // fixed by the name
  EXPECT_NE(help.out.find("--minbytes"), std::string::npos);
}

TEST_F(CliTest, InjectedFaultFailsTheRun) {
  const Outcome o = Here("run -t 2 -b 1K -e 4K -f 2 -n 2 --inject-fault 1");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.out.find("# Out of bounds values : 6 FAILED"), std::string::npos) << o.out;
  // The #wrong column shows the corrupted element in both halves.
  EXPECT_TRUE(std::regex_search(o.out, std::regex(R"(float +sum +-1 .* +1 .* +1\n)"))) << o.out;
}

TEST_F(CliTest, NoCheckPrintsNotAvailable) {
  const Outcome o = Here("run -t 2 -b 1K -e 1K -n 2 -c 0");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(std::regex_search(o.out, std::regex(R"(    N/A  .*    N/A\n)"))) << o.out;
}

TEST_F(CliTest, EveryCollectiveInOneRunGetsItsOwnBlock) {
  const Outcome o = Here("run -t 3 --collective all -b 1K -e 2K -f 2 -n 2 -r -1");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t pos = o.out.find(what); pos != std::string::npos; pos = o.out.find(what, pos + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("# Collective test starting:"), 9u);
  EXPECT_EQ(count("# Collective test concluded:"), 9u);
  EXPECT_EQ(count("# Out of bounds values : 0 OK"), 9u);
  EXPECT_EQ(count("# fabricscope version"), 1u);
}

TEST_F(CliTest, JsonFileAndJsonFormatCarryTheRecord) {
  const fs::path json = dir_ / "r.json";
  const Outcome o =
      Here("run -t 2 -b 1K -e 4K -f 2 -n 2 -d all -o sum --format json -J " + json.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (const std::string& text : {o.out, Slurp(json)}) {
    const auto doc = nlohmann::json::parse(text);
    EXPECT_EQ(doc["backend"], "gloo");
    EXPECT_EQ(doc["config"]["nthreads"], 2);
    EXPECT_EQ(doc["config"]["devices"].size(), 2u);
    ASSERT_EQ(doc["results"].size(), 30u);  // 3 sizes x 10 types
    for (const auto& r : doc["results"]) {
      for (const char* half : {"out_of_place", "in_place"}) {
        EXPECT_EQ(r[half]["nwrong"], 0);
        EXPECT_GT(r[half]["time"].get<double>(), 0);
        EXPECT_EQ(r[half]["rank_times"]["per_rank_us"].size(), 2u);
      }
    }
    EXPECT_EQ(doc["out_of_bounds"]["count"], 0);
    EXPECT_EQ(doc["out_of_bounds"]["okay"], "true");
    EXPECT_FALSE(doc["end_time"].is_null());
  }
}

TEST_F(CliTest, CsvHasOneLinePerSizeAndPlacement) {
  const fs::path csv = dir_ / "r.csv";
  const Outcome o = Here("run -t 2 -b 1K -e 4K -f 2 -n 2 --format csv --output " + csv.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(o.out.empty());
  const auto lines = Lines(Slurp(csv));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0].rfind("collective,size,count,type,redop,root,placement", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("all_reduce,1024,256,float,sum,-1,out_of_place,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("all_reduce,1024,256,float,sum,-1,in_place,", 0), 0u) << lines[2];
}

TEST_F(CliTest, MinimumBandwidthFromTheEnvironmentFailsTheRun) {
  const Outcome o =
      RunProgram(FABRICSCOPE_BINARY, "run -t 2 -b 1K -e 1K -n 2", "NCCL_TESTS_MIN_BW=1e9");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_TRUE(std::regex_search(o.out, std::regex(R"(# Avg bus bandwidth    : \S+ FAILED)")))
      << o.out;
}

TEST_F(CliTest, SizesBeyondMemoryAreCappedWithNcclTestsMessage) {
  const Outcome o = Here("run -t 1 -b 8 -e 1T -f 1024 -n 1 -c 0 --memory-limit 256M");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  // 256 MiB - 128 MiB headroom, over 3 buffers (no check) x 1 rank.
  EXPECT_NE(o.out.find("# Reducing maxBytes to 44739242 due to memory limitation"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("maxBytes 44739242"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("8589934592"), std::string::npos);  // 8 GiB was not attempted
  // Against the machine's real memory: a terabyte is always capped.
  const Outcome real = Here("run -t 1 -b 8 -e 1T -f 1024 -n 1 -c 0");
  EXPECT_EQ(real.exit_code, 0) << real.err;
  EXPECT_NE(real.out.find("due to memory limitation"), std::string::npos) << real.out;
}

TEST_F(CliTest, LocalDefaultSaysWhatItRan) {
  const Outcome o = Here("run");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("fabricscope run without arguments"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("maxBytes 67108864 step: 4(factor)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("# Out of bounds values : 0 OK"), std::string::npos) << o.out;
}

TEST_F(CliTest, BadInputsGetAClearErrorAndExitCode) {
  ExpectRefusedHere("run --bogus", 2, "--bogus");
  ExpectRefusedHere("run -t abc", 2, "--nthreads");
  ExpectRefusedHere("run -b 12Q", 2, "-b/--minbytes");
  ExpectRefusedHere("run -b 64M -e 1M", 2, "give -b <= -e");
  ExpectRefusedHere("run -b 8 -e 64 -i 0", 2, "-i 0");
  ExpectRefusedHere("run -b 0 -e 64 -f 2", 2, "never grows");
  ExpectRefusedHere("run -d float128", 2, "unknown data type 'float128'");
  ExpectRefusedHere("run --backend gloo -d f8e4m3", 2,
                    "backend gloo does not support type 'f8e4m3'; it supports int8");
  ExpectRefusedHere("run --backend gloo -d f8e5m2", 2,
                    "'f8e5m2' is NCCL's, from NCCL 2.24 on NVIDIA GPUs (--backend nccl)");
  ExpectRefusedHere("run --backend mpi -o mulsum", 2,
                    "'mulsum' is NCCL's, from NCCL 2.11 on NVIDIA GPUs (--backend nccl)");
  ExpectRefusedHere("run -o xor", 2, "unknown op 'xor'");
  ExpectRefusedHere("run --collective allreduce", 2, "unknown collective 'allreduce'");
  ExpectRefusedHere("run --backend bogus", 2,
                    "unknown backend 'bogus': available backends are gloo, mpi, nccl, rccl");
  ExpectRefusedHere("run --format xml", 2, "xml");
  ExpectRefusedHere("run -t 2 --collective broadcast -r 5 -b 1K -e 1K", 2,
                    "root 5 (-r) is out of range for 2 ranks");
  ExpectRefusedHere("run -t 0", 2, "--nthreads: 0 is out of range: give 1 to 1024 threads");
  ExpectRefusedHere("run -z 7", 2, "--blocking: 7 is out of range: give 0, 1, 2 or 3");
  ExpectRefusedHere("run -a 4", 2, "--average: 4 is out of range");
  ExpectRefusedHere("run -T -1", 2, "--timeout: -1 is out of range: give 0");
  ExpectRefusedHere("run -D 1", 2, "-D/--device_implementation 1");
  ExpectRefusedHere("run -g 2", 2, "needs a GPU backend");
  ExpectRefusedHere("run -G 1", 2, "CUDA graphs");
  ExpectRefusedHere("run -b 8 -e 8 -J /nonexistent-dir/r.json", 3, "cannot write JSON results");
  ExpectRefusedHere("run -b 8 -e 8 --output /nonexistent-dir/r.txt", 3, "cannot write the report");
  ExpectRefusedHere("frobnicate", 2, "unknown command 'frobnicate'");
}

// Where nccl-tests 2.19.6 prints a note and goes on (src/common.cu:1417-1436), so does run,
// in nccl-tests' words; its device-API flags parse with its defaults.
TEST_F(CliTest, NcclTestsNotesAndGoesOn) {
  Outcome o = Here("run -t 2 -b 1K -e 1K -n 5 -I 1 -K 5");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("per-iteration skip (-K) must be between 0 and 4. Disabling."),
            std::string::npos)
      << o.err;
  o = Here("run -t 2 -b 1K -e 1K -n 2 -K 1");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling."),
            std::string::npos)
      << o.err;
  o = Here("run -t 2 -b 1K -e 1K -n 2 -x 1 -V 0");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("Option -x (cta_policy) 1 is not applied"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("device_cta_count (-V) must be positive and less than 128, got 0. Using "
                       "default value 16."),
            std::string::npos)
      << o.err;
  o = Here("run -t 2 -b 1K -e 1K -n 2 -x -1 -D 0 -V 16");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.err.find("Ignoring"), std::string::npos) << o.err;
}

TEST_F(CliTest, UnwritableJsonPathFailsBeforeTheSweep) {
  const Outcome o = Here("run -b 8 -e 8 -J /nonexistent-dir/r.json");
  EXPECT_TRUE(o.out.empty()) << o.out;  // nothing was run
}

}  // namespace
