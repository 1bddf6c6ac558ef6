// Private: what a test's large-size busbw should be (a catalog band, else the model) and what
// it was, over every sweep, with the verdict that follows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/bands.h"
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
  Severity status = Severity::kInfo;
  std::string fallback;  // why the model stood in for the catalog, when it did
  // On two or more nodes, a peak above what the node's NICs carry: NCCL used Tree or NVLS (two
  // nodes) or in-network reduction.
  bool above_nic_total = false;
  double nic_total = 0;  // GB/s per node, one direction
  // The nodes share one NVLink domain (2 to 18 trays of an NVL72 rack, MNNVL not turned off):
  // the run crosses NVLink, so the NICs bound nothing and the in-domain bands judge it.
  bool over_nvlink = false;
  // How NCCL's algorithm was known, and what the judged band's algorithm rests on.
  AlgorithmFacts facts;
  std::string algorithm_basis;  // "the run", "the measurement", "NCCL's default", "unknown"
  // The other bands the run could be judged against (algorithm not excluded, sizes reached),
  // with the verdict each would give; the judged band first.
  std::vector<std::pair<Expectation, Severity>> possible;
  // Judged against NCCL's default algorithm, failed it, and healthy against another band the
  // log does not exclude: which one (the verdict is then a WARN that says so).
  std::optional<Expectation> healthy_elsewhere;
  // The fabric has in-network reduction (SHARP) and a CollNet band covers the test, but the run
  // was judged against a band without it: the run did not use it.
  std::optional<Expectation> missing_in_network;
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
