// History (docs/fleet.md): the figures a store holds, per element over time, and the
// elements that fell below their own baseline (regressions), even while still inside their
// platform's band.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/finding.h"
#include "fabricscope/results_db.h"

namespace fabricscope::db {

// One element's figure over time: every measure with the same kind, element, collective,
// metric, rank count and platform, oldest first.
struct Series {
  std::string element_kind;
  std::string element;
  std::string collective;
  std::string metric;
  std::string unit;
  int ranks = 0;
  std::string platform;
  std::vector<StoredMeasure> points{};
};

// `measures` (oldest first, as Measures returns them) grouped into series, in the order each
// series first appears.
std::vector<Series> SeriesOf(const std::vector<StoredMeasure>& measures);

// What a regression is (history --regressions' flags; the defaults are docs/fleet.md's).
struct RegressionOptions {
  size_t recent = 1;         // the last this many points are judged against those before
  size_t min_baseline = 3;   // fewer points before them: no baseline, nothing judged
  size_t max_baseline = 20;  // the baseline: at most this many points before the recent ones
  double min_drop = 0.05;    // a drop below this fraction of the baseline is never one
  double spread_factor = 3;  // ... nor one within this many times the run-to-run spread
  double alpha = 0.05;       // the significance level of the one-sided t test
};

// One series judged.
struct SeriesJudgement {
  const Series* series = nullptr;
  size_t baseline_points = 0;
  size_t recent_points = 0;
  double baseline_mean = 0;
  double baseline_spread = 0;  // run-to-run: the baseline's sd over its mean
  double recent_mean = 0;
  double drop = 0;       // 1 - recent / baseline: 0.08 is 8% slower
  double threshold = 0;  // max(min_drop, spread_factor x spread)
  double p_value = 1;    // of "the recent points come from the baseline's distribution"
  bool judged = false;   // false: too few points for a baseline
  bool regressed = false;
};

// Each series judged: its recent points against its baseline by a one-sided t test (the
// prediction interval of one new point; Welch's test for several), a regression when the
// drop exceeds max(min_drop, spread_factor x spread) and is significant at alpha.
std::vector<SeriesJudgement> JudgeSeries(const std::vector<Series>& series,
                                         const RegressionOptions& options);

// The judgements as findings of the one model: each regression WARN while the recent figure
// is inside the platform's band (at or above its healthy minimum, or no band known) and
// CRITICAL below it; a drop past the threshold that is not significant a WARN that did not
// decide (decided false, with how many more runs would); none at all one OK finding that
// says how many series and points were judged, and how many had too few points.
std::vector<Finding> RegressionFindings(const std::vector<SeriesJudgement>& judgements,
                                        const RegressionOptions& options);

// What `fabricscope history` shows: the series read, and with --regressions their judgement.
struct HistoryReport {
  std::string store;  // the store's URL as shown
  MeasureQuery query;
  std::vector<Series> series;
  bool regressions = false;
  RegressionOptions options;
  std::vector<SeriesJudgement> judgements;  // with regressions, one a series
  std::vector<Finding> findings;            // with regressions
};

// The series as plots for `report --db`: an HTML section ("<h2>History</h2>", then per series
// its title and an SVG of its figure against the run's place, oldest first, with the
// platform's healthy minimum dashed where it was recorded).
std::string HistoryHtmlSection(const std::vector<Series>& series, const std::string& store);

// How --regressions ends: failed (exit 1) on any decided regression, WARN or CRITICAL (a
// check meant for cron and CI: a node slowing down inside its band is the news); else
// inconclusive (4) when a drop past the threshold is not significant yet; else clear.
Outcome RegressionOutcome(const std::vector<Finding>& findings);

// history's output formats: text (a table a series; the findings), json, csv (one line a
// point).
struct HistoryFormat {
  std::string_view name;
  std::string_view description;
  std::string (*render)(const HistoryReport& report);
};
std::span<const HistoryFormat> HistoryFormats();

}  // namespace fabricscope::db
