// Private: the topology blame. Given which leaf switch each host hangs from, a set of slow
// pairs is attributed to the element they share: a leaf's uplinks.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope::topology {

// The job's nodes (indices) behind each leaf switch the topology names, by switch name.
std::vector<std::pair<std::string, std::vector<int>>> Leaves(const Topology& topology,
                                                             const ClusterLayout& layout);

// A leaf (two or more of the job's nodes, not all) whose pairs to every node behind other
// switches are slow (at least 3 in 4 slow, none fine) and whose pairs among themselves are
// not slow: its uplinks are named (SuspectKind::kUplink), and the links they explain are
// taken off the suspects. Runs on the report's judgements; a no-op without a topology.
void Blame(const Topology& topology, LocateReport& report);

}  // namespace fabricscope::topology
