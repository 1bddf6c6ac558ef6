// The text reporter against nccl-tests 2.19's layout, line by line, plus the trailer
// arithmetic (Summarize), the --format registry and the progress meter.
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/report.h"
#include "fabricscope/result.h"
#include "test_run.h"

namespace fabricscope {
namespace {

using testing::Drive;
using testing::Half;
using testing::Lines;
using testing::MakeRow;
using testing::MakeRun;

// The golden lines below were rendered from nccl-tests' C format strings (see
// docs/output.md); the trailing spaces are part of the layout.
const std::vector<std::string> kTableHeader = {
    "#",
    "#                                                              out-of-place                  "
    "     in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time"
    "   algbw   busbw  #wrong ",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)"
    "  (GB/s)  (GB/s)         ",
};

const char kRow1[] =
    "        1024           256     float     sum      -1    28.39    0.04    1.50       0   116.20"
    "    0.01    2.25       0";
const char kRow2[] =
    "        2048           512     float     sum      -1  12416.4    0.17    3.00       2  1234568"
    "  1000.6    4.50       0";

std::string Render(const RunResult& run) {
  std::ostringstream out;
  auto reporter = MakeReporter("text", out);
  Drive(*reporter, run);
  return out.str();
}

// The lines of the table only: from the header's "#" to the last row.
std::vector<std::string> TableOf(const std::vector<std::string>& lines) {
  size_t begin = 0;
  while (begin < lines.size() && lines[begin] != "# Using devices") ++begin;
  while (begin < lines.size() && lines[begin] != "#") ++begin;
  size_t end = begin;
  while (end < lines.size() && lines[end].rfind("# Out of bounds", 0) != 0) ++end;
  return {lines.begin() + static_cast<long>(begin), lines.begin() + static_cast<long>(end)};
}

TEST(TextReporter, WholeRunMatchesNcclTestsLayout) {
  std::vector<std::string> expected = {
      "# fabricscope version 0.1.0 backend=gloo gloo-library=0.5.0",
      "# Collective test starting: all_reduce_perf",
      "# nThread 2 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 1 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0 unalign: 0",
      "#",
      "# Using devices",
      "#  Rank  0 Group  0 Pid  12345 on      node1 device  0 [host] host memory (Xeon)",
      "#  Rank  1 Group  0 Pid  12345 on      node1 device  1 [host] host memory (Xeon)",
  };
  expected.insert(expected.end(), kTableHeader.begin(), kTableHeader.end());
  expected.insert(expected.end(), {
                                      kRow1,
                                      kRow2,
                                      "# Out of bounds values : 1 FAILED",
                                      "# Avg bus bandwidth    : 2.8125 ",
                                      "#",
                                      "# Collective test concluded: all_reduce_perf",
                                      "#",
                                      "",
                                  });
  const std::vector<std::string> lines = Lines(Render(MakeRun()));
  ASSERT_EQ(lines.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(lines[i], expected[i]) << "line " << i;
}

TEST(TextReporter, HeaderLinesHaveNcclTestsWidths) {
  // A row is 52 + 2 x 33 characters; the header adds the width-0 timestamp's space.
  EXPECT_EQ(std::string(kRow1).size(), 118u);
  EXPECT_EQ(kTableHeader[1].size(), 116u);
  EXPECT_EQ(kTableHeader[2].size(), 119u);
  EXPECT_EQ(kTableHeader[3].size(), 119u);
}

TEST(TextReporter, StepInBytesWhenNoFactor) {
  RunResult run = MakeRun();
  run.config.step_factor = 1;
  const std::vector<std::string> lines = Lines(Render(run));
  EXPECT_EQ(lines[2],
            "# nThread 2 nGpus 1 minBytes 1024 maxBytes 2048 step: 1048576(bytes) warmup iters: 1 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0");
}

TEST(TextReporter, UncheckedHalvesPrintNA) {
  RunResult run = MakeRun();
  run.config.check = 0;
  run.rows.resize(1);
  run.rows[0].out_of_place->wrong.reset();
  run.rows[0].in_place->wrong.reset();
  const std::vector<std::string> table = TableOf(Lines(Render(run)));
  ASSERT_EQ(table.size(), 5u);
  EXPECT_EQ(table[4],
            "        1024           256     float     sum      -1    28.39    0.04    1.50    N/A"
            "   116.20    0.01    2.25    N/A");
  // Nothing was checked, so nothing is out of bounds.
  const std::string text = Render(run);
  EXPECT_NE(text.find("# Out of bounds values : 0 OK\n"), std::string::npos);
}

TEST(TextReporter, PerIterationColumns) {
  RunResult run = MakeRun();
  run.config.per_iter_timing = 1;
  run.rows.resize(1);
  run.rows[0].out_of_place->iterations = IterationStats{25.5, 40.25, 39.9, 12.345};
  const std::vector<std::string> table = TableOf(Lines(Render(run)));
  const std::vector<std::string> expected = {
      "#",
      "#                                                                 out-of-place (+ "
      "per-iteration)                                in-place (+ per-iteration)",
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong    "
      "i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    "
      "i_p99    i_cv% ",
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             "
      "(us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     "
      "(us)      (%) ",
      // The in-place half has no per-iteration stats: N/A keeps the columns.
      "        1024           256     float     sum      -1    28.39    0.04    1.50       0    "
      "25.50    40.25    39.90    12.35   116.20    0.01    2.25       0      N/A      N/A      "
      "N/A      N/A",
  };
  EXPECT_EQ(table, expected);
}

TEST(TextReporter, PerIterationHeaderLineMentionsSkip) {
  RunResult run = MakeRun();
  run.config.per_iter_timing = 1;
  run.config.per_iter_skip = 3;
  const std::vector<std::string> lines = Lines(Render(run));
  EXPECT_EQ(lines[3],
            "# Per-Iteration Report: host clock timing; summary skips first 3 iterations ");
  EXPECT_EQ(lines[4], "#");
}

TEST(TextReporter, TimestampColumn) {
  RunResult run = MakeRun();
  run.config.report_timestamps = 1;
  run.rows.resize(1);
  run.rows[0].timestamp = "2025-01-02 03:04:05";
  const std::vector<std::string> table = TableOf(Lines(Render(run)));
  const std::vector<std::string> expected = {
      "#",
      kTableHeader[1],
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
      "time"
      "   algbw   busbw  #wrong           timestamp",
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             "
      "(us)"
      "  (GB/s)  (GB/s)           %Y-%m-%d %H:%M:%S",
      std::string(kRow1) + "  2025-01-02 03:04:05",
  };
  EXPECT_EQ(table, expected);
}

// -C: nccl-tests heads both time columns "cputime" (writeResultHeader, src/util.cu:743 at
// 2.19.6), in the same 7 characters.
TEST(TextReporter, CpuTimeHeadsTheTimeColumns) {
  RunResult run = MakeRun();
  run.config.report_cputime = 1;
  const std::vector<std::string> table = TableOf(Lines(Render(run)));
  ASSERT_GE(table.size(), 3u);
  EXPECT_EQ(
      table[2],
      "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  "
      "cputime   algbw   busbw  #wrong ");
}

TEST(TextReporter, PerIterationWithTimestamps) {
  RunResult run = MakeRun();
  run.config.per_iter_timing = 1;
  run.config.report_timestamps = 1;
  run.rows.resize(1);
  run.rows[0].timestamp = "2025-01-02 03:04:05";
  const std::vector<std::string> table = TableOf(Lines(Render(run)));
  ASSERT_EQ(table.size(), 5u);
  EXPECT_EQ(
      table[2],
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong    "
      "i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    "
      "i_p99    i_cv%           timestamp");
  EXPECT_EQ(
      table[3],
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             "
      "(us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     "
      "(us)      (%)   %Y-%m-%d %H:%M:%S");
  // The timestamp closes the row, after the in-place per-iteration columns.
  EXPECT_EQ(table[4].substr(table[4].size() - 28), "    N/A  2025-01-02 03:04:05");
}

TEST(TextReporter, MissingHalfIsBlank) {
  RunResult run = MakeRun();
  run.rows.resize(1);
  run.rows[0].out_of_place.reset();
  run.rows.push_back(MakeRow(1024, 256, Half(28.391, 0.0361, 1.5, 0), std::nullopt));
  const std::vector<std::string> table = TableOf(Lines(Render(run)));
  ASSERT_EQ(table.size(), 6u);
  EXPECT_EQ(table[4],
            "        1024           256     float     sum      -1                                 "
            "   116.20    0.01    2.25       0");
  EXPECT_EQ(table[5],
            "        1024           256     float     sum      -1    28.39    0.04    1.50       0"
            "                                 ");
  // The average is over the halves that exist: (2.25 + 1.5) / 2.
  EXPECT_NE(Render(run).find("# Avg bus bandwidth    : 1.875 \n"), std::string::npos);
}

TEST(TextReporter, MinimumBandwidthVerdict) {
  RunResult run = MakeRun();
  run.config.min_bw = 3.0;  // 2.8125 >= 0.9 x 3
  EXPECT_NE(Render(run).find("# Avg bus bandwidth    : 2.8125 OK\n"), std::string::npos);
  run.config.min_bw = 3.2;  // 2.8125 < 2.88
  EXPECT_NE(Render(run).find("# Avg bus bandwidth    : 2.8125 FAILED\n"), std::string::npos);
}

TEST(TextReporter, ErrorsCloseTheOutput) {
  RunResult run = MakeRun();
  run.errors = {"rank 1: connection reset", "gloo: timed out"};
  const std::vector<std::string> lines = Lines(Render(run));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[lines.size() - 3], "#");
  EXPECT_EQ(lines[lines.size() - 2], "# error: rank 1: connection reset");
  EXPECT_EQ(lines[lines.size() - 1], "# error: gloo: timed out");
}

TEST(TextReporter, NotesFollowTheDeviceLines) {
  RunResult run = MakeRun();
  run.notes = {"Reducing maxBytes to 1024 due to memory limitation"};
  run.config.blocking = 1;
  run.ranks[1].device_bus_id = "0000:8f:00";
  run.ranks[1].device_name = "NVIDIA H200";
  const std::vector<std::string> lines = Lines(Render(run));
  const std::vector<std::string> expected = {
      "# Blocking Enabled: wait and barrier after each inner iteration (-m) ",
      "#",
      "# Using devices",
      "#  Rank  0 Group  0 Pid  12345 on      node1 device  0 [host] host memory (Xeon)",
      "#  Rank  1 Group  0 Pid  12345 on      node1 device  1 [0000:8f:00] NVIDIA H200",
      "#",
      "# Reducing maxBytes to 1024 due to memory limitation",
      "#",
      kTableHeader[1],
  };
  EXPECT_EQ(std::vector<std::string>(lines.begin() + 3, lines.begin() + 12), expected);
}

TEST(TextReporter, OneBlockPerCollective) {
  RunResult run = MakeRun();
  ResultRow gather = MakeRow(1024, 128, Half(10, 0.1, 7.0, 0), Half(10, 0.1, 9.0, 0), "all_gather");
  gather.redop = "none";
  run.rows.push_back(gather);
  const std::string text = Render(run);
  const std::vector<std::string> lines = Lines(text);
  // One version line, then each collective's own header, table and trailer.
  EXPECT_EQ(text.find("# fabricscope version"), 0u);
  EXPECT_EQ(text.find("# fabricscope version", 1), std::string::npos);
  const std::string concluded = "# Collective test concluded: all_reduce_perf\n#\n";
  const size_t gather_start =
      text.find(concluded + "# Collective test starting: all_gather_perf\n");
  ASSERT_NE(gather_start, std::string::npos);
  EXPECT_NE(text.find("# Avg bus bandwidth    : 2.8125 \n"), std::string::npos);
  EXPECT_NE(text.find("# Avg bus bandwidth    : 8 \n", gather_start), std::string::npos);
  EXPECT_EQ(lines.back(), "");
  EXPECT_EQ(lines[lines.size() - 2], "#");
  EXPECT_EQ(lines[lines.size() - 3], "# Collective test concluded: all_gather_perf");
}

// --- Summarize: the trailer arithmetic ------------------------------------------------------

TEST(Summarize, CountsFailedPlacementsAndAveragesBothHalves) {
  RunResult run = MakeRun();
  run.rows[0].in_place->wrong = 5;
  run.rows[1].in_place->wrong.reset();  // unchecked is not out of bounds
  const TestSummary summary = SummarizeCollective(run, "all_reduce");
  EXPECT_EQ(summary.collective, "all_reduce");
  EXPECT_EQ(summary.rows, 2u);
  EXPECT_EQ(summary.out_of_bounds, 2);
  EXPECT_DOUBLE_EQ(summary.avg_busbw, 2.8125);
  EXPECT_FALSE(summary.okay);
}

TEST(Summarize, MinimumBandwidthMakesTheRunFail) {
  RunResult run = MakeRun();
  run.rows[1].out_of_place->wrong = 0;
  EXPECT_TRUE(SummarizeCollective(run, "all_reduce").okay);
  run.config.min_bw = 3.125;  // 0.9 x 3.125 = 2.8125: exactly at the limit passes
  EXPECT_TRUE(SummarizeCollective(run, "all_reduce").okay);
  run.config.min_bw = 3.2;
  EXPECT_FALSE(SummarizeCollective(run, "all_reduce").okay);
}

TEST(Summarize, GroupsByCollectiveInOrderOfAppearance) {
  RunResult run = MakeRun();
  run.rows.insert(run.rows.begin(), MakeRow(8, 2, Half(1, 1, 10.0, 0), std::nullopt, "broadcast"));
  run.rows.push_back(MakeRow(16, 4, std::nullopt, Half(1, 1, 20.0, 0), "broadcast"));
  const std::vector<TestSummary> summaries = Summarize(run);
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_EQ(summaries[0].collective, "broadcast");
  EXPECT_EQ(summaries[0].rows, 2u);
  EXPECT_DOUBLE_EQ(summaries[0].avg_busbw, 15.0);
  EXPECT_TRUE(summaries[0].okay);
  EXPECT_EQ(summaries[1].collective, "all_reduce");
  EXPECT_EQ(summaries[1].out_of_bounds, 1);
  const TestSummary all = SummarizeAll(run);
  EXPECT_EQ(all.collective, "");
  EXPECT_EQ(all.rows, 4u);
  EXPECT_DOUBLE_EQ(all.avg_busbw, (1.5 + 2.25 + 3 + 4.5 + 10 + 20) / 6);
}

TEST(Summarize, EmptyRunHasZeroBandwidth) {
  RunResult run;
  EXPECT_TRUE(Summarize(run).empty());
  const TestSummary summary = SummarizeCollective(run, "all_reduce");
  EXPECT_EQ(summary.rows, 0u);
  EXPECT_EQ(summary.avg_busbw, 0.0);
  EXPECT_TRUE(summary.okay);
}

// The 16-rank all_gather table of seed 000 (2 x 8 H200, nccl-tests), as printed.
struct SeedRow {
  long size;
  long count;
  double time[2];
  double algbw[2];
  double busbw[2];
};
const SeedRow kSeedAllGather[] = {
    {1024, 16, {28.39, 28.07}, {0.04, 0.04}, {0.03, 0.03}},
    {2048, 32, {28.29, 28.24}, {0.07, 0.07}, {0.07, 0.07}},
    {4096, 64, {28.85, 28.64}, {0.14, 0.14}, {0.13, 0.13}},
    {8192, 128, {34.12, 32.47}, {0.24, 0.25}, {0.23, 0.24}},
    {16384, 256, {33.28, 33.29}, {0.49, 0.49}, {0.46, 0.46}},
    {32768, 512, {34.80, 34.86}, {0.94, 0.94}, {0.88, 0.88}},
    {65536, 1024, {40.62, 41.22}, {1.61, 1.59}, {1.51, 1.49}},
    {131072, 2048, {36.17, 40.87}, {3.62, 3.21}, {3.40, 3.01}},
    {262144, 4096, {41.81, 37.99}, {6.27, 6.90}, {5.88, 6.47}},
    {524288, 8192, {43.98, 45.96}, {11.92, 11.41}, {11.18, 10.69}},
    {1048576, 16384, {58.46, 54.81}, {17.94, 19.13}, {16.82, 17.93}},
    {2097152, 32768, {68.40, 70.87}, {30.66, 29.59}, {28.74, 27.74}},
    {4194304, 65536, {76.56, 76.13}, {54.78, 55.09}, {51.36, 51.65}},
    {8388608, 131072, {86.92, 85.77}, {96.51, 97.81}, {90.47, 91.70}},
    {16777216, 262144, {116.2, 114.9}, {144.43, 146.00}, {135.41, 136.87}},
    {33554432, 524288, {174.4, 172.4}, {192.45, 194.66}, {180.42, 182.49}},
    {67108864, 1048576, {278.1, 270.5}, {241.27, 248.10}, {226.19, 232.59}},
    {134217728, 2097152, {499.6, 483.8}, {268.67, 277.44}, {251.88, 260.10}},
    {268435456, 4194304, {885.5, 870.7}, {303.16, 308.30}, {284.21, 289.03}},
    {536870912, 8388608, {1575.6, 1568.7}, {340.75, 342.24}, {319.45, 320.85}},
    {1073741824, 16777216, {3123.9, 3079.7}, {343.72, 348.65}, {322.23, 326.86}},
    {2147483648, 33554432, {6229.6, 6107.6}, {344.72, 351.61}, {323.18, 329.63}},
    {4294967296, 67108864, {12416, 12133}, {345.92, 354.00}, {324.30, 331.87}},
    {8589934592, 134217728, {24724, 24214}, {347.44, 354.75}, {325.72, 332.58}},
};

RunResult SeedRun() {
  RunResult run;
  run.nranks = 16;
  for (const SeedRow& seed : kSeedAllGather) {
    ResultRow row = MakeRow(static_cast<size_t>(seed.size), static_cast<size_t>(seed.count),
                            Half(seed.time[0], seed.algbw[0], seed.busbw[0], 0),
                            Half(seed.time[1], seed.algbw[1], seed.busbw[1], 0), "all_gather");
    row.redop = "none";
    run.rows.push_back(row);
  }
  return run;
}

TEST(Summarize, SeedAllGatherAveragesTo122073) {
  const RunResult run = SeedRun();
  const std::vector<TestSummary> summaries = Summarize(run);
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_EQ(summaries[0].out_of_bounds, 0);
  char printed[32];
  std::snprintf(printed, sizeof(printed), "%g", summaries[0].avg_busbw);
  EXPECT_STREQ(printed, "122.073");
  const std::string text = Render(run);
  EXPECT_NE(text.find("# Avg bus bandwidth    : 122.073 \n"), std::string::npos);
}

std::vector<std::string> Fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> fields;
  for (std::string field; in >> field;) fields.push_back(field);
  return fields;
}

TEST(TextReporter, SeedRowsKeepTheirColumns) {
  // The seed was printed by an older nccl-tests: its time column differs ("116.2" where
  // 2.19 prints "116.20") and its #wrong column is one narrower. Size, count, type, redop
  // and root share the layout character by character; algbw, busbw and #wrong the values.
  const std::vector<std::string> table = TableOf(Lines(Render(SeedRun())));
  ASSERT_EQ(table.size(), 4 + std::size(kSeedAllGather));
  const char* seed_rows[] = {
      "        1024            16     float    none      -1    28.39    0.04    0.03      0    "
      "28.07    0.04    0.03      0",
      "    16777216        262144     float    none      -1    116.2  144.43  135.41      0    "
      "114.9  146.00  136.87      0",
      "  8589934592     134217728     float    none      -1    24724  347.44  325.72      0    "
      "24214  354.75  332.58      0",
  };
  const size_t indexes[] = {0, 14, 23};
  for (size_t i = 0; i < 3; ++i) {
    const std::string ours = table[4 + indexes[i]];
    const std::string theirs = seed_rows[i];
    EXPECT_EQ(ours.substr(0, 52), theirs.substr(0, 52));
    const std::vector<std::string> our_fields = Fields(ours);
    const std::vector<std::string> their_fields = Fields(theirs);
    ASSERT_EQ(our_fields.size(), 13u);
    ASSERT_EQ(their_fields.size(), 13u);
    for (size_t column : {6u, 7u, 8u, 10u, 11u, 12u}) {
      EXPECT_EQ(our_fields[column], their_fields[column]) << "row " << indexes[i];
    }
  }
}

// --- Registry, fan-out and progress ----------------------------------------------------------

TEST(Reporters, RegistryListsTextJsonCsv) {
  std::vector<std::string> names;
  for (const ReporterEntry& entry : Reporters()) {
    names.emplace_back(entry.name);
    EXPECT_FALSE(entry.description.empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"text", "json", "csv"}));
  std::ostringstream out;
  for (const std::string& name : names) EXPECT_NE(MakeReporter(name, out), nullptr);
}

TEST(Reporters, UnknownFormatListsTheValidOnes) {
  std::ostringstream out;
  try {
    MakeReporter("xml", out);
    FAIL() << "no exception";
  } catch (const UsageError& error) {
    EXPECT_STREQ(error.what(), "unknown --format 'xml': choose one of text, json, csv");
    EXPECT_EQ(error.code(), ErrorCode::kUsage);
  }
}

TEST(Reporters, MultiReporterFeedsEveryReporter) {
  std::ostringstream text;
  std::ostringstream csv;
  MultiReporter multi;
  multi.Add(MakeReporter("text", text));
  multi.Add(MakeReporter("csv", csv));
  Drive(multi, MakeRun());
  EXPECT_EQ(text.str(), Render(MakeRun()));
  EXPECT_EQ(Lines(csv.str()).size(), 5u);  // header + 2 rows x 2 halves
}

TEST(ProgressReporter, RewritesOneLineAndClearsIt) {
  std::ostringstream out;
  auto progress = MakeProgressReporter(out, 40);
  Drive(*progress, MakeRun());
  const std::string first = "\r[fabricscope] all_reduce 1/40 rows  size 1024  busbw 2.25 GB/s";
  const std::string second = "\r[fabricscope] all_reduce 2/40 rows  size 2048  busbw 4.50 GB/s";
  const std::string clear = "\r" + std::string(second.size() - 1, ' ') + "\r";
  EXPECT_EQ(out.str(), first + second + clear);
  EXPECT_EQ(out.str().find('\n'), std::string::npos);
}

TEST(ProgressReporter, SilentWithoutRows) {
  std::ostringstream out;
  auto progress = MakeProgressReporter(out, 0);
  RunResult run = MakeRun();
  run.rows.clear();
  Drive(*progress, run);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace fabricscope
