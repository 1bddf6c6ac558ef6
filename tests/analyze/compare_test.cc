// compare: the statistics against textbook values, then the verdicts on runs built to be the
// same, slower, noisy or one-sided.
#include "fabricscope/compare.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/stats.h"
#include "fabricscope/error.h"

namespace fabricscope {
namespace {

TEST(Stats, StudentTAndIncompleteBetaMatchTables) {
  // t(10) = 2.228 is the 97.5% point: two-sided p = 0.05.
  EXPECT_NEAR(analyze::StudentTwoSidedP(2.228139, 10), 0.05, 1e-5);
  EXPECT_NEAR(analyze::StudentTwoSidedP(1.959964, 1e7), 0.05, 1e-5);
  EXPECT_NEAR(analyze::StudentTwoSidedP(0, 5), 1.0, 1e-12);
  EXPECT_NEAR(analyze::IncompleteBeta(2, 3, 0.4), 0.5248, 1e-4);
}

TEST(Stats, WelchMatchesItsWorkedExample) {
  // Welch's t-test, example 1 of its Wikipedia article: t = -2.46, df = 24.97, p = 0.021.
  const std::vector<double> a = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1,
                                 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
  const std::vector<double> b = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0,
                                 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
  const auto p = analyze::WelchTTest(a, b);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(*p, 0.021, 0.001);
  EXPECT_FALSE(analyze::WelchTTest({1.0}, {1.0, 2.0}).has_value());
  EXPECT_EQ(*analyze::WelchTTest({2, 2}, {3, 3}), 0.0);
  EXPECT_EQ(*analyze::WelchTTest({2, 2}, {2, 2}), 1.0);
}

TEST(Stats, HolmAdjustment) {
  const auto adjusted = analyze::HolmAdjust({0.01, 0.04, std::nullopt, 0.03, 0.005});
  EXPECT_NEAR(*adjusted[0], 0.03, 1e-12);
  EXPECT_NEAR(*adjusted[1], 0.06, 1e-12);
  EXPECT_FALSE(adjusted[2].has_value());
  EXPECT_NEAR(*adjusted[3], 0.06, 1e-12);
  EXPECT_NEAR(*adjusted[4], 0.02, 1e-12);
}

// One run of all_gather whose busbw at size 2^k is base[k] x scale + jitter.
RunResult MakeRun(const std::vector<double>& busbw, double scale, double jitter) {
  RunResult run;
  size_t size = 8;
  for (size_t i = 0; i < busbw.size(); ++i) {
    ResultRow row;
    row.collective = "all_gather";
    row.type = "float";
    row.redop = "none";
    row.size = size;
    PlacementResult half;
    half.busbw = busbw[i] * scale + jitter;
    row.out_of_place = half;
    half.busbw = busbw[i] * scale - jitter;
    row.in_place = half;
    run.rows.push_back(row);
    size *= 2;
  }
  return run;
}

const std::vector<double> kBase = {0, 0.01, 0.5, 10, 40, 65};

TEST(Compare, SameRunsAreTheSame) {
  const Comparison c = Compare({MakeRun(kBase, 1, 0)}, {MakeRun(kBase, 1, 0)}, "A", "B");
  ASSERT_EQ(c.tests.size(), 1u);
  EXPECT_FALSE(c.Regressed());
  const TestComparison& t = c.tests[0];
  EXPECT_EQ(t.sizes.size(), kBase.size());
  EXPECT_EQ(t.sizes[0].verdict, Verdict::kNotJudged);  // 0 GB/s
  for (size_t i = 1; i < t.sizes.size(); ++i) EXPECT_EQ(t.sizes[i].verdict, Verdict::kSame);
  EXPECT_NEAR(*t.geomean_ratio, 1.0, 1e-12);
  EXPECT_FALSE(t.tested);
  EXPECT_EQ(c.notes.size(), 1u);  // no repeats: no significance test
}

TEST(Compare, SingleRunsBeyondTheThresholdAreSlower) {
  CompareOptions options;
  options.min_size = 64;
  const Comparison c = Compare({MakeRun(kBase, 1, 0)}, {MakeRun(kBase, 0.8, 0)}, "A", "B", options);
  EXPECT_TRUE(c.Regressed());
  const TestComparison& t = c.tests[0];
  EXPECT_EQ(t.sizes[2].verdict, Verdict::kNotJudged);  // 32 B < --min-size
  EXPECT_EQ(t.sizes[3].verdict, Verdict::kSlower);
  EXPECT_EQ(t.slower, 3);
  EXPECT_NEAR(*t.sizes[4].ratio, 0.8, 1e-12);
  options.threshold = 0.25;
  EXPECT_FALSE(
      Compare({MakeRun(kBase, 1, 0)}, {MakeRun(kBase, 0.8, 0)}, "A", "B", options).Regressed());
}

TEST(Compare, NoiseIsNotARegressionAndASteadyDropIs) {
  std::vector<RunResult> a;
  std::vector<RunResult> noisy;
  std::vector<RunResult> steady;
  const double jitters[] = {-0.2, 0.0, 0.2};
  for (double j : jitters) {
    a.push_back(MakeRun(kBase, 1.0 + j * 0.05, 0));
    noisy.push_back(MakeRun(kBase, 0.9 + j, 0));          // 10% lower on average, +-20%
    steady.push_back(MakeRun(kBase, 0.9 + j * 0.01, 0));  // 10% lower, +-0.2%
  }
  const Comparison n = Compare(a, noisy, "A", "noisy");
  EXPECT_FALSE(n.Regressed());
  EXPECT_TRUE(n.tests[0].tested);
  EXPECT_EQ(n.tests[0].sizes[5].verdict, Verdict::kNoise);
  EXPECT_TRUE(n.notes.empty());
  const Comparison s = Compare(a, steady, "A", "steady");
  EXPECT_TRUE(s.Regressed());
  EXPECT_EQ(s.tests[0].sizes[5].verdict, Verdict::kSlower);
  EXPECT_LT(*s.tests[0].sizes[5].p_value, 0.05);
  EXPECT_EQ(s.tests[0].sizes[5].a.size(), 3u);
}

TEST(Compare, PlacementChoiceAndOneSidedTests) {
  RunResult a = MakeRun(kBase, 1, 1);
  RunResult b = MakeRun(kBase, 1, 1);
  RunResult other = MakeRun(kBase, 1, 0);
  for (ResultRow& row : other.rows) row.collective = "broadcast";
  b.rows.insert(b.rows.end(), other.rows.begin(), other.rows.end());
  CompareOptions options;
  options.placement = PlacementChoice::kOutOfPlace;
  const Comparison c = Compare({a}, {b}, "A", "B", options);
  EXPECT_EQ(c.tests[0].sizes[3].a_mean, 11);
  ASSERT_EQ(c.notes.size(), 2u);
  EXPECT_EQ(c.notes[1], "only in B: broadcast float none");
  EXPECT_THROW(Compare({a}, {other}, "A", "B"), UsageError);
  options.threshold = 1.5;
  EXPECT_THROW(Compare({a}, {b}, "A", "B", options), UsageError);
}

TEST(CompareFormats, MarkdownHasThePublishedTableShape) {
  const Comparison c =
      Compare({MakeRun(kBase, 1, 0)}, {MakeRun(kBase, 3.6, 0)}, "Non-GPUDirect", "GPUDirect-TCPX");
  const std::string md = FindComparisonFormat("md").render(c);
  EXPECT_NE(md.find("| Message Size | busbw Non-GPUDirect (GB/s) | busbw GPUDirect-TCPX (GB/s) | "
                    "Speed-up | Verdict |"),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find(
          "| 8 B          | 0                          | 0                           | -        |"),
      std::string::npos)
      << md;
  EXPECT_NE(
      md.find("| 256 B        | 65                         | 234                         | 3.6 x"),
      std::string::npos)
      << md;
  const auto json = nlohmann::json::parse(FindComparisonFormat("json").render(c));
  EXPECT_EQ(json["tests"][0]["sizes"][5]["verdict"], "faster");
  EXPECT_EQ(json["regressed"], false);
  const std::string csv = FindComparisonFormat("csv").render(c);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
  EXPECT_NE(FindComparisonFormat("text").render(c).find("no regression"), std::string::npos);
}

}  // namespace
}  // namespace fabricscope
