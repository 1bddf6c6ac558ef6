// Series from a store's measures, and regressions: a figure below its own baseline.
#include "fabricscope/history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <tuple>

#include "fabricscope/statistics.h"
#include "fabricscope/strings.h"

namespace fabricscope::db {
namespace {

using SeriesKey = std::tuple<std::string, std::string, std::string, std::string, int, std::string>;

SeriesKey KeyOf(const StoredMeasure& m) {
  return {m.measure.element_kind, m.measure.element, m.measure.collective,
          m.measure.metric,       m.measure.ranks,   m.platform};
}

std::vector<double> Values(const std::vector<StoredMeasure>& points, size_t from, size_t to) {
  std::vector<double> values;
  for (size_t i = from; i < to; ++i) values.push_back(points[i].measure.value);
  return values;
}

// One-sided p of "the recent points are no lower than the baseline's": one point against
// the baseline's prediction interval (t with n-1 df), several by Welch's test.
double DropPValue(const std::vector<double>& baseline, const std::vector<double>& recent) {
  const double nb = static_cast<double>(baseline.size());
  const double nr = static_cast<double>(recent.size());
  const double diff = Mean(baseline) - Mean(recent);
  const double vb = Variance(baseline);
  const double vr = recent.size() > 1 ? Variance(recent) : 0;
  double se = 0;
  double df = nb - 1;
  if (recent.size() == 1) {
    se = std::sqrt(vb * (1 + 1 / nb));
  } else {
    const double a = vb / nb;
    const double b = vr / nr;
    se = std::sqrt(a + b);
    const double denominator = a * a / (nb - 1) + b * b / (nr - 1);
    df = denominator > 0 ? (a + b) * (a + b) / denominator : nb + nr - 2;
  }
  if (se <= 0) return diff > 0 ? 0.0 : 1.0;  // identical figures: any drop is no noise
  return 1 - StudentCdf(diff / se, df);
}

// The hosts an element names: a node set's, a link's two ends, a node.
std::vector<std::string> HostsOf(const Series& s) {
  if (s.element_kind == "nodes") return Split(s.element, ',');
  if (s.element_kind == "link") {
    const size_t arrow = s.element.find("<->");
    if (arrow != std::string::npos) {
      return {s.element.substr(0, arrow), s.element.substr(arrow + 3)};
    }
  }
  return {s.element};
}

// "2026-12-02" of "2026-12-02T01:50:00.123456Z".
std::string Day(const std::string& time) { return time.substr(0, 10); }

std::string Describe(const Series& s) {
  return fmt::format("{} of {} ({} ranks{})", s.metric, s.collective, s.ranks,
                     s.platform.empty() ? "" : ", " + s.platform);
}

Finding RegressionFinding(const SeriesJudgement& j, const RegressionOptions& options) {
  const Series& s = *j.series;
  const std::vector<StoredMeasure>& p = s.points;
  const StoredMeasure& last = p.back();
  const size_t first_base = p.size() - j.recent_points - j.baseline_points;
  const StoredMeasure& base_from = p[first_base];
  const StoredMeasure& base_to = p[p.size() - j.recent_points - 1];
  const std::optional<double> healthy = last.measure.healthy;
  const bool below_band = healthy && j.recent_mean < *healthy;
  Finding f;
  f.source = "regression";
  f.where = s.element;
  f.element = s.element_kind;
  f.nodes = HostsOf(s);
  f.severity = below_band ? Severity::kCritical : Severity::kWarn;
  const std::string recent =
      j.recent_points == 1
          ? fmt::format("{:.1f} {} in run {} of {}", j.recent_mean, s.unit, last.run_id, last.time)
          : fmt::format("{:.1f} {} (mean of the last {} runs, to {})", j.recent_mean, s.unit,
                        j.recent_points, last.time);
  f.what = fmt::format(
      "{} fell {:.1f}% below its own baseline: {} against {:.1f} {} (mean of {} runs, {} to {}; "
      "run-to-run spread {:.1f}%){}",
      Describe(s), 100 * j.drop, recent, j.baseline_mean, s.unit, j.baseline_points,
      Day(base_from.time), Day(base_to.time), 100 * j.baseline_spread,
      healthy ? fmt::format("; the platform's healthy minimum is {:.1f} {}: {}", *healthy, s.unit,
                            below_band ? "below it" : "still inside the band")
              : std::string("; no platform band was recorded with it"));
  f.evidence.push_back(fmt::format(
      "the threshold is max({:.0f}%, {:g} x spread) = {:.1f}%; one-sided t test p = {:.2g} "
      "(alpha {:g})",
      100 * options.min_drop, options.spread_factor, 100 * j.threshold, j.p_value, options.alpha));
  for (size_t i = first_base; i < p.size(); ++i) {
    f.evidence.push_back(fmt::format("run {} ({}, {}): {:.2f} {}", p[i].run_id, p[i].time,
                                     p[i].command, p[i].measure.value, p[i].measure.unit));
  }
  f.figures = {{"drop_percent", 100 * j.drop},
               {"baseline", j.baseline_mean},
               {"recent", j.recent_mean},
               {"spread_percent", 100 * j.baseline_spread},
               {"threshold_percent", 100 * j.threshold},
               {"p_value", j.p_value},
               {"baseline_runs", static_cast<double>(j.baseline_points)},
               {"recent_runs", static_cast<double>(j.recent_points)}};
  if (healthy) f.figures["healthy"] = *healthy;
  if (j.regressed) {
    f.fix = fmt::format(
        "find what changed on {} since {}: `fabricscope doctor` on its nodes, `fabricscope "
        "locate` across them, `fabricscope fabric` for its links",
        s.element, Day(base_to.time));
  } else {
    f.decided = false;
    f.what += "; not significant at this spread";
    f.fix = fmt::format(
        "run the same check {} more time(s) on {}: {} runs below the baseline decide it",
        std::max<size_t>(2, j.recent_points + 1), s.element, j.recent_points + 1);
  }
  return f;
}

}  // namespace

std::vector<Series> SeriesOf(const std::vector<StoredMeasure>& measures) {
  std::vector<Series> out;
  std::map<SeriesKey, size_t> index;
  for (const StoredMeasure& m : measures) {
    const SeriesKey key = KeyOf(m);
    auto [it, fresh] = index.emplace(key, out.size());
    if (fresh) {
      out.push_back({.element_kind = m.measure.element_kind,
                     .element = m.measure.element,
                     .collective = m.measure.collective,
                     .metric = m.measure.metric,
                     .unit = m.measure.unit,
                     .ranks = m.measure.ranks,
                     .platform = m.platform,
                     .points = {}});
    }
    out[it->second].points.push_back(m);
  }
  return out;
}

std::vector<SeriesJudgement> JudgeSeries(const std::vector<Series>& series,
                                         const RegressionOptions& options) {
  std::vector<SeriesJudgement> out;
  const size_t recent = std::max<size_t>(options.recent, 1);
  for (const Series& s : series) {
    SeriesJudgement j{.series = &s};
    const size_t n = s.points.size();
    if (n < recent + std::max<size_t>(options.min_baseline, 2)) {
      out.push_back(j);
      continue;
    }
    const size_t recent_from = n - recent;
    const size_t base_count = std::min(recent_from, std::max<size_t>(options.max_baseline, 2));
    const std::vector<double> baseline = Values(s.points, recent_from - base_count, recent_from);
    const std::vector<double> last = Values(s.points, recent_from, n);
    j.judged = true;
    j.baseline_points = baseline.size();
    j.recent_points = last.size();
    j.baseline_mean = Mean(baseline);
    j.recent_mean = Mean(last);
    j.baseline_spread = j.baseline_mean > 0 ? StdDev(baseline) / j.baseline_mean : 0;
    j.drop = j.baseline_mean > 0 ? 1 - j.recent_mean / j.baseline_mean : 0;
    j.threshold = std::max(options.min_drop, options.spread_factor * j.baseline_spread);
    j.p_value = DropPValue(baseline, last);
    j.regressed = j.drop > j.threshold && j.p_value < options.alpha;
    out.push_back(j);
  }
  return out;
}

std::vector<Finding> RegressionFindings(const std::vector<SeriesJudgement>& judgements,
                                        const RegressionOptions& options) {
  std::vector<Finding> out;
  size_t judged = 0;
  size_t points = 0;
  for (const SeriesJudgement& j : judgements) {
    points += j.series->points.size();
    if (!j.judged) continue;
    ++judged;
    if (j.drop > j.threshold) out.push_back(RegressionFinding(j, options));
  }
  if (out.empty()) {
    const size_t short_series = judgements.size() - judged;
    out.push_back(
        {.severity = Severity::kOk,
         .source = "regression",
         .what = fmt::format(
             "no regression: {} series judged ({} points){}", judged, points,
             short_series == 0
                 ? std::string()
                 : fmt::format("; {} series have fewer than {} runs before their last {}, too "
                               "few for a baseline",
                               short_series, options.min_baseline + options.recent,
                               options.recent)),
         .figures = {{"series", static_cast<double>(judged)},
                     {"points", static_cast<double>(points)},
                     {"too_short", static_cast<double>(short_series)}}});
  }
  return out;
}

Outcome RegressionOutcome(const std::vector<Finding>& findings) {
  std::vector<Finding> decided;
  std::copy_if(findings.begin(), findings.end(), std::back_inserter(decided),
               [](const Finding& f) { return f.decided; });
  if (OutcomeOf(decided, /*strict=*/true) == Outcome::kFailed) return Outcome::kFailed;
  return OutcomeOf(findings, /*strict=*/false);
}

}  // namespace fabricscope::db
