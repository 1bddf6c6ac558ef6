// Private: which of a platform's bands can judge a test. A platform keys its bands by collective,
// scale and NCCL algorithm (Ring, Tree, NVLS, NVLSTree, CollNet, PAT); the algorithm comes from
// the run (NCCL_ALGO, NCCL's log), from what NCCL picks by default on the platform (the model's
// tuning tables), or stays unknown, and then every band it could be is named.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/evidence.h"
#include "fabricscope/check.h"

namespace fabricscope::check {

// What the run and the options say about NCCL's algorithm and the fabric.
struct AlgorithmFacts {
  // The algorithms NCCL_ALGO leaves NCCL ("Ring"; "^NVLS" leaves all but NVLS); empty: any.
  std::vector<std::string> allowed;
  std::string algorithm_from;  // "NCCL_ALGO=Ring in the run's environment"; empty: not said
  bool nvls = false;           // NVLS possible: the platform has it and the run did not turn it off
  std::string nvls_off_from;   // why not, when the platform has it
  std::optional<bool> sharp;   // in-network reduction on the fabric; empty: not known
  std::string sharp_from;      // "--sharp yes", "NCCL_COLLNET_ENABLE=1 in the run", ...
};

AlgorithmFacts ReadAlgorithmFacts(const TestEvidence& test, const Platform& platform,
                                  const CheckOptions& options);

// Whether `algorithm` (a band's; empty: NCCL's own choice) can have run, by the facts.
bool AlgorithmPossible(const std::string& algorithm, const AlgorithmFacts& facts);
// Whether NCCL_ALGO named it (or named nothing).
bool AlgorithmAllowed(const std::string& algorithm, const AlgorithmFacts& facts);

// The band algorithm NCCL picks on this platform for this test by default, from the model's
// tuning tables ("NVLS" for all_reduce on one 8-GPU Hopper node); "CollNet" when the fabric has
// in-network reduction and a CollNet band covers the test; empty when the model cannot say.
std::string DefaultAlgorithm(const TestEvidence& test, const Platform& platform,
                             const AlgorithmFacts& facts);

// "Ring 370.0 GB/s (healthy from 314.5)" for messages.
std::string BandName(const Expectation& band);

}  // namespace fabricscope::check
