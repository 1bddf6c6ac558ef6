// The plots of a set of inputs, and the one-file HTML report that holds them with the
// summaries: no script and no external file, so it can be mailed or attached to a ticket.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analyze/table.h"
#include "fabricscope/analyze.h"
#include "fabricscope/html_escape.h"
#include "fabricscope/plot.h"
#include "fabricscope/statistics.h"
#include "fabricscope/version.h"

namespace fabricscope {
namespace {

using analyze::XmlEscape;

// One line of a plot before it becomes points: per size, every value seen.
struct SeriesData {
  std::string label;
  std::string type_op;
  std::map<size_t, std::vector<double>> busbw;
  std::map<size_t, std::vector<double>> time;
};

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<std::pair<double, double>> Means(const std::map<size_t, std::vector<double>>& values) {
  std::vector<std::pair<double, double>> points;
  points.reserve(values.size());
  for (const auto& [size, list] : values) {
    points.emplace_back(static_cast<double>(size), Mean(list));
  }
  return points;
}

}  // namespace

std::vector<TestPlots> PlotResults(const std::vector<ParsedResults>& inputs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<SeriesData>> by_collective;
  for (const ParsedResults& input : inputs) {
    for (const RunResult& run : input.runs) {
      // A file of one run is named by the file; several runs by where each starts.
      const std::string name =
          input.runs.size() > 1 ? BaseName(run.source) : BaseName(input.source);
      std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
      for (const ResultRow& row : run.rows) {
        auto& list = by_collective[row.collective];
        if (list.empty() && std::find(order.begin(), order.end(), row.collective) == order.end()) {
          order.push_back(row.collective);
        }
        const auto key = std::make_tuple(row.collective, row.type, row.redop);
        auto found = index.find(key);
        if (found == index.end()) {
          list.push_back({name, row.type + " " + row.redop, {}, {}});
          found = index.emplace(key, list.size() - 1).first;
        }
        SeriesData& series = list[found->second];
        // Both placements and every -N cycle of a size: their mean is the point, as compare's
        // default takes it.
        for (const auto* half : {&row.out_of_place, &row.in_place}) {
          if (!half->has_value()) continue;
          series.busbw[row.size].push_back((*half)->busbw);
          series.time[row.size].push_back((*half)->time_us);
        }
      }
    }
  }
  std::vector<TestPlots> plots;
  for (const std::string& collective : order) {
    const std::vector<SeriesData>& list = by_collective[collective];
    std::set<std::string> type_ops;
    for (const SeriesData& s : list) type_ops.insert(s.type_op);
    std::vector<PlotSeries> busbw;
    std::vector<PlotSeries> time;
    for (const SeriesData& s : list) {
      const std::string label = type_ops.size() > 1 ? s.label + " " + s.type_op : s.label;
      busbw.push_back({label, Means(s.busbw)});
      time.push_back({label, Means(s.time)});
    }
    PlotOptions options;
    options.title = collective + ": bus bandwidth";
    options.y_label = "busbw (GB/s)";
    TestPlots plot;
    plot.collective = collective;
    plot.busbw_svg = RenderSvgPlot(busbw, options);
    options.title = collective + ": time per operation";
    options.y_label = "time (us)";
    plot.time_svg = RenderSvgPlot(time, options);
    plots.push_back(std::move(plot));
  }
  return plots;
}

std::string RenderHtmlReport(const std::vector<ParsedResults>& inputs, const std::string& title,
                             const std::string& sections) {
  std::vector<TestAnalysis> tests;
  std::vector<Diagnostic> diagnostics;
  for (const ParsedResults& input : inputs) {
    for (const RunResult& run : input.runs) {
      for (TestAnalysis& test : Analyze(run)) tests.push_back(std::move(test));
    }
    diagnostics.insert(diagnostics.end(), input.diagnostics.begin(), input.diagnostics.end());
  }
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{0}</title>\n"
      "<style>\n"
      "body {{ font-family: sans-serif; margin: 24px; color: #222; }}\n"
      "table {{ border-collapse: collapse; font-size: 13px; margin-bottom: 12px; }}\n"
      "th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}\n"
      "th {{ background: #f0f0f0; }}\n"
      "td.l, th.l {{ text-align: left; }}\n"
      "td.bad {{ color: #b00; font-weight: bold; }}\n"
      "li.error {{ color: #b00; }}\n"
      "li.warning {{ color: #965; }}\n"
      ".plots {{ display: flex; flex-wrap: wrap; gap: 16px; }}\n"
      "code {{ font-size: 12px; }}\n"
      "</style>\n</head>\n<body>\n<h1>{0}</h1>\n"
      "<p>fabricscope {1}: {2} input(s), {3} test(s). Bandwidths in GB/s (nccl-tests' bus "
      "bandwidth); the average is the mean of every busbw value of a test, both placements, "
      "recomputed from the rows and set beside the one the log printed.</p>\n",
      XmlEscape(title), XmlEscape(kVersion), inputs.size(), tests.size());

  html +=
      "<h2>Summary</h2>\n<table>\n<tr><th class=\"l\">source</th><th class=\"l\">collective"
      "</th><th class=\"l\">type</th><th class=\"l\">op</th><th>ranks</th><th>nodes</th>"
      "<th>rows</th><th>avg busbw</th><th>printed</th><th>peak busbw</th><th>at</th>"
      "<th>half peak from</th><th>latency floor (us)</th><th>#wrong</th></tr>\n";
  for (const TestAnalysis& t : tests) {
    const bool bad_wrong = t.wrong.has_value() && *t.wrong > 0;
    html += fmt::format(
        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
        "<td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:g}</td><td{}>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>\n",
        XmlEscape(t.source), XmlEscape(t.collective), XmlEscape(t.type), XmlEscape(t.op),
        t.ranks > 0 ? std::to_string(t.ranks) : "-", t.nodes > 0 ? std::to_string(t.nodes) : "-",
        t.rows, t.avg_busbw, t.avg_busbw_consistent ? "" : " class=\"bad\"",
        t.avg_busbw_printed.has_value() ? fmt::format("{:g}", *t.avg_busbw_printed) : "-",
        analyze::Trimmed(t.peak_busbw, 2), FormatBytes(t.peak_size),
        t.half_peak_size.has_value() ? FormatBytes(*t.half_peak_size) : "-",
        t.latency_floor_us.has_value() ? analyze::Trimmed(*t.latency_floor_us, 2) : "-",
        bad_wrong ? " class=\"bad\"" : "", t.wrong.has_value() ? std::to_string(*t.wrong) : "N/A");
  }
  html += "</table>\n";
  for (const TestAnalysis& t : tests) {
    if (t.notes.empty() && t.transports.empty()) continue;
    html += "<p><b>" + XmlEscape(t.source + " " + t.collective) + "</b></p>\n<ul>\n";
    for (const auto& line : t.transports)
      html += "<li>transport: <code>" + XmlEscape(line) + "</code></li>\n";
    for (const auto& note : t.notes) html += "<li>" + XmlEscape(note) + "</li>\n";
    html += "</ul>\n";
  }
  if (!diagnostics.empty()) {
    html += "<h2>Reading problems</h2>\n<ul>\n";
    for (const Diagnostic& d : diagnostics) {
      html += fmt::format("<li class=\"{}\"><code>{}</code></li>\n",
                          d.severity == Diagnostic::Severity::kError ? "error" : "warning",
                          XmlEscape(d.ToString()));
    }
    html += "</ul>\n";
  }
  html += "<h2>Plots</h2>\n";
  for (const TestPlots& plot : PlotResults(inputs)) {
    html += "<h3>" + XmlEscape(plot.collective) + "</h3>\n<div class=\"plots\">\n" +
            plot.busbw_svg + plot.time_svg + "</div>\n";
  }
  html += sections;
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace fabricscope
