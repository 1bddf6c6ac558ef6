// Private: the node x node matrix of one rail, for the text, JSON and SVG outputs. Above
// `max_cells` nodes a cell is a block of nodes and holds the slowest pair in it.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope::locate {

struct PairGrid {
  int nodes = 0;
  int cells = 0;  // per side
  int block = 1;  // nodes per cell
  // cells x cells, row-major and symmetric; NaN where nothing was measured.
  std::vector<double> sendrecv;
  std::vector<double> all_reduce;
  std::vector<double> ratio;  // bandwidth over the pairs it was compared with
  std::vector<char> slow;     // the classifier called it slow: the star, the verdict's evidence
  double At(const std::vector<double>& values, int row, int col) const {
    return values[static_cast<size_t>(row) * static_cast<size_t>(cells) + static_cast<size_t>(col)];
  }
};

// The judgements of `rail` (every measurement of a pair combined).
PairGrid BuildGrid(const LocateReport& report, int rail, int max_cells);

// "1 culprit named: node fs3" / "nobody named: ..." / "inconclusive: ...": the answer.
std::string Verdict(const LocateReport& report);

// "node fs3", "link fs2-fs5", "nic fs3 rail 1".
std::string Describe(const LocateReport& report, const Suspect& suspect);

}  // namespace fabricscope::locate
