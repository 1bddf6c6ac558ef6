// Private: the judgements of one collective and size bucket, shared by the JSONL and the
// Prometheus paths of watch.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/watch.h"

namespace fabricscope::watch {

// Against the platform's band, the job's baseline and the p99 limit; an alert line each.
void JudgeBucket(WatchBucket* bucket, int nodes, const WatchOptions& options,
                 WatchBaseline* baseline, std::vector<std::string>* alerts);

}  // namespace fabricscope::watch
