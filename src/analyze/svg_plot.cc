// Log-log line plots as SVG, written by hand: a few hundred bytes of markup per series, no
// plotting library, and the same text for the same data (tests compare it).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fabricscope/html_escape.h"
#include "fabricscope/plot.h"

namespace fabricscope {
namespace {

// Tableau's ten colours: distinct for the usual handful of runs, and for colour-blind readers.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kLeft = 70;
constexpr int kRight = 220;  // legend
constexpr int kTop = 40;
constexpr int kBottom = 50;

// "8", "512", "4K", "2M", "16G": binary units, as sizes are swept.
std::string ByteTick(double bytes) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T", "P"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:g}{}", bytes, kUnits[unit]);
}

std::string NumberTick(double value) { return fmt::format("{:g}", value); }

struct Range {
  double lo = 0;  // log of the axis ends
  double hi = 1;
};

}  // namespace

std::string RenderSvgPlot(const std::vector<PlotSeries>& series, const PlotOptions& options) {
  const int width = std::max(options.width, kLeft + kRight + 100);
  const int height = std::max(options.height, kTop + kBottom + 100);
  const double x0 = kLeft;
  const double x1 = width - kRight;
  const double y0 = kTop;
  const double y1 = height - kBottom;

  double min_x = std::numeric_limits<double>::infinity();
  double max_x = 0;
  double min_y = std::numeric_limits<double>::infinity();
  double max_y = 0;
  for (const PlotSeries& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!(x > 0) || !(y > 0) || !std::isfinite(x) || !std::isfinite(y)) continue;
      min_x = std::min(min_x, x);
      max_x = std::max(max_x, x);
      min_y = std::min(min_y, y);
      max_y = std::max(max_y, y);
    }
  }
  const bool empty = !(max_x > 0);

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">{3}"
      "</text>\n",
      width, height, (x0 + x1) / 2, analyze::XmlEscape(options.title));
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", x0,
      y0, x1 - x0, y1 - y0);
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n"
      "<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
      (x0 + x1) / 2, height - 12, analyze::XmlEscape(options.x_label), (y0 + y1) / 2, (y0 + y1) / 2,
      analyze::XmlEscape(options.y_label));
  if (empty) {
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#888\">no positive "
        "values to plot on log axes</text>\n</svg>\n",
        (x0 + x1) / 2, (y0 + y1) / 2);
    return svg;
  }

  // x: powers of two (sizes are swept by factors of 2), or whole numbers on a linear axis;
  // y: whole decades.
  const auto fx = [&](double x) { return options.log_x ? std::log2(x) : x; };
  Range rx{std::floor(fx(min_x)), std::ceil(fx(max_x))};
  if (rx.hi <= rx.lo) rx.hi = rx.lo + 1;
  Range ry{std::floor(std::log10(min_y)), std::ceil(std::log10(max_y))};
  if (ry.hi <= ry.lo) ry.hi = ry.lo + 1;
  const auto px = [&](double x) { return x0 + (fx(x) - rx.lo) / (rx.hi - rx.lo) * (x1 - x0); };
  const auto py = [&](double y) {
    return y1 - (std::log10(y) - ry.lo) / (ry.hi - ry.lo) * (y1 - y0);
  };

  // At most about ten labels on x: every 1, 2, 3, 5 or 10 powers of two (or numbers).
  const int span = static_cast<int>(rx.hi - rx.lo);
  int step = 1;
  for (int candidate : {1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000}) {
    step = candidate;
    if (span / candidate <= 10) break;
  }
  for (int k = static_cast<int>(rx.lo); k <= static_cast<int>(rx.hi); k += step) {
    const double value = options.log_x ? std::ldexp(1.0, k) : k;
    const double x = px(value);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x, y0, y1, y1 + 16, options.x_is_bytes ? ByteTick(value) : NumberTick(value));
  }
  for (int k = static_cast<int>(ry.lo); k <= static_cast<int>(ry.hi); ++k) {
    const double value = std::pow(10.0, k);
    const double y = py(value);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#d0d0d0\"/>\n"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        x0, y, x1, x0 - 6, y + 4, NumberTick(value));
    // Minor lines at 2..9 x 10^k, unlabeled, to read values between decades.
    for (int m = 2; m <= 9 && k < static_cast<int>(ry.hi); ++m) {
      svg += fmt::format(
          "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#f2f2f2\"/>\n", x0,
          py(m * value), x1);
    }
  }

  for (size_t i = 0; i < series.size(); ++i) {
    const size_t slot = series[i].color >= 0 ? static_cast<size_t>(series[i].color) : i;
    const char* color = kPalette[slot % std::size(kPalette)];
    const char* dash = series[i].dashed ? " stroke-dasharray=\"6 4\"" : "";
    std::string points;
    std::string markers;
    for (const auto& [x, y] : series[i].points) {
      if (!(x > 0) || !(y > 0) || !std::isfinite(x) || !std::isfinite(y)) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      if (series[i].dashed) continue;
      markers += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\"/>", px(x), py(y));
    }
    svg += fmt::format(
        "<g fill=\"{0}\" stroke=\"{0}\"><polyline fill=\"none\" stroke-width=\"1.8\"{3} "
        "points=\"{1}\"/>{2}</g>\n",
        color, points, markers, dash);
    const double ly = y0 + 8 + 18.0 * static_cast<double>(i);
    std::string label = series[i].label;
    if (label.size() > 32) label = "..." + label.substr(label.size() - 29);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"{7}/>"
        "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
        x1 + 12, ly, x1 + 32, color, x1 + 38, ly + 4, analyze::XmlEscape(label), dash);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace fabricscope
