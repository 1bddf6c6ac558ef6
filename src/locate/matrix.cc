// The node x node matrix and the one-line verdict, shared by every output of locate.
#include "locate/matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace fabricscope::locate {
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
  g.slow.assign(size, 0);
  for (const PairJudgement& j : report.judgements) {
    if (j.rail != rail) continue;
    const int x = j.pair.a / g.block;
    const int y = j.pair.b / g.block;
    for (const auto& [row, col] : {std::pair{x, y}, std::pair{y, x}}) {
      const size_t at =
          static_cast<size_t>(row) * static_cast<size_t>(g.cells) + static_cast<size_t>(col);
      KeepSlowest(g.sendrecv, at, j.sendrecv);
      KeepSlowest(g.all_reduce, at, j.all_reduce);
      KeepSlowest(g.ratio, at, j.ratio);
      if (j.call == PairCall::kSlow) g.slow[at] = 1;
    }
  }
  return g;
}

std::string Describe(const LocateReport& report, const Suspect& s) {
  auto name = [&](int node) { return report.layout.names[static_cast<size_t>(node)]; };
  std::string text(NameOf(s.kind));
  switch (s.kind) {
    case SuspectKind::kUplink:
      return "uplink " + s.element;
    case SuspectKind::kSpineLink:
      return "spine link " + s.element;
    case SuspectKind::kSomeUplinks:
      return "some uplinks of " + s.element;
    case SuspectKind::kSpine:
      return "spine " + s.element;
    case SuspectKind::kRail:
      return "rail " + std::to_string(s.rails.front());
    default:
      break;
  }
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
  const double confidence = 100.0 * report.options.confidence;
  switch (report.status) {
    case LocateStatus::kClear:
      return fmt::format(
          "nobody named: every node and pair decided fine (above {:.2f}x the others at {:.1f}% "
          "confidence)",
          report.options.threshold, confidence);
    case LocateStatus::kInconclusive:
      return "inconclusive, nobody named: " + report.unknown;
    case LocateStatus::kAmbiguous:
      return "ambiguous: " + report.unknown;
    case LocateStatus::kFound:
      break;
  }
  std::string text =
      fmt::format("{} culprit{} named at {:.1f}% confidence: ", report.suspects.size(),
                  report.suspects.size() == 1 ? "" : "s", confidence);
  for (size_t i = 0; i < report.suspects.size(); ++i) {
    text += (i ? "; " : "") + Describe(report, report.suspects[i]);
  }
  return text;
}

}  // namespace fabricscope::locate
