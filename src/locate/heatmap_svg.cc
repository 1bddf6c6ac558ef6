// The node x node heatmap: each cell a pair's bandwidth over the typical pair, red (slow)
// through yellow to green; named suspects outlined. A self-contained SVG file.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "fabricscope/html_escape.h"
#include "fabricscope/locate.h"
#include "locate/matrix.h"

namespace fabricscope {
namespace {

constexpr int kMaxCells = 256;    // above this many nodes, a cell is a block of nodes
constexpr int kMaxLabelled = 64;  // names on the axes up to this many cells
constexpr double kPlotPixels = 768;

// Red at 0.25x and below, yellow at 0.7x, green at 1x and above (ColorBrewer RdYlGn ends).
std::string Color(double ratio) {
  if (std::isnan(ratio)) return "#f0f0f0";
  struct Stop {
    double at;
    std::array<double, 3> rgb;
  };
  static constexpr std::array<Stop, 3> stops = {
      Stop{0.25, {215, 48, 39}}, Stop{0.7, {254, 224, 139}}, Stop{1.0, {26, 152, 80}}};
  const double r = std::clamp(ratio, stops.front().at, stops.back().at);
  size_t i = 0;
  while (i + 2 < stops.size() && r > stops[i + 1].at) ++i;
  const double t = (r - stops[i].at) / (stops[i + 1].at - stops[i].at);
  std::array<int, 3> c{};
  for (size_t k = 0; k < 3; ++k) {
    c[k] = static_cast<int>(
        std::lround(stops[i].rgb[k] + t * (stops[i + 1].rgb[k] - stops[i].rgb[k])));
  }
  return fmt::format("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
}

}  // namespace

std::string LocateHeatmapSvg(const LocateReport& report, int rail) {
  const locate::PairGrid g = locate::BuildGrid(report, rail, kMaxCells);
  const auto& names = report.layout.names;
  const bool labelled = g.block == 1 && g.cells <= kMaxLabelled;
  const double cell = std::clamp(std::floor(kPlotPixels / std::max(1, g.cells)), 1.0, 40.0);
  const double left = labelled ? 110 : 40;
  const double top = labelled ? 120 : 60;  // room for the slanted column names
  const double side = cell * g.cells;
  const double width = std::max(left + side + 140, 900.0);  // and for the title
  const double height = top + side + 40;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  std::string title =
      fmt::format("fabricscope locate: pair bandwidth / typical pair, {} nodes", names.size());
  if (report.layout.rails > 1) title += fmt::format(", rail {}", rail);
  if (g.block > 1) title += fmt::format(" ({} nodes per cell, slowest pair shown)", g.block);
  svg += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     left, analyze::XmlEscape(title));
  svg += fmt::format("<text x=\"{}\" y=\"42\">{}</text>\n", left,
                     analyze::XmlEscape(locate::Verdict(report)));

  for (int row = 0; row < g.cells; ++row) {
    for (int col = 0; col < g.cells; ++col) {
      const double x = left + col * cell;
      const double y = top + row * cell;
      const double ratio = g.At(g.ratio, row, col);
      const std::string fill = row == col && g.block == 1 ? "#d9d9d9" : Color(ratio);
      if (labelled && row != col) {
        svg += fmt::format(
            "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"{}\">"
            "<title>{} - {}: {:.2f}x, sendrecv {:.3g} GB/s, all_reduce {:.3g} "
            "GB/s</title></rect>\n",
            x, y, cell, cell, fill, analyze::XmlEscape(names[static_cast<size_t>(row)]),
            analyze::XmlEscape(names[static_cast<size_t>(col)]), ratio, g.At(g.sendrecv, row, col),
            g.At(g.all_reduce, row, col));
      } else {
        svg += fmt::format(
            "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"{}\"/>\n", x,
            y, cell, cell, fill);
      }
    }
  }
  if (labelled) {
    for (int i = 0; i < g.cells; ++i) {
      const std::string name = analyze::XmlEscape(names[static_cast<size_t>(i)]);
      svg += fmt::format(
          "<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}"
          "</text>\n",
          left - 4, top + (i + 0.5) * cell, name);
      svg += fmt::format("<text transform=\"translate({:.0f},{:.0f}) rotate(-45)\">{}</text>\n",
                         left + (i + 0.5) * cell, top - 4, name);
    }
  }
  // Named suspects: a node's row and column, a link's two cells.
  auto outline = [&](double x, double y, double w, double h) {
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
        "stroke=\"black\" stroke-width=\"2\"/>\n",
        x, y, w, h);
  };
  for (const Suspect& s : report.suspects) {
    if (std::find(s.rails.begin(), s.rails.end(), rail) == s.rails.end() &&
        s.kind != SuspectKind::kIntraNode) {
      continue;
    }
    const int a = s.nodes.front() / g.block;
    if (s.kind == SuspectKind::kUplink || s.kind == SuspectKind::kSpineLink ||
        s.kind == SuspectKind::kSomeUplinks || s.kind == SuspectKind::kRail ||
        s.kind == SuspectKind::kSpine) {
      for (int x : s.nodes) {
        const int row = x / g.block;  // the cell of node x: integer division on purpose
        outline(left, top + row * cell, side, cell);
      }
    } else if (s.kind == SuspectKind::kLink) {
      const int b = s.nodes.back() / g.block;
      outline(left + b * cell, top + a * cell, cell, cell);
      outline(left + a * cell, top + b * cell, cell, cell);
    } else if (s.kind != SuspectKind::kIntraNode) {
      outline(left, top + a * cell, side, cell);
      outline(left + a * cell, top, cell, side);
    } else {
      outline(left + a * cell, top + a * cell, cell, cell);
    }
  }
  // Legend.
  const double lx = left + side + 20;
  for (int i = 0; i <= 20; ++i) {
    const double ratio = 1.0 - 0.8 * i / 20.0;
    svg += fmt::format("<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"16\" height=\"8\" fill=\"{}\"/>\n",
                       lx, top + i * 8, Color(ratio));
  }
  for (const auto& [ratio, label] :
       {std::pair{1.0, "1.0x"}, std::pair{0.7, "0.7x"}, std::pair{0.2, "0.2x"}}) {
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" dominant-baseline=\"middle\">{}</text>\n",
                       lx + 22, top + (1.0 - ratio) / 0.8 * 160 + 4, label);
  }
  svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\">not measured</text>\n", lx + 22, top + 190);
  svg += fmt::format("<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"16\" height=\"8\" fill=\"{}\"/>\n",
                     lx, top + 186, Color(std::nan("")));
  svg += "</svg>\n";
  return svg;
}

}  // namespace fabricscope
