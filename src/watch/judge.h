// Private: the judgements of one collective and size bucket, shared by the JSONL and the
// Prometheus paths of watch, and the two kinds of finding every judgement of watch makes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fabricscope/finding.h"
#include "fabricscope/watch.h"

namespace fabricscope::watch {

// What a finding says, for the two constructors below.
struct FindingText {
  std::string where;  // "rank 2 on node node-b", "all_reduce <=1MiB"
  std::string what;   // the sentence, with the figures it compares
  std::string fix;    // what to do, or (undecided) what would decide
  std::map<std::string, double> figures{};
};

// A crossed threshold: CRITICAL, watch exits 1 on it.
Finding Alert(std::string source, FindingText text);
// A judgement within the noise: undecided (WARN, decided = false), watch exits 4 when nothing
// is CRITICAL. `text.what` carries the noise figure, `text.fix` what would decide.
Finding Inconclusive(std::string source, FindingText text);

// Against the platform's band, the job's baseline and the p99 limit; a finding each.
void JudgeBucket(WatchBucket* bucket, int nodes, const WatchOptions& options,
                 WatchBaseline* baseline, std::vector<Finding>* findings);

}  // namespace fabricscope::watch
