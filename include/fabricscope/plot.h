// Pictures of results: SVG plots against message size, and one self-contained HTML report.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/analyze.h"
#include "fabricscope/parse.h"

namespace fabricscope {

// One line of a plot: a label and its (x, y) points, in x order.
struct PlotSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;
  // A dashed line without markers: a prediction drawn over the measured lines.
  bool dashed = false;
  // Palette index, so a prediction can share its measurement's colour; -1: the position.
  int color = -1;
};

// What a plot shows. The y axis is logarithmic, and by default x too: sizes span 8 B to 16 GB,
// and busbw and time span four decades each; points <= 0 cannot be drawn there and are left
// out. A linear x (log_x false) is for a count such as history's runs.
struct PlotOptions {
  std::string title;
  std::string x_label = "message size";
  std::string y_label;
  bool x_is_bytes = true;  // tick labels "1K", "1M" rather than numbers
  bool log_x = true;       // false: a linear x axis, ticks at whole numbers
  int width = 760;
  int height = 420;
};

// A standalone SVG document (it also works inline in HTML).
std::string RenderSvgPlot(const std::vector<PlotSeries>& series, const PlotOptions& options);

// The busbw and time plots of every test of `inputs`, one pair per collective: each run's
// test (collective, type, op) is a line, and each point the mean over both placements and
// every -N cycle of that size (the value compare takes by default).
struct TestPlots {
  std::string collective;
  std::string busbw_svg;
  std::string time_svg;
};
std::vector<TestPlots> PlotResults(const std::vector<ParsedResults>& inputs);

// One HTML file with everything inside (no scripts, no external files): per input its
// diagnostics and summaries, then the plots, then `sections`: more HTML of the same kind
// (the fabric's picture and findings, from fabric::FormatHtmlSection), "" none.
std::string RenderHtmlReport(const std::vector<ParsedResults>& inputs, const std::string& title,
                             const std::string& sections = "");

}  // namespace fabricscope
