// Collectives broken into the flows NCCL generates: ring channels over the NICs, switch
// aggregation trees for in-network reduction, one connection per GPU for sendrecv.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/fabric_sim.h"
#include "fabricscope/max_min.h"

namespace fabricscope::sim {

// The flows of one simulation, ready for fair sharing.
struct FlowPlan {
  FlowSet flows;
  std::vector<double> bytes;             // per flow: bytes to move at its rate
  std::vector<int> group;                // per flow: index into the groups
  std::vector<double> link_connections;  // per link: connections routed over it
  size_t connections = 0;
  std::string unroutable;  // set when some connection has no live path
};

// Throws UsageError for a collective the simulator cannot break into flows.
FlowPlan PlanFlows(const Fabric& fabric, const SimOptions& options,
                   const std::vector<std::vector<int>>& groups);

}  // namespace fabricscope::sim
