// The text reader on every layout x every launcher prefix, and on what goes wrong in logs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/line_prefix.h"
#include "fabricscope/analyze.h"
#include "fabricscope/parse.h"
#include "fixtures.h"

namespace fabricscope {
namespace {

using fixtures::AllLayouts;
using fixtures::AllPrefixes;
using fixtures::FixtureLines;
using fixtures::FixtureRows;
using fixtures::Layout;
using fixtures::Prefix;

size_t Count(const ParsedResults& parsed, Diagnostic::Severity severity) {
  size_t n = 0;
  for (const Diagnostic& d : parsed.diagnostics) n += d.severity == severity ? 1 : 0;
  return n;
}

std::string Dump(const ParsedResults& parsed) {
  std::string text;
  for (const Diagnostic& d : parsed.diagnostics) text += d.ToString() + "\n";
  return text;
}

class LayoutTimesPrefix : public ::testing::TestWithParam<std::tuple<Layout, Prefix>> {};

TEST_P(LayoutTimesPrefix, ReadsEveryRowAsPrinted) {
  const auto& [layout, prefix] = GetParam();
  const std::string text = fixtures::WithPrefix(FixtureLines(layout), prefix.text);
  const ParsedResults parsed = ParseResults(text, "fixture.log");
  ASSERT_EQ(Count(parsed, Diagnostic::Severity::kError), 0u) << Dump(parsed) << text;
  ASSERT_EQ(parsed.runs.size(), 1u) << Dump(parsed) << text;
  const RunResult& run = parsed.runs[0];
  const std::vector<fixtures::FixtureRow> expected = FixtureRows();
  ASSERT_EQ(run.rows.size(), expected.size()) << text;
  for (size_t i = 0; i < expected.size(); ++i) {
    const ResultRow& row = run.rows[i];
    const fixtures::FixtureRow& want = expected[i];
    SCOPED_TRACE("row " + std::to_string(i));
    EXPECT_EQ(row.collective, "all_reduce");
    EXPECT_EQ(row.size, static_cast<size_t>(want.size));
    EXPECT_EQ(row.count, static_cast<size_t>(want.count));
    EXPECT_EQ(row.type, "float");
    EXPECT_EQ(row.redop, "sum");
    EXPECT_EQ(row.root, -1);
    EXPECT_EQ(row.iterations, 20);
    ASSERT_TRUE(row.in_place.has_value());
    EXPECT_EQ(row.in_place->time_us, fixtures::Printed(fixtures::TimeCell(layout, want.time_in)));
    EXPECT_EQ(row.in_place->algbw, fixtures::Printed(fixtures::BwCell(layout, want.algbw_in)));
    EXPECT_EQ(row.in_place->busbw, fixtures::Printed(fixtures::BwCell(layout, want.busbw_in)));
    if (layout.in_place_only) {
      EXPECT_FALSE(row.out_of_place.has_value());
    } else {
      ASSERT_TRUE(row.out_of_place.has_value());
      EXPECT_EQ(row.out_of_place->time_us,
                fixtures::Printed(fixtures::TimeCell(layout, want.time_out)));
      EXPECT_EQ(row.out_of_place->busbw,
                fixtures::Printed(fixtures::BwCell(layout, want.busbw_out)));
    }
    if (layout.error_column || !layout.check) {
      EXPECT_FALSE(row.in_place->wrong.has_value());
    } else {
      ASSERT_TRUE(row.in_place->wrong.has_value());
      EXPECT_EQ(*row.in_place->wrong, want.wrong_in);
    }
    EXPECT_EQ(row.in_place->iterations.has_value(), layout.per_iter);
    if (layout.per_iter) {
      EXPECT_EQ(row.in_place->iterations->cv_percent, 2.5);
    }
    EXPECT_EQ(row.timestamp, layout.timestamps ? "2024-05-01 12:35:07" : "");
  }
  if (layout.device_lines) {
    ASSERT_EQ(run.ranks.size(), 4u);
    EXPECT_EQ(run.nranks, 4);
    EXPECT_EQ(run.ranks[2].hostname, "node-b");
    EXPECT_EQ(run.ranks[3].pid, 1003);
    EXPECT_EQ(run.ranks[1].device, 1);
    EXPECT_FALSE(run.ranks[0].device_bus_id.empty());
    EXPECT_NE(run.ranks[0].device_name.find(layout.group ? "H100" : "MI300X"), std::string::npos);
  } else {
    // From busbw / algbw = 2(n-1)/n.
    EXPECT_EQ(run.nranks, 4);
  }
  EXPECT_EQ(run.config.iters, 20);
  EXPECT_EQ(run.config.warmup_iters, 5);
  EXPECT_EQ(run.config.step_factor, 16u);
  EXPECT_EQ(run.config.check, layout.check ? 1 : 0);
  ASSERT_EQ(run.printed.size(), 1u);
  EXPECT_EQ(run.printed[0].avg_busbw, 123.456);
  EXPECT_EQ(run.printed[0].out_of_bounds, 1);
  EXPECT_EQ(run.printed[0].collective, "all_reduce");
  EXPECT_EQ(run.backend_version, "2.28.9+cuda12.8");
  EXPECT_EQ(run.tool, layout.rccl_extras ? "rccl-tests" : "nccl-tests");
  ASSERT_FALSE(run.transports.empty());
  EXPECT_EQ(run.transports[0], "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>");
  EXPECT_EQ(run.transports.back(), "via NET/IB/GDRDMA");
  ASSERT_EQ(run.notes.size(), 1u);
  EXPECT_EQ(run.notes[0], "NCCL WARN NET/IB : Got async event : port error");
  // Only what is really missing is warned about.
  EXPECT_EQ(Count(parsed, Diagnostic::Severity::kWarning), layout.names_line ? 0u : 1u)
      << Dump(parsed);
}

INSTANTIATE_TEST_SUITE_P(
    AllLayoutsAndPrefixes, LayoutTimesPrefix,
    ::testing::Combine(::testing::ValuesIn(AllLayouts()), ::testing::ValuesIn(AllPrefixes())),
    [](const ::testing::TestParamInfo<LayoutTimesPrefix::ParamType>& param_info) {
      return std::get<0>(param_info.param).name + "_" + std::get<1>(param_info.param).name;
    });

TEST(LinePrefix, StripsNestedPrefixesAndKeepsColumns) {
  using analyze::StripLaunchPrefixes;
  EXPECT_EQ(StripLaunchPrefixes("(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  0"), "#  Rank  0");
  EXPECT_EQ(StripLaunchPrefixes("[1,12]<stderr>:        1024  16"), "        1024  16");
  EXPECT_EQ(StripLaunchPrefixes("12:         1024  16"), "        1024  16");
  EXPECT_EQ(StripLaunchPrefixes("2024-05-01T12:34:56+02:00 # x"), "# x");
  EXPECT_EQ(StripLaunchPrefixes("\x1b[1;36m(worker1, rank=1, pid=9, ip=10.0.0.2)\x1b[0m # y"),
            "# y");
  // Not prefixes: a table row, NCCL's own "host:pid:tid" lines, rccl-tests' version line.
  EXPECT_EQ(StripLaunchPrefixes("        1024            16     float"),
            "        1024            16     float");
  EXPECT_EQ(StripLaunchPrefixes("node-a:1000:1000 [0] NCCL INFO x"),
            "node-a:1000:1000 [0] NCCL INFO x");
  EXPECT_EQ(StripLaunchPrefixes("rccl-tests: Version develop"), "rccl-tests: Version develop");
  EXPECT_EQ(StripLaunchPrefixes("(not a prefix) # z"), "(not a prefix) # z");
  EXPECT_EQ(StripLaunchPrefixes("2024-05-01T12:34:56Zx"), "2024-05-01T12:34:56Zx");
}

std::string Run219(const std::string& collective, double avg, int sizes) {
  using fixtures::Format;
  std::string text = "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n";
  text += "# Collective test starting: " + collective + "_perf\n";
  text +=
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 1 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n";
  text += "#  Rank  0 Group  0 Pid   1000 on     node-a device  0 [0000:8f:00] NVIDIA H200\n";
  text += "#  Rank  1 Group  0 Pid   1001 on     node-a device  1 [0000:90:00] NVIDIA H200\n";
  text +=
      "#\n#       size         count      type   redop    root     time   algbw   busbw  #wrong "
      "    time   algbw   busbw  #wrong \n";
  for (int i = 0; i < sizes; ++i) {
    text += Format("%12d  %12d  %8s  %6s  %6i  %7s  %6s  %6s  %6g  %7s  %6s  %6s  %6g\n", 8 << i,
                   2 << i, "float", collective == "all_reduce" ? "sum" : "none", -1, "10.00",
                   "1.00", "1.00", 0.0, "10.00", "1.00", "1.00", 0.0);
  }
  text += Format("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n", avg);
  text += "# Collective test concluded: " + collective + "_perf\n#\n\n";
  return text;
}

TEST(TextParser, SeveralRunsInOneLogSplitAtEachHeader) {
  const std::string text = "some job output\n" + Run219("all_reduce", 1, 3) +
                           "NCCL INFO unrelated\n" + Run219("all_gather", 1, 4);
  const ParsedResults parsed = ParseResults(text, "two.log");
  ASSERT_EQ(parsed.runs.size(), 2u) << Dump(parsed);
  EXPECT_EQ(parsed.runs[0].rows.size(), 3u);
  EXPECT_EQ(parsed.runs[1].rows.size(), 4u);
  EXPECT_EQ(parsed.runs[1].rows[0].collective, "all_gather");
  EXPECT_EQ(parsed.runs[0].source, "two.log:2");
  EXPECT_EQ(parsed.runs[1].printed.size(), 1u);
  EXPECT_TRUE(parsed.diagnostics.empty()) << Dump(parsed);

  // Legacy logs have no version line: the second nThread line starts the second run.
  std::string legacy;
  for (const char* c : {"all_reduce", "all_reduce"}) {
    std::string run = Run219(c, 1, 2);
    run = run.substr(run.find("# nThread"));
    legacy += run;
  }
  EXPECT_EQ(ParseResults(legacy, "legacy.log").runs.size(), 2u);
}

// A pasted command names the collective of a table that does not (no "Collective test" line):
// sendrecv's columns fit all_reduce too; a word that only ends in _perf does not count, and the
// log's own "Collective test starting" wins over the command.
TEST(TextParser, ThePastedCommandNamesTheCollectiveOfAnUnnamedTable) {
  const std::string table =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "   134217728      33554432     float     sum      -1   1211.2  110.81  110.81      0   "
      "1211.8  110.76  110.76    N/A\n";
  for (const std::string command :
       {"./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8", "$ mpirun -np 2 sendrecv_perf -b 128M",
        "+ srun --mpi=pmix /opt/nccl-tests/build/sendrecv_perf\t-b 128M"}) {
    const ParsedResults parsed = ParseResults(command + "\n" + table, "cmd.log");
    ASSERT_EQ(parsed.runs.size(), 1u) << command << Dump(parsed);
    ASSERT_EQ(parsed.runs[0].rows.size(), 1u) << command << Dump(parsed);
    EXPECT_EQ(parsed.runs[0].rows[0].collective, "sendrecv") << command << Dump(parsed);
  }
  for (const std::string other : {"python my_perf.py", "run ib_write_perf -d mlx5_0"}) {
    const ParsedResults parsed = ParseResults(other + "\n" + table, "other.log");
    ASSERT_EQ(parsed.runs.size(), 1u) << other;
    EXPECT_EQ(parsed.runs[0].rows[0].collective, "all_reduce") << other << Dump(parsed);
  }
  const ParsedResults announced = ParseResults(
      "./build/sendrecv_perf -b 8\n# Collective test starting: all_reduce_perf\n" + table,
      "announced.log");
  ASSERT_EQ(announced.runs.size(), 1u) << Dump(announced);
  EXPECT_EQ(announced.runs[0].rows[0].collective, "all_reduce") << Dump(announced);
}

// A summary a user put together, a column of their own before nccl-tests' (NVIDIA/nccl#527: the
// node count): the rows are read from the size on, not refused for a type column that moved.
TEST(TextParser, ARowWithALeadingColumnOfItsOwnIsRead) {
  const std::string text =
      " p4dn        size         count      type   redop     time   algbw   busbw  error     time "
      "  algbw   busbw  error\n"
      "   1   1073741824     268435456     float     sum   8142.6  131.87  230.77  2e-07   8141.2 "
      " 131.89  230.81  2e-07\n"
      "   2   1073741824     268435456     float     sum    35215   30.49   57.17  4e-07    35198 "
      "  30.51   57.20  4e-07\n";
  const ParsedResults parsed = ParseResults(text, "summary.log");
  ASSERT_EQ(parsed.runs.size(), 1u) << Dump(parsed);
  ASSERT_EQ(parsed.runs[0].rows.size(), 2u) << Dump(parsed);
  EXPECT_EQ(parsed.runs[0].rows[1].size, 1073741824u);
  EXPECT_EQ(parsed.runs[0].rows[1].type, "float");
  ASSERT_TRUE(parsed.runs[0].rows[1].out_of_place.has_value());
  EXPECT_DOUBLE_EQ(parsed.runs[0].rows[1].out_of_place->busbw, 57.17);
}

TEST(TextParser, FabricscopeMultiCollectiveRunStaysOneRun) {
  std::string text = Run219("all_reduce", 1, 2);
  std::string second = Run219("broadcast", 1, 3);
  // fabricscope prints its version line once and a block per collective.
  text += second.substr(second.find("# Collective test starting"));
  const ParsedResults parsed = ParseResults(text, "fs.log");
  ASSERT_EQ(parsed.runs.size(), 1u) << Dump(parsed);
  EXPECT_EQ(parsed.runs[0].rows.size(), 5u);
  EXPECT_EQ(parsed.runs[0].rows[4].collective, "broadcast");
  EXPECT_EQ(parsed.runs[0].printed.size(), 2u);
  EXPECT_EQ(parsed.runs[0].ranks.size(), 2u);
}

TEST(TextParser, TruncatedRunKeepsItsRowsAndSaysWhere) {
  std::string text = Run219("all_reduce", 1, 5);
  text = text.substr(0, text.find("# Out of bounds"));
  // Cut mid-way through the last row, as a killed job leaves it.
  text = text.substr(0, text.size() - 30);
  const ParsedResults parsed = ParseResults(text, "cut.log");
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows.size(), 4u);
  EXPECT_FALSE(parsed.HasErrors()) << Dump(parsed);
  ASSERT_EQ(parsed.diagnostics.size(), 2u) << Dump(parsed);
  EXPECT_EQ(parsed.diagnostics[0].line, 13u);  // the last whole row
  EXPECT_NE(parsed.diagnostics[0].message.find("without its trailer"), std::string::npos);
  EXPECT_EQ(parsed.diagnostics[1].line, 14u);  // the cut row
  EXPECT_NE(parsed.diagnostics[1].message.find("cut off mid-line"), std::string::npos);
  EXPECT_TRUE(parsed.runs[0].printed.empty());
}

TEST(TextParser, MalformedRowIsAnErrorNamingItsLineAndTheRestIsRead) {
  std::string text = Run219("all_reduce", 1, 4);
  const size_t at = text.find("          16             4");
  text.replace(at, 26,
               "          16             4  float  sum  -1  12.x  1.00  1.00  0  10.0  1  1  0\n   "
               "       16             4");
  const ParsedResults parsed = ParseResults(text, "bad.log");
  ASSERT_TRUE(parsed.HasErrors());
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows.size(), 4u);
  const Diagnostic& d = parsed.diagnostics[0];
  EXPECT_EQ(d.line, 11u);
  EXPECT_EQ(d.ToString().substr(0, 17), "bad.log:11: error");
  EXPECT_NE(d.message.find("time '12.x' is not a number"), std::string::npos) << d.message;
}

TEST(TextParser, UnknownInputIsAnErrorSayingWhatWasExpected) {
  const ParsedResults parsed = ParseResults("hello\nworld 1 2 3\n", "notes.txt");
  ASSERT_TRUE(parsed.HasErrors());
  EXPECT_TRUE(parsed.runs.empty());
  EXPECT_NE(parsed.diagnostics[0].message.find("no benchmark results found"), std::string::npos);
  const ParsedResults empty = ParseResults("", "empty.txt");
  EXPECT_TRUE(empty.HasErrors());
}

TEST(TextParser, ManyBadRowsAreSummarizedNotListed) {
  std::string text = Run219("all_reduce", 1, 1);
  std::string bad;
  for (int i = 0; i < 200; ++i) bad += "  64  16  float  sum  -1  x  y  z  0  1  1  1  0\n";
  text.insert(text.find("# Out of bounds"), bad);
  const ParsedResults parsed = ParseResults(text, "many.log");
  EXPECT_EQ(parsed.diagnostics.size(), 21u);
  EXPECT_NE(parsed.diagnostics.back().message.find("180 more"), std::string::npos);
}

TEST(TextParser, LoneHalfIsPlacedUnderItsOwnHeader) {
  // fabricscope blanks a half that was not run, so the other stays under its header.
  std::string text = Run219("all_reduce", 1, 1);
  const std::string row =
      fixtures::Format("%12d  %12d  %8s  %6s  %6i%34s  %7s  %6s  %6s  %6g\n", 64, 16, "float",
                       "sum", -1, "", "9.00", "2.00", "2.00", 0.0);
  text.insert(text.find("# Out of bounds"), row);
  const ParsedResults parsed = ParseResults(text, "lone.log");
  ASSERT_EQ(parsed.runs.size(), 1u);
  ASSERT_EQ(parsed.runs[0].rows.size(), 2u) << Dump(parsed);
  EXPECT_FALSE(parsed.runs[0].rows[1].out_of_place.has_value());
  ASSERT_TRUE(parsed.runs[0].rows[1].in_place.has_value());
  EXPECT_EQ(parsed.runs[0].rows[1].in_place->time_us, 9.0);
}

TEST(TextParser, ErrorsOfTheRunAreKept) {
  std::string text = Run219("all_reduce", 1, 0);
  text = text.substr(0, text.find("# Out of bounds"));
  text += "node-a: Test NCCL failure common.cu:1234 'unhandled system error'\n";
  const ParsedResults parsed = ParseResults(text, "failed.log");
  ASSERT_EQ(parsed.runs.size(), 1u) << Dump(parsed);
  EXPECT_TRUE(parsed.runs[0].rows.empty());
  ASSERT_EQ(parsed.runs[0].errors.size(), 1u);
  EXPECT_NE(parsed.runs[0].errors[0].find("unhandled system error"), std::string::npos);
}

TEST(TextParser, CollectiveIsInferredOrGiven) {
  // reduce_scatter: an op, and a size column n times count x element size.
  std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576         32768     float     sum      -1    50.00   20.97   15.73      0    "
      "50.00   20.97   15.73      0\n";
  ParsedResults parsed = ParseResults(text, "rs.log");
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows[0].collective, "reduce_scatter");
  EXPECT_EQ(parsed.runs[0].nranks, 8);
  ParseOptions options;
  options.collective = "alltoall";
  parsed = ParseResults(text, "rs.log", options);
  EXPECT_EQ(parsed.runs[0].rows[0].collective, "alltoall");
}

TEST(TextParser, MinBandwidthVerdictAndNCyclesAreRead) {
  std::string text = Run219("all_reduce", 1, 2);
  // -N 2 prints the sizes again under the same header.
  const size_t trailer = text.find("# Out of bounds");
  const size_t first_row = text.find("           8");
  text.insert(trailer, text.substr(first_row, trailer - first_row));
  text.replace(text.find("Avg bus bandwidth    : 1 "), 25, "Avg bus bandwidth    : 1 FAILED");
  const ParsedResults parsed = ParseResults(text, "n.log");
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows.size(), 4u);
  ASSERT_EQ(parsed.runs[0].printed.size(), 1u);
  EXPECT_FALSE(parsed.runs[0].printed[0].okay);
}

TEST(TextParser, ByteOrderMarkAndCompressedFiles) {
  const std::string text = "\xEF\xBB\xBF" + Run219("all_reduce", 1, 2);
  const ParsedResults parsed = ParseResults(text, "bom.log");
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].source, "bom.log:1");
  EXPECT_TRUE(parsed.diagnostics.empty()) << Dump(parsed);
  const ParsedResults gz = ParseResults(std::string("\x1f\x8b\x08\x00", 4), "job.log.gz");
  ASSERT_TRUE(gz.HasErrors());
  EXPECT_NE(gz.diagnostics[0].message.find("zcat job.log.gz"), std::string::npos);
}

TEST(TextParser, BinaryGarbageIsNotACrash) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += static_cast<char>((i * 7919) % 256);
  text += "\n   8  2  float  sum  -1  1  1  1  0  1  1  1  0\n";
  const ParsedResults parsed = ParseResults(text, "garbage.bin");
  EXPECT_LE(parsed.runs.size(), 1u);
}

}  // namespace
}  // namespace fabricscope
