// Private: the straggler ranks of a window, from start-time skew: for every collective that
// several ranks recorded (one communicator, one sequence number), how late each rank called
// it after the first one. The rank everyone waits for is the one that is late, and last,
// most of the time.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/finding.h"
#include "fabricscope/watch.h"

namespace fabricscope::watch {

// Ranks by median lateness, latest first; adds a CRITICAL "straggler" finding per straggler
// that stands out of the other ranks' lateness by options.straggler_us, and an undecided one
// (with the next rank's lateness, the noise) for one that does not.
std::vector<WatchRank> RankLateness(const std::vector<const InspectorRecord*>& records,
                                    const WatchOptions& options, std::vector<Finding>* findings);

}  // namespace fabricscope::watch
