// Private: the slow link of a communicator, from the profiler's ProxyOp times
// ("fabricscope_link" records): each rank's send ProxyOps towards one peer, compared with the
// send links of the other ranks of the communicator (in a ring, its neighbours').
#pragma once

#include <string>
#include <vector>

#include "fabricscope/finding.h"
#include "fabricscope/watch.h"

namespace fabricscope::watch {

// A CRITICAL "slow-link" finding naming the slow peer pair when one send link is
// options.slow_link_ratio times the median of the others and beyond their spread; an undecided
// one (with the spread, the noise, and the command that would decide) when it is slower but
// within the spread.
void JudgeLinks(const std::vector<InspectorLink>& links, const WatchOptions& options,
                std::vector<Finding>* findings);

}  // namespace fabricscope::watch
