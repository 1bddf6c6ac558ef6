// Private: what a test's large-size busbw should be (a catalog band, else the model) and what
// it was, over every sweep, with the verdict that follows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/evidence.h"
#include "fabricscope/check.h"

namespace fabricscope::check {

// The measured busbw against the expectation; several rules read it.
struct BandwidthJudgement {
  std::optional<ExpectedBusbw> expected;
  std::string not_judged;       // why there is no verdict, when there is none
  std::vector<double> samples;  // one per sweep that reached the judged sizes
  std::optional<double> measured;
  size_t sizes_judged = 0;  // sizes at or above expected->from_size (of the longest sweep)
  std::optional<VerdictConfidence> confidence;
  CheckStatus status = CheckStatus::kNotApplicable;
  std::string fallback;  // why the model stood in for the catalog, when it did
  // On two nodes, a peak above what the node's NICs carry: NCCL used Tree or NVLS.
  bool above_nic_total = false;
  double nic_total = 0;  // GB/s per node, one direction
};

// Whether the platform's figures can judge this test at all: they cannot without a platform,
// or for a host-memory run against a GPU platform of the catalog.
bool PlatformApplies(const TestEvidence& test, const PlatformChoice& choice);

BandwidthJudgement JudgeBandwidth(const TestEvidence& test, const PlatformChoice& choice,
                                  const CheckOptions& options);

}  // namespace fabricscope::check
