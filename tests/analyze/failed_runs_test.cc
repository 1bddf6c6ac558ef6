// Failed runs are results (a FAIL in the log's own words, with its line), rows are read by
// the header's columns when a field is missing, and a device list cut to its last line still
// tells the rank and node count. Fixtures in the layouts nccl-tests prints.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fabricscope/analyze.h"
#include "fabricscope/parse.h"
#include "fixtures.h"

namespace fabricscope {
namespace {

using fixtures::Format;

std::string Dump(const ParsedResults& parsed) {
  std::string text;
  for (const Diagnostic& d : parsed.diagnostics) text += d.ToString() + "\n";
  return text;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// nccl-tests 2.13's header and device lines on two hosts of 8 H100s.
std::string Header(const std::string& collective = "all_reduce") {
  std::string text = "# nccl-tests version 2.13.10 nccl-headers=22105 nccl-library=22105\n";
  text += "# Collective test starting: " + collective + "_perf\n";
  text +=
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  for (int r = 0; r < 16; ++r) {
    text += Format("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] %s\n", r, 4000 + r,
                   r < 8 ? "gpu-a01" : "gpu-a02", r % 8, 0x18 + r % 8, "NVIDIA H100 80GB HBM3");
  }
  return text;
}

const char kColumns[] =
    "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    "(us)  (GB/s)  (GB/s)\n";

std::string Row(long size, long wrong) {
  return Format("%12ld  %12ld  %8s  %6s  %6i  %7s  %6s  %6s  %6ld  %7s  %6s  %6s  %6ld\n", size,
                size / 4, "float", "sum", -1, "100.0", "10.00", "18.75", wrong, "100.0", "10.00",
                "18.75", wrong);
}

TEST(FailedRun, NcclFailureBeforeTheFirstRowIsAFailedTestWithItsLine) {
  const std::string text =
      Header() + "gpu-a01: NCCL failure all_reduce.cu:95 'unhandled cuda error'\n";
  const ParsedResults parsed = ParseResults(text, "crash.log");
  EXPECT_FALSE(parsed.HasErrors()) << Dump(parsed);
  ASSERT_EQ(parsed.runs.size(), 1u);
  const std::vector<TestAnalysis> tests = Analyze(parsed.runs[0]);
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_EQ(tests[0].collective, "all_reduce");
  EXPECT_EQ(tests[0].status(), "FAILED");
  ASSERT_EQ(tests[0].failures.size(), 1u);
  EXPECT_EQ(tests[0].failures[0],
            "crash.log:22: gpu-a01: NCCL failure all_reduce.cu:95 'unhandled cuda error'");
  EXPECT_EQ(tests[0].ranks, 16);
  EXPECT_EQ(tests[0].nodes, 2);
}

TEST(FailedRun, WithoutAHeaderTheFailureLineNamesTheCollective) {
  const ParsedResults parsed =
      ParseResults("gpu-a01: NCCL failure all_gather.cu:95 'unhandled cuda error'\n", "bare.log");
  EXPECT_FALSE(parsed.HasErrors()) << Dump(parsed);
  const std::vector<TestAnalysis> tests = Analyze(parsed.runs.at(0));
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_EQ(tests[0].collective, "all_gather");
  EXPECT_EQ(tests[0].failures.at(0),
            "bare.log:1: gpu-a01: NCCL failure all_gather.cu:95 'unhandled cuda error'");
}

TEST(FailedRun, EveryKindOfFailureLineIsKeptOnce) {
  std::string text = Header() + kColumns + Row(1024, 0);
  for (const char* line : {
           "gpu-a01: Test CUDA failure common.cu:892 'out of memory'",
           "gpu-a02: Cuda failure 'an illegal memory access was encountered'",
           "gpu-a02:4009:4100 [1] NCCL WARN NET/IB : Got completion with error 12",
           "gpu-a02:4010:4100 [2] NCCL WARN NET/IB : Got completion with error 12",
           " gpu-a01 pid 4000: Test failure common.cu:401",
           "RuntimeError: CUDA error: uncorrectable ECC error encountered",
       }) {
    text += std::string(line) + "\n";
  }
  const ParsedResults parsed = ParseResults(text, "bad.log");
  ASSERT_EQ(parsed.runs.size(), 1u);
  const std::vector<TestAnalysis> tests = Analyze(parsed.runs[0]);
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_EQ(tests[0].rows, 1u);
  EXPECT_EQ(tests[0].status(), "FAILED");
  // Two ranks printing the same WARN are one failure; each other line is its own.
  ASSERT_EQ(tests[0].failures.size(), 5u);
  EXPECT_TRUE(Contains(tests[0].failures[0], "bad.log:26: gpu-a01: Test CUDA failure"));
  EXPECT_TRUE(Contains(tests[0].failures[1], "bad.log:27: gpu-a02: Cuda failure"));
  EXPECT_EQ(tests[0].failures[2],
            "bad.log:28: gpu-a02:4009:4100 [1] NCCL WARN NET/IB : Got completion with error 12");
  EXPECT_TRUE(Contains(tests[0].failures[3], "bad.log:30: gpu-a01 pid 4000: Test failure"));
  EXPECT_TRUE(
      Contains(tests[0].failures[4], "bad.log:31: RuntimeError: CUDA error: uncorrectable"));
}

TEST(FailedRun, CutOffBeforeItsFirstRowIsAFailure) {
  const ParsedResults parsed = ParseResults(Header() + kColumns, "cut.log");
  EXPECT_FALSE(parsed.HasErrors()) << Dump(parsed);
  ASSERT_EQ(parsed.runs.size(), 1u);
  const std::vector<TestAnalysis> tests = Analyze(parsed.runs[0]);
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_EQ(tests[0].status(), "FAILED");
  EXPECT_TRUE(Contains(tests[0].failures.at(0), "cut.log:1: the run was cut off before its first"))
      << tests[0].failures[0];
}

TEST(FailedRun, WrongElementsAndAFailedTrailerAreFailures) {
  std::string text = Header() + kColumns + Row(1024, 3) +
                     "# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 18.75 \n";
  std::vector<TestAnalysis> tests = Analyze(ParseResults(text, "wrong.log").runs.at(0));
  EXPECT_EQ(tests.at(0).status(), "FAILED");
  ASSERT_EQ(tests[0].failures.size(), 1u);
  EXPECT_EQ(tests[0].failures[0], "6 wrong elements in 2 results (size x placement)");

  // Before 2.13 the column held a deviation, so only the trailer says FAILED.
  text =
      Header() +
      "#\n#       size         count      type   redop     time   algbw   busbw  error     "
      "time   algbw   busbw  error\n" +
      Format("%12d  %12d  %8s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", 1024, 256, "float",
             "sum", "100.0", "10.00", "18.75", "4e+01", "100.0", "10.00", "18.75", "4e+01") +
      "# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 18.75 \n";
  const ParsedResults parsed = ParseResults(text, "old.log");
  tests = Analyze(parsed.runs.at(0));
  EXPECT_FALSE(tests.at(0).wrong.has_value());
  EXPECT_EQ(tests[0].status(), "FAILED");
  ASSERT_EQ(tests[0].failures.size(), 1u);
  EXPECT_EQ(tests[0].failures[0], "old.log:25: Out of bounds values : 2 FAILED");
  // The summary shows it in its status column.
  const std::string summary = FindAnalysisFormat("text").render(tests, {});
  EXPECT_TRUE(Contains(summary, "FAILED")) << summary;
  EXPECT_TRUE(Contains(summary, "FAILED: old.log:25: Out of bounds values : 2 FAILED")) << summary;
}

TEST(FailedRun, AHealthyRunIsOk) {
  const std::string text = Header() + kColumns + Row(1024, 0) + Row(2048, 0) +
                           "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 18.75 \n";
  const std::vector<TestAnalysis> tests = Analyze(ParseResults(text, "ok.log").runs.at(0));
  EXPECT_EQ(tests.at(0).status(), "ok");
  EXPECT_TRUE(tests[0].failures.empty());
}

// nccl-tests before 2.13 printed alltoall's redop as an empty %6s: 11 fields under 12 names.
TEST(ByColumns, AnEmptyRedopIsReadAgainstTheHeader) {
  std::string text = Header("alltoall") +
                     "#\n#       size         count      type   redop     time   algbw   busbw  "
                     "error     time   algbw   busbw  error\n";
  for (long size : {1024L, 2048L, 4096L}) {
    text +=
        Format("%12ld  %12ld  %8s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", size, size / 64,
               "float", "", "30.00", "0.03", "0.03", "0e+00", "29.00", "0.04", "0.03", "0e+00");
  }
  text += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.03 \n";
  const ParsedResults parsed = ParseResults(text, "a2a.log");
  EXPECT_FALSE(parsed.HasErrors()) << Dump(parsed);
  ASSERT_EQ(parsed.runs.size(), 1u);
  ASSERT_EQ(parsed.runs[0].rows.size(), 3u) << Dump(parsed);
  const ResultRow& row = parsed.runs[0].rows[1];
  EXPECT_EQ(row.collective, "alltoall");
  EXPECT_EQ(row.redop, "none");
  EXPECT_EQ(row.size, 2048u);
  ASSERT_TRUE(row.out_of_place && row.in_place);
  EXPECT_EQ(row.out_of_place->time_us, 30.0);
  EXPECT_EQ(row.in_place->time_us, 29.0);
  EXPECT_EQ(row.in_place->algbw, 0.04);
}

TEST(ByColumns, AMissingNumberIsAnErrorNamingItsColumn) {
  std::string text = Header() + kColumns;
  // The out-of-place busbw is blank.
  text += Format("%12d  %12d  %8s  %6s  %6i  %7s  %6s  %6s  %6d  %7s  %6s  %6s  %6d\n", 1024, 256,
                 "float", "sum", -1, "100.0", "10.00", "", 0, "100.0", "10.00", "18.75", 0);
  const ParsedResults parsed = ParseResults(text, "gap.log");
  ASSERT_TRUE(parsed.HasErrors());
  EXPECT_TRUE(Contains(Dump(parsed), "gap.log:25: error:")) << Dump(parsed);
  EXPECT_TRUE(Contains(Dump(parsed), "nothing is under 'busbw' (column 8)")) << Dump(parsed);
}

TEST(ByColumns, AValueWiderThanItsColumnStillReads) {
  std::string text = Header() + kColumns;
  text += Format("%12ld  %12ld  %8s  %6s  %6i  %7s  %6s  %6s  %6d  %7s  %6s  %6s  %6d\n",
                 17179869184L, 4294967296L, "float", "sum", -1, "123456789.0", "1234.56", "2314.80",
                 0, "123456789.0", "1234.56", "2314.80", 0);
  const ParsedResults parsed = ParseResults(text, "wide.log");
  ASSERT_EQ(parsed.runs.at(0).rows.size(), 1u) << Dump(parsed);
  EXPECT_EQ(parsed.runs[0].rows[0].in_place->busbw, 2314.80);
}

// GB200 runs published with only the last device line.
TEST(DeviceList, CutToItsLastLineStillTellsRanksAndNodes) {
  std::string text =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
      "#  Rank 143 Group  0 Pid  77000 on nvl72-r2-n35 device  3 [0019:01:00] NVIDIA GB200\n";
  text += kColumns;
  text += Row(1024, 0);
  text += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 18.75 \n";
  const ParsedResults parsed = ParseResults(text, "gb200.log");
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].nranks, 144);
  const std::vector<TestAnalysis> tests = Analyze(parsed.runs[0]);
  EXPECT_EQ(tests.at(0).ranks, 144);
  EXPECT_EQ(tests[0].nodes, 36);
  EXPECT_EQ(tests[0].nodes_from, "ranks / GPUs per node");
}

}  // namespace
}  // namespace fabricscope
