// Series and regressions, on figures made here (the arithmetic, the thresholds, the test).
#include "fabricscope/history.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fabricscope::db {
namespace {

std::vector<StoredMeasure> Points(const std::string& element, const std::vector<double>& values,
                                  std::optional<double> healthy = std::nullopt) {
  std::vector<StoredMeasure> out;
  int64_t id = 0;
  for (const double v : values) {
    ++id;
    out.push_back({.run_id = id,
                   .time = "2026-12-0" + std::to_string(id % 9 + 1) + "T00:00:00.000000Z",
                   .command = "check",
                   .platform = "dgx-h100",
                   .outcome = "OK",
                   .measure = {.element_kind = "node",
                               .element = element,
                               .collective = "all_reduce",
                               .ranks = 8,
                               .value = v,
                               .healthy = healthy}});
  }
  return out;
}

std::vector<Finding> Judge(const std::vector<StoredMeasure>& points,
                           const RegressionOptions& options = {}) {
  static std::vector<Series> series;  // the judgements point into it
  series = SeriesOf(points);
  return RegressionFindings(JudgeSeries(series, options), options);
}

TEST(Regressions, FiveHealthyRunsAndOneEightPercentSlowerInsideTheBandIsAWarnNamingTheNode) {
  const auto findings = Judge(Points("gpu-7", {400, 404, 396, 402, 398, 368}, 340));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_TRUE(f.decided);
  EXPECT_EQ(f.where, "gpu-7");
  EXPECT_EQ(f.element, "node");
  EXPECT_EQ(f.nodes, std::vector<std::string>{"gpu-7"});
  EXPECT_NEAR(f.figures.at("drop_percent"), 8.0, 1e-9);
  EXPECT_NEAR(f.figures.at("baseline"), 400.0, 1e-9);
  EXPECT_LT(f.figures.at("p_value"), 0.01);
  EXPECT_NE(f.what.find("still inside the band"), std::string::npos) << f.what;
  EXPECT_EQ(RegressionOutcome(findings), Outcome::kFailed);
}

TEST(Regressions, BelowThePlatformsBandItIsCritical) {
  const auto findings = Judge(Points("gpu-7", {400, 404, 396, 402, 398, 368}, 380));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kCritical);
}

TEST(Regressions, ADropWithinThreeTimesTheSpreadIsNoRegression) {
  // The spread is about 4%: the threshold 12% is more than the 8% drop.
  const auto findings = Judge(Points("gpu-7", {400, 420, 380, 415, 385, 368}));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kOk);
}

TEST(Regressions, ADropBelowFivePercentIsNeverOne) {
  const auto findings = Judge(Points("gpu-7", {400, 400, 400, 400, 400, 384}));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kOk);
}

TEST(Regressions, APastTheThresholdDropThatIsNotSignificantDoesNotDecide) {
  // Three baseline runs spread 2.5%: a drop of 8% is past the 7.5% threshold, but with 2 df
  // the one-sided p is 0.055.
  const auto findings = Judge(Points("gpu-7", {400, 390, 410, 368}));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_FALSE(findings[0].decided);
  EXPECT_EQ(RegressionOutcome(findings), Outcome::kInconclusive);
  EXPECT_NE(findings[0].fix.find("more time"), std::string::npos) << findings[0].fix;
}

TEST(Regressions, TooFewRunsForABaselineJudgeNothingAndSaySo) {
  const auto findings = Judge(Points("gpu-7", {400, 300}));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kOk);
  EXPECT_EQ(RegressionOutcome(findings), Outcome::kClear);
  EXPECT_EQ(findings[0].figures.at("too_short"), 1);
  EXPECT_NE(findings[0].what.find("too few for a baseline"), std::string::npos);
}

TEST(Regressions, SeveralRecentRunsAreJudgedByWelchsTest) {
  RegressionOptions options;
  options.recent = 3;
  const auto findings =
      Judge(Points("gpu-7", {400, 404, 396, 402, 398, 370, 366, 368}, 300), options);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarn);
  EXPECT_EQ(findings[0].figures.at("recent_runs"), 3);
  EXPECT_NEAR(findings[0].figures.at("recent"), 368, 1e-9);
}

TEST(Series, GroupsByElementCollectiveRanksAndPlatformInOrderOfAppearance) {
  auto points = Points("a", {1, 2});
  auto other = Points("b", {3});
  points.insert(points.begin() + 1, other.begin(), other.end());
  const auto series = SeriesOf(points);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].element, "a");
  EXPECT_EQ(series[0].points.size(), 2u);
  EXPECT_EQ(series[1].element, "b");
}

TEST(HistoryFormats, CsvQuotesANodeSetAndJsonCarriesTheFindings) {
  auto points = Points("a,b", {400, 404, 396, 402, 398, 368});
  for (auto& p : points) p.measure.element_kind = "nodes";
  HistoryReport report;
  report.store = "results.db";
  report.series = SeriesOf(points);
  report.regressions = true;
  report.judgements = JudgeSeries(report.series, report.options);
  report.findings = RegressionFindings(report.judgements, report.options);
  std::string csv, json, text;
  for (const HistoryFormat& f : HistoryFormats()) {
    if (f.name == "csv") csv = f.render(report);
    if (f.name == "json") json = f.render(report);
    if (f.name == "text") text = f.render(report);
  }
  EXPECT_NE(csv.find(",nodes,\"a,b\",all_reduce,"), std::string::npos) << csv;
  EXPECT_NE(json.find("\"findings_version\": 2"), std::string::npos);
  EXPECT_NE(json.find("\"regressed\": true"), std::string::npos);
  EXPECT_NE(text.find("WARN"), std::string::npos) << text;
  EXPECT_EQ(report.findings[0].nodes, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace fabricscope::db
