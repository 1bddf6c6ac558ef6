// Private: the straggler ranks of a window, from start-time skew: for every collective that
// several ranks recorded (one communicator, one sequence number), how late each rank called
// it after the first one. The rank everyone waits for is the one that is late, and last,
// most of the time.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/watch.h"

namespace fabricscope::watch {

// Ranks by median lateness, latest first; adds an alert line per straggler that stands out
// of the other ranks' lateness by options.straggler_us, and an "inconclusive" note (with the
// next rank's lateness, the noise) for one that does not.
std::vector<WatchRank> RankLateness(const std::vector<const InspectorRecord*>& records,
                                    const WatchOptions& options, std::vector<std::string>* alerts,
                                    std::vector<std::string>* notes);

}  // namespace fabricscope::watch
