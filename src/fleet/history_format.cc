// history's text, JSON and CSV.
#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>

#include "fabricscope/history.h"
#include "fabricscope/html_escape.h"
#include "fabricscope/plot.h"
#include "fabricscope/strings.h"
#include "fabricscope/version.h"

namespace fabricscope::db {
namespace {

using json = nlohmann::ordered_json;

std::string Band(const Measure& m) {
  if (!m.healthy) return "-";
  return fmt::format(">= {:.1f}", *m.healthy);
}

std::string SeriesTitle(const Series& s) {
  return fmt::format("{} {}: {} {} ({}), {} ranks{}", s.element_kind, s.element, s.collective,
                     s.metric, s.unit, s.ranks,
                     s.platform.empty() ? "" : ", platform " + s.platform);
}

std::string Text(const HistoryReport& report) {
  std::string out =
      fmt::format("# fabricscope history of {}: {} series\n", report.store, report.series.size());
  for (const Series& s : report.series) {
    out += "\n# " + SeriesTitle(s) + "\n";
    out += fmt::format("#  {:<27}  {:>6}  {:<7}  {:>10}  {:>10}  {:>10}  {}\n", "time", "run",
                       "command", "size", s.metric, "healthy", "verdict");
    for (const StoredMeasure& p : s.points) {
      out +=
          fmt::format("   {:<27}  {:>6}  {:<7}  {:>10}  {:>10.2f}  {:>10}  {}\n", p.time, p.run_id,
                      p.command, p.measure.size == 0 ? "judged" : std::to_string(p.measure.size),
                      p.measure.value, Band(p.measure), p.outcome.empty() ? "-" : p.outcome);
    }
  }
  if (report.regressions) {
    out += "\n# regressions (own baseline: the last " + std::to_string(report.options.recent) +
           " run(s) against up to " + std::to_string(report.options.max_baseline) +
           " before them)\n";
    FindingTextStyle style;
    out += FindingsText(report.findings, style);
  }
  return out;
}

json PointJson(const StoredMeasure& p) {
  return {{"run", p.run_id},
          {"time", p.time},
          {"command", p.command},
          {"outcome", p.outcome},
          {"size", p.measure.size},
          {"value", p.measure.value},
          {"healthy", p.measure.healthy ? json(*p.measure.healthy) : json(nullptr)},
          {"fail_below", p.measure.fail_below ? json(*p.measure.fail_below) : json(nullptr)}};
}

std::string Json(const HistoryReport& report) {
  json series = json::array();
  for (const Series& s : report.series) {
    json points = json::array();
    for (const StoredMeasure& p : s.points) points.push_back(PointJson(p));
    series.push_back({{"element_kind", s.element_kind},
                      {"element", s.element},
                      {"collective", s.collective},
                      {"metric", s.metric},
                      {"unit", s.unit},
                      {"ranks", s.ranks},
                      {"platform", s.platform},
                      {"points", std::move(points)}});
  }
  json j = {{"tool", "fabricscope history"},
            {"version", kVersion},
            {"store", report.store},
            {"series", std::move(series)}};
  if (report.regressions) {
    json judged = json::array();
    for (const SeriesJudgement& r : report.judgements) {
      judged.push_back({{"element_kind", r.series->element_kind},
                        {"element", r.series->element},
                        {"collective", r.series->collective},
                        {"ranks", r.series->ranks},
                        {"judged", r.judged},
                        {"regressed", r.regressed},
                        {"baseline_points", r.baseline_points},
                        {"recent_points", r.recent_points},
                        {"baseline_mean", r.baseline_mean},
                        {"baseline_spread", r.baseline_spread},
                        {"recent_mean", r.recent_mean},
                        {"drop", r.drop},
                        {"threshold", r.threshold},
                        {"p_value", r.p_value}});
    }
    j["judgements"] = std::move(judged);
    j["findings_version"] = kFindingsVersion;
    j["findings"] = FindingsJson(report.findings);
  }
  return j.dump(2) + "\n";
}

std::string Optional(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

std::string Csv(const HistoryReport& report) {
  std::string out =
      CsvLine({"time", "run", "command", "element_kind", "element", "collective", "ranks", "size",
               "metric", "value", "unit", "healthy", "fail_below", "platform", "outcome"});
  for (const Series& s : report.series) {
    for (const StoredMeasure& p : s.points) {
      out +=
          CsvLine({p.time, std::to_string(p.run_id), p.command, s.element_kind, s.element,
                   s.collective, std::to_string(s.ranks), std::to_string(p.measure.size), s.metric,
                   fmt::format("{}", p.measure.value), s.unit, Optional(p.measure.healthy),
                   Optional(p.measure.fail_below), s.platform, p.outcome});
    }
  }
  return out;
}

constexpr std::array<HistoryFormat, 3> kFormats = {{
    {"text", "a table a series (time, run, command, figure, band, verdict); the findings", Text},
    {"json", "the series and their points, and with --regressions the judgements and findings",
     Json},
    {"csv", "one line a point, for a spreadsheet or a plot", Csv},
}};

}  // namespace

std::span<const HistoryFormat> HistoryFormats() { return kFormats; }

std::string HistoryHtmlSection(const std::vector<Series>& series, const std::string& store) {
  std::string html = fmt::format("<h2>History</h2>\n<p>{} series from {}.</p>\n", series.size(),
                                 analyze::XmlEscape(store));
  html += "<div class=\"plots\">\n";
  for (const Series& s : series) {
    PlotSeries measured{.label = s.metric, .points = {}};
    PlotSeries healthy{.label = "healthy minimum", .points = {}, .dashed = true};
    for (size_t i = 0; i < s.points.size(); ++i) {
      const double x = static_cast<double>(i + 1);
      measured.points.emplace_back(x, s.points[i].measure.value);
      if (s.points[i].measure.healthy) healthy.points.emplace_back(x, *s.points[i].measure.healthy);
    }
    std::vector<PlotSeries> lines = {measured};
    if (!healthy.points.empty()) lines.push_back(healthy);
    const PlotOptions options{
        .title = SeriesTitle(s),
        .x_label = fmt::format("run, oldest first ({} to {})", s.points.front().time.substr(0, 10),
                               s.points.back().time.substr(0, 10)),
        .y_label = s.metric + " (" + s.unit + ")",
        .x_is_bytes = false,
        .log_x = false};
    html += RenderSvgPlot(lines, options);
  }
  return html + "</div>\n";
}

}  // namespace fabricscope::db
