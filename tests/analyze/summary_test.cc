// The per-test summary: on the two published H200 runs, and on runs built to test each rule.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "fabricscope/analyze.h"
#include "fabricscope/error.h"
#include "fabricscope/parse.h"

namespace fabricscope {
namespace {

std::string Data(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/analyze/data/" + name;
}

std::string G(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

// The SkyPilot-prefixed run and the raw one of shared/reference/seeds/000: 16 H200 on 2
// nodes, all_gather 1 KB to 8 GB, printed averages 122.073 and 121.902.
struct Published {
  const char* file;
  double printed;
  double peak;
  double floor_us;
};

class PublishedRun : public ::testing::TestWithParam<Published> {};

TEST_P(PublishedRun, GivesItsPrintedAverageAndPeak) {
  const Published& p = GetParam();
  const ParsedResults parsed = ReadResultsFile(Data(p.file));
  ASSERT_FALSE(parsed.HasErrors());
  ASSERT_EQ(parsed.runs.size(), 1u);
  const std::vector<TestAnalysis> tests = Analyze(parsed.runs[0]);
  ASSERT_EQ(tests.size(), 1u);
  const TestAnalysis& t = tests[0];
  EXPECT_EQ(t.collective, "all_gather");
  EXPECT_EQ(t.type, "float");
  EXPECT_EQ(t.op, "none");
  EXPECT_EQ(t.ranks, 16);
  EXPECT_EQ(t.nodes, 2);
  EXPECT_EQ(t.rows, 24u);
  ASSERT_TRUE(t.avg_busbw_printed.has_value());
  EXPECT_EQ(*t.avg_busbw_printed, p.printed);
  // Recomputed from the 48 printed (rounded) values: within the columns' rounding of the
  // printed figure, which nccl-tests took over the unrounded ones.
  EXPECT_TRUE(t.avg_busbw_consistent);
  EXPECT_NEAR(t.avg_busbw, p.printed, 0.005);
  EXPECT_EQ(t.peak_busbw, p.peak);
  EXPECT_EQ(t.peak_size, 8589934592u);
  ASSERT_TRUE(t.latency_floor_us.has_value());
  EXPECT_EQ(*t.latency_floor_us, p.floor_us);
  ASSERT_TRUE(t.half_peak_size.has_value());
  EXPECT_EQ(*t.half_peak_size, 33554432u);  // 177.53 / 180.42 >= 332 / 2 first at 32 MB
  ASSERT_TRUE(t.wrong.has_value());
  EXPECT_EQ(*t.wrong, 0);
  EXPECT_TRUE(t.notes.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, PublishedRun,
    ::testing::Values(Published{"skypilot_h200_all_gather.log", 122.073, 332.58, 28.07},
                      Published{"gke_h200_all_gather.log", 121.902, 332.16, 27.82}));

TEST(Summary, SkyPilotAverageRecomputesToThePrintedDigits) {
  const ParsedResults parsed = ReadResultsFile(Data("skypilot_h200_all_gather.log"));
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(G(Analyze(parsed.runs[0])[0].avg_busbw), "122.073");
}

RunResult SyntheticRun() {
  RunResult run;
  run.source = "synthetic:1";
  run.nranks = 4;
  for (const char* host : {"a", "a", "b", "c"}) {
    RankInfo rank;
    rank.hostname = host;
    run.ranks.push_back(rank);
  }
  const double busbw[] = {0.0, 0.5, 2, 10, 40, 90, 100};
  const double times[] = {0.0, 30, 31, 33, 50, 120, 800};
  size_t size = 0;
  for (int i = 0; i < 7; ++i) {
    ResultRow row;
    row.collective = "all_reduce";
    row.size = size;
    row.type = i == 6 ? "half" : "float";
    row.redop = "sum";
    PlacementResult out;
    out.busbw = busbw[i];
    out.time_us = times[i];
    out.wrong = i == 4 ? 7 : 0;
    PlacementResult in = out;
    in.busbw = busbw[i] * 0.9;
    in.time_us = times[i] + 1;
    in.wrong = 0;
    row.out_of_place = out;
    row.in_place = in;
    run.rows.push_back(row);
    size = size == 0 ? 1024 : size * 8;
  }
  ResultRow other;
  other.collective = "broadcast";
  other.size = 64;
  other.type = "float";
  other.redop = "none";
  PlacementResult half;
  half.busbw = 3;
  half.time_us = 5;
  other.in_place = half;
  run.rows.push_back(other);
  TestSummary printed;
  printed.collective = "all_reduce";
  printed.avg_busbw = 30.0;
  run.printed.push_back(printed);
  run.transports = {"NET/IB : Using [0]mlx5_0:1/IB", "via P2P/IPC"};
  return run;
}

TEST(Summary, EachRuleOnAKnownRun) {
  const std::vector<TestAnalysis> tests = Analyze(SyntheticRun());
  ASSERT_EQ(tests.size(), 2u);
  const TestAnalysis& t = tests[0];
  EXPECT_EQ(t.collective, "all_reduce");
  EXPECT_EQ(t.type, "float,half");
  EXPECT_EQ(t.op, "sum");
  EXPECT_EQ(t.ranks, 4);
  EXPECT_EQ(t.nodes, 3);
  EXPECT_EQ(t.rows, 7u);
  EXPECT_DOUBLE_EQ(t.avg_busbw, (242.5 + 242.5 * 0.9) / 14);
  EXPECT_EQ(t.peak_busbw, 100);
  EXPECT_EQ(t.peak_size, 1024u * 8 * 8 * 8 * 8 * 8);
  // Half of 100 is first reached by 90 (out-of-place) at the sixth size.
  EXPECT_EQ(*t.half_peak_size, 1024u * 8 * 8 * 8 * 8);
  // The zero-byte row's time does not count.
  EXPECT_EQ(*t.latency_floor_us, 30);
  EXPECT_EQ(*t.wrong, 7);
  EXPECT_EQ(t.out_of_bounds, 1);
  EXPECT_EQ(*t.avg_busbw_printed, 30.0);
  EXPECT_FALSE(t.avg_busbw_consistent);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("rows are missing or were edited"), std::string::npos);
  EXPECT_EQ(t.transports.size(), 2u);
  EXPECT_EQ(tests[1].collective, "broadcast");
  EXPECT_FALSE(tests[1].avg_busbw_printed.has_value());
}

TEST(SummaryFormats, JsonCarriesTheDocumentedFields) {
  std::vector<TestAnalysis> tests = Analyze(SyntheticRun());
  const Diagnostic d{Diagnostic::Severity::kWarning, "x.log", 3, "a warning"};
  const auto json = nlohmann::json::parse(FindAnalysisFormat("json").render(tests, {d}));
  ASSERT_EQ(json["tests"].size(), 2u);
  for (const char* key :
       {"collective", "ranks", "rows", "avg_busbw", "avg_busbw_printed", "peak_busbw", "peak_size",
        "latency_floor_us", "half_peak_size", "wrong", "type", "op", "nodes", "transports"}) {
    EXPECT_TRUE(json["tests"][0].contains(key)) << key;
  }
  EXPECT_EQ(json["tests"][0]["peak_busbw"], 100.0);
  EXPECT_EQ(json["tests"][0]["wrong"], 7);
  EXPECT_TRUE(json["tests"][1]["avg_busbw_printed"].is_null());
  EXPECT_EQ(json["diagnostics"][0]["line"], 3);
  EXPECT_EQ(json["diagnostics"][0]["severity"], "warning");
}

TEST(SummaryFormats, TextMarkdownAndCsv) {
  const std::vector<TestAnalysis> tests = Analyze(SyntheticRun());
  const std::string text = FindAnalysisFormat("text").render(tests, {});
  EXPECT_NE(text.find("synthetic:1  all_reduce  float,half  sum"), std::string::npos) << text;
  EXPECT_NE(text.find("note: the printed Avg bus bandwidth (30)"), std::string::npos) << text;
  const std::string md = FindAnalysisFormat("md").render(tests, {});
  EXPECT_NE(md.find("| source "), std::string::npos);
  EXPECT_NE(md.find("|-----"), std::string::npos);
  const std::string csv = FindAnalysisFormat("csv").render(tests, {});
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "source,tool,collective,type,op,ranks,nodes,rows,avg_busbw,avg_busbw_printed,"
            "avg_busbw_consistent,peak_busbw,peak_size,latency_floor_us,half_peak_size,wrong,"
            "out_of_bounds,transports,notes,status,failures");
  EXPECT_NE(csv.find("\"float,half\""), std::string::npos);
  EXPECT_THROW(FindAnalysisFormat("xml"), UsageError);
}

TEST(Summary, FormatBytesAsThePublishedTables) {
  EXPECT_EQ(FormatBytes(8), "8 B");
  EXPECT_EQ(FormatBytes(1024), "1 KB");
  EXPECT_EQ(FormatBytes(512 * 1024), "512 KB");
  EXPECT_EQ(FormatBytes(3 << 19), "1.5 MB");
  EXPECT_EQ(FormatBytes(8589934592u), "8 GB");
}

}  // namespace
}  // namespace fabricscope
