// The report as people read it: what ran, the matrix, and the verdict last, where the eye
// lands: its one line, then the findings (culprits, undecided suspects, stragglers, notes)
// in the one text form of every diagnosis.
#include <fmt/format.h>

#include <cmath>
#include <ostream>
#include <string>

#include "fabricscope/finding.h"
#include "fabricscope/locate.h"
#include "locate/matrix.h"

namespace fabricscope {
namespace {

constexpr int kMaxTextNodes = 16;  // wider than a terminal beyond this

std::string Cell(double v) { return std::isnan(v) ? "." : fmt::format("{:.3g}", v); }

void WriteMatrix(const LocateReport& report, const locate::PairGrid& grid,
                 const std::vector<double>& values, const char* metric, double median, int rail,
                 std::ostream& out) {
  const auto& names = report.layout.names;
  size_t width = 9;  // "0.00592*": three digits, a star
  for (const auto& n : names) width = std::max(width, n.size() + 1);
  out << fmt::format(
      "#\n# {} bus bandwidth (GB/s, median of each pair's measurements){}, typical {}; * slow: "
      "below {:.2f}x the other pairs at {:.1f}% confidence\n",
      metric, report.layout.rails > 1 ? fmt::format(", rail {}", rail) : std::string(),
      Cell(median), report.options.threshold, 100.0 * report.options.confidence);
  out << "# " << std::string(width, ' ');
  for (const auto& n : names) out << fmt::format("{:>{}}", n, width);
  out << "\n";
  for (int row = 0; row < grid.cells; ++row) {
    out << "# " << fmt::format("{:<{}}", names[static_cast<size_t>(row)], width);
    for (int col = 0; col < grid.cells; ++col) {
      std::string cell = row == col ? "-" : Cell(grid.At(values, row, col));
      if (grid.slow[static_cast<size_t>(row) * static_cast<size_t>(grid.cells) +
                    static_cast<size_t>(col)]) {
        cell += "*";
      }
      out << fmt::format("{:>{}}", cell, width);
    }
    out << "\n";
  }
}

}  // namespace

void WriteLocateText(const LocateReport& report, std::ostream& out) {
  const ClusterLayout& layout = report.layout;
  const LocateRounds& r = report.rounds;
  out << fmt::format("# fabricscope locate: {} nodes, {} rail{}, backend {}{}", layout.names.size(),
                     layout.rails, layout.rails == 1 ? "" : "s", report.backend,
                     report.backend_version.empty() ? "" : " " + report.backend_version);
  if (report.bytes > 0) {
    out << fmt::format(", {} bytes x {} iterations per measurement", report.bytes, report.iters);
  }
  out << "\n";
  out << fmt::format(
      "# {} schedule: {} per-node + {} pair + {} again + {} collective = {} rounds, {} sweep{}\n",
      report.options.mode == LocateMode::kFull
          ? "full"
          : fmt::format("quick (coverage {})", report.options.coverage),
      r.per_node, r.pairs, r.again, r.world, r.Total(), report.sweeps,
      report.sweeps == 1 ? "" : "s");
  for (const RailBaseline& b : report.baselines) {
    out << fmt::format(
        "# noise{}: {:.3f} (sd of log bandwidth between repeats of one pair, {:.0f} df)\n",
        layout.rails > 1 ? fmt::format(" rail {}", b.rail) : std::string(), b.sigma, b.noise_df);
  }

  if (static_cast<int>(layout.names.size()) <= kMaxTextNodes) {
    for (int rail = 0; rail < layout.rails; ++rail) {
      const locate::PairGrid grid = locate::BuildGrid(report, rail, kMaxTextNodes);
      const RailBaseline& b = report.baselines[static_cast<size_t>(rail)];
      WriteMatrix(report, grid, grid.sendrecv, "sendrecv", b.sendrecv_typical, rail, out);
      if (std::isnan(b.all_reduce_typical)) {
        // NCCL's pairs on the job's communicator: sendrecv only (docs/locate.md).
        out << "#\n# all_reduce: not measured in the pairs (device memory: each pair runs "
               "sendrecv on the job's communicator)\n";
        continue;
      }
      WriteMatrix(report, grid, grid.all_reduce, "all_reduce", b.all_reduce_typical, rail, out);
    }
  } else {
    out << fmt::format("#\n# the {} x {} matrix is in the JSON (--json) and the heatmap (--svg)\n",
                       layout.names.size(), layout.names.size());
  }
  if (!report.node_samples.empty()) {
    out << "#\n# per-node all_reduce bus bandwidth (GB/s):";
    for (const NodeSample& s : report.node_samples) {
      out << " " << layout.names[static_cast<size_t>(s.node)] << "=" << Cell(s.all_reduce_busbw);
    }
    out << "\n";
  }

  out << "#\n";
  if (report.world_times && report.stragglers.empty()) {
    out << fmt::format("# stragglers: none (all_reduce over all {} ranks, {:.0f}-{:.0f} us)\n",
                       report.world_times->per_rank_us.size(), report.world_times->min_us,
                       report.world_times->max_us);
  }
  // Scripts and people read this line (tests/multihost/locate_testbed.sh); the findings
  // below it say the same with the evidence, the noise and what to do.
  out << "# verdict: " << locate::Verdict(report) << "\n";
  out << FindingsText(report.findings);
}

}  // namespace fabricscope
