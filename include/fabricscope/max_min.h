// Max-min fair sharing of link capacity among coupled flows, by progressive filling.
#pragma once

#include <cstddef>
#include <vector>

namespace fabricscope::sim {

// Flows as a compressed sparse row table: flow f uses link links[i] with coefficient
// coefs[i] for i in [offsets[f], offsets[f + 1]): a rate r puts coefs[i] * r on that link.
// A ring channel is one flow over every link of every hop (it moves at its slowest hop); a
// connection split over q queue pairs puts 1/q on each QP's path.
struct FlowSet {
  std::vector<size_t> offsets = {0};
  std::vector<int> links;
  std::vector<double> coefs;

  size_t size() const { return offsets.size() - 1; }
  // Appends a flow; `entries` may repeat a link (coefficients add up).
  void Add(std::vector<std::pair<int, double>> entries);
};

// Scratch space reused across calls, so an event loop does not reallocate.
struct MaxMinWorkspace {
  std::vector<double> remaining;
  std::vector<double> weight;
  std::vector<unsigned> version;
  std::vector<size_t> link_offsets;
  std::vector<int> link_flows;
  std::vector<char> frozen;
};

// Rates (same unit as `capacity`) of the flows with active[f] != 0; others get 0. The
// classic water-filling: every unfrozen flow grows at the same pace until a link fills;
// the flows through it freeze at that rate. A flow without links gets +infinity. A heap of
// links keyed by the level at which each fills makes it O(uses x log links).
void MaxMinRates(const std::vector<double>& capacity, const FlowSet& flows,
                 const std::vector<char>& active, std::vector<double>& rates,
                 MaxMinWorkspace& workspace);

}  // namespace fabricscope::sim
