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
  // The nodes share one NVLink domain (2 to 18 trays of an NVL72 rack, MNNVL not turned off):
  // the run crosses NVLink, so the NICs bound nothing and the in-domain bands judge it.
  bool over_nvlink = false;
};

// Whether a test runs inside one NVLink domain of an MNNVL platform: its nodes fit in a
// domain and NCCL_MNNVL_ENABLE=0 was not recorded with it.
bool OverNvlink(const TestEvidence& test, const Platform& platform);

// Whether the platform's figures can judge this test at all: they cannot without a platform,
// or for a host-memory run against a GPU platform of the catalog.
bool PlatformApplies(const TestEvidence& test, const PlatformChoice& choice);

BandwidthJudgement JudgeBandwidth(const TestEvidence& test, const PlatformChoice& choice,
                                  const CheckOptions& options);

}  // namespace fabricscope::check
