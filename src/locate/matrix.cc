// The node x node matrix and the one-line verdict, shared by every output of locate.
#include "locate/matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "locate/classifier.h"

namespace fabricscope::matrix {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

void KeepSlowest(std::vector<double>& values, size_t at, double v) {
  if (std::isnan(v)) return;
  if (std::isnan(values[at]) || v < values[at]) values[at] = v;
}

}  // namespace

PairGrid BuildGrid(const LocateReport& report, int rail, int max_cells) {
  PairGrid g;
  g.nodes = static_cast<int>(report.layout.names.size());
  g.block = std::max(1, (g.nodes + max_cells - 1) / std::max(1, max_cells));
  g.cells = (g.nodes + g.block - 1) / g.block;
  const size_t size = static_cast<size_t>(g.cells) * static_cast<size_t>(g.cells);
  g.sendrecv.assign(size, kNone);
  g.all_reduce.assign(size, kNone);
  g.ratio.assign(size, kNone);
  RailBaseline values;
  for (const RailBaseline& b : report.baselines) {
    if (b.rail == rail) values = b;
  }
  const classify::Baseline baseline(values, 1.0, report.options);
  for (const PairSample& s : report.samples) {
    if (s.rail != rail) continue;
    const int x = s.pair.a / g.block;
    const int y = s.pair.b / g.block;
    const double ratio = baseline.Ratio(s.sendrecv_busbw, s.all_reduce_busbw, s.wrong);
    for (const auto& [row, col] : {std::pair{x, y}, std::pair{y, x}}) {
      const size_t at =
          static_cast<size_t>(row) * static_cast<size_t>(g.cells) + static_cast<size_t>(col);
      KeepSlowest(g.sendrecv, at, s.sendrecv_busbw);
      KeepSlowest(g.all_reduce, at, s.all_reduce_busbw);
      KeepSlowest(g.ratio, at, ratio);
    }
  }
  return g;
}

std::string Describe(const LocateReport& report, const Suspect& s) {
  auto name = [&](int node) { return report.layout.names[static_cast<size_t>(node)]; };
  std::string text(NameOf(s.kind));
  text += " " + name(s.nodes.front());
  if (s.kind == SuspectKind::kLink) text += "-" + name(s.nodes.back());
  if (s.kind == SuspectKind::kNic || (s.kind == SuspectKind::kLink && report.layout.rails > 1 &&
                                      static_cast<int>(s.rails.size()) < report.layout.rails)) {
    text += s.rails.size() == 1 ? " rail " : " rails ";
    for (size_t i = 0; i < s.rails.size(); ++i) {
      text += (i ? "," : "") + std::to_string(s.rails[i]);
    }
  }
  return text;
}

std::string Verdict(const LocateReport& report) {
  if (report.suspects.empty()) {
    if (report.unconfirmed.empty()) {
      return fmt::format("nobody named: no node or link measured below {:.2f}x the typical pair",
                         report.options.threshold);
    }
    return fmt::format(
        "nobody named: {} candidate{} below {:.2f}x the typical pair not confirmed "
        "by the retest",
        report.unconfirmed.size(), report.unconfirmed.size() == 1 ? "" : "s",
        report.options.threshold);
  }
  std::string text = fmt::format("{} culprit{} named: ", report.suspects.size(),
                                 report.suspects.size() == 1 ? "" : "s");
  for (size_t i = 0; i < report.suspects.size(); ++i) {
    text += (i ? "; " : "") + Describe(report, report.suspects[i]);
  }
  return text;
}

}  // namespace fabricscope::matrix
