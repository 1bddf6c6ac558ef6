// Private: the judgements of one collective and size bucket, shared by the JSONL and the
// Prometheus paths of watch, and the two kinds of finding every judgement of watch makes.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/finding.h"
#include "fabricscope/watch.h"

namespace fabricscope::watch {

// `finding` as a crossed threshold: CRITICAL, watch exits 1 on it.
Finding Alert(Finding finding);
// `finding` as a judgement within the noise: undecided (WARN, decided = false), watch exits 4
// when nothing is CRITICAL. Its `what` carries the noise figure, its `fix` what would decide.
Finding Inconclusive(Finding finding);

// Against the platform's band, the job's baseline and the p99 limit; a finding each.
void JudgeBucket(WatchBucket* bucket, int nodes, const WatchOptions& options,
                 WatchBaseline* baseline, std::vector<Finding>* findings);

}  // namespace fabricscope::watch
