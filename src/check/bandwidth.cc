#include "check/bandwidth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>
#include <tuple>

#include "check/confidence.h"
#include "fabricscope/analyze.h"
#include "fabricscope/collective.h"
#include "fabricscope/error.h"
#include "fabricscope/model.h"
#include "fabricscope/statistics.h"
#include "fabricscope/strings.h"

namespace fabricscope::check {
namespace {

// The collectives NCCL runs as a ring: the ones whose ring busbw a NIC total bounds.
bool RingCollective(const std::string& collective) {
  return collective == "all_reduce" || collective == "all_gather" ||
         collective == "reduce_scatter" || collective == "broadcast" || collective == "reduce";
}

bool CoversScale(const Expectation& e, const TestEvidence& test) {
  return e.collective == test.collective && test.nodes >= e.nodes_min &&
         (!e.nodes_max || test.nodes <= *e.nodes_max);
}

// Whether the measurement rules the band out: on two or more nodes a ring across the NICs
// cannot exceed their total, and a band above it (Tree/NVLS on two nodes, in-network reduction
// beyond) cannot be what a run below it used when it ran over the NICs at all. Inside an NVLink
// domain the NICs bound nothing, and only the bands above their total judge.
bool SideMismatch(const Expectation& e, const TestEvidence& test, const BandwidthJudgement& j,
                  double nic_total) {
  const bool network_band = e.typical_busbw <= nic_total;
  if (j.over_nvlink) return network_band;
  const bool above = j.above_nic_total;
  return test.nodes >= 2 && network_band == above;
}

// The catalog band that fits the run best, or null. Preference, in order: an algorithm the run
// allows (NCCL_ALGO); one that can have run (NVLS not turned off, CollNet only with in-network
// reduction); a band on the right side of the NIC total; the algorithm NCCL picks by default
// here; one whose sizes the run reached; measured over derived over assumed; the first listed.
const Expectation* ChooseBand(const TestEvidence& test, const Platform& platform,
                              BandwidthJudgement& j, size_t reach, bool& size_reached) {
  const double nic_total = platform.NicTotalGBs();
  const std::string default_algorithm = DefaultAlgorithm(test, platform, j.facts);
  const Expectation* best = nullptr;
  std::tuple<bool, bool, bool, bool, bool, int> best_key;
  for (const Expectation& e : platform.expected) {
    if (!CoversScale(e, test)) continue;
    if (j.over_nvlink && e.typical_busbw <= nic_total) continue;
    const bool not_default =
        !e.algorithm.empty() && !default_algorithm.empty() && e.algorithm != default_algorithm;
    const auto key = std::make_tuple(
        !AlgorithmAllowed(e.algorithm, j.facts), !AlgorithmPossible(e.algorithm, j.facts),
        SideMismatch(e, test, j, nic_total), not_default, reach < e.min_size, BasisRank(e.basis));
    if (best == nullptr || key < best_key) {
      best = &e;
      best_key = key;
    }
  }
  size_reached = best != nullptr && !std::get<4>(best_key);
  if (best != nullptr) {
    if (!j.facts.algorithm_from.empty() && !std::get<0>(best_key)) {
      j.algorithm_basis = "the run";
    } else if (test.nodes >= 2 && (j.above_nic_total || j.over_nvlink)) {
      j.algorithm_basis = "the measurement";
    } else if (!default_algorithm.empty() && !std::get<3>(best_key)) {
      j.algorithm_basis = "NCCL's default";
    } else {
      j.algorithm_basis = "unknown";
    }
  }
  return best;
}

// OK, WARN or CRITICAL of a mean against a band, without the interval.
Severity GradeAgainst(double measured, const Expectation& e, const CheckOptions& options) {
  if (measured >= e.low_busbw) return Severity::kOk;
  return measured >= options.warn_floor * e.low_busbw ? Severity::kWarn : Severity::kCritical;
}

// Every other band the run could have been judged against, graded; and the two cases where the
// choice of band decides the verdict: a run below NCCL's default band but healthy for another
// the log does not exclude (not known which ran: WARN), and a fabric with in-network reduction
// whose run was judged without it (WARN, naming it).
void WeighOtherBands(const TestEvidence& test, const Platform& platform, const Expectation& judged,
                     const CheckOptions& options, BandwidthJudgement& j) {
  const double nic_total = platform.NicTotalGBs();
  const double m = *j.measured;
  for (const Expectation& e : platform.expected) {
    if (!CoversScale(e, test) || test.largest_size < e.min_size) continue;
    if (!AlgorithmPossible(e.algorithm, j.facts) || SideMismatch(e, test, j, nic_total)) continue;
    if (j.over_nvlink && e.typical_busbw <= nic_total) continue;
    const bool seen = std::any_of(j.possible.begin(), j.possible.end(),
                                  [&](const auto& p) { return p.first.algorithm == e.algorithm; });
    if (!seen) j.possible.emplace_back(e, GradeAgainst(m, e, options));
  }
  if (j.facts.sharp == true && !judged.InNetwork()) {
    for (const Expectation& e : platform.expected) {
      if (e.InNetwork() && CoversScale(e, test)) {
        j.missing_in_network = e;
        j.status = std::max(j.status, Severity::kWarn);
        return;
      }
    }
  }
  if (j.algorithm_basis != "NCCL's default" || j.status == Severity::kOk) return;
  for (const auto& [band, status] : j.possible) {
    if (status == Severity::kOk && band.algorithm != judged.algorithm) {
      j.healthy_elsewhere = band;
      j.status = Severity::kWarn;
      if (j.facts.sharp == true && judged.InNetwork()) j.missing_in_network = judged;
      return;
    }
  }
}

// A size as -e takes it: "1G", "256M", "64K", else bytes.
std::string SizeFlag(size_t bytes) {
  for (const auto& [unit, suffix] :
       {std::pair{size_t{1} << 30, 'G'}, std::pair{size_t{1} << 20, 'M'},
        std::pair{size_t{1} << 10, 'K'}}) {
    if (bytes >= unit && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, suffix);
  }
  return std::to_string(bytes);
}

// The sizes of the sweeps at or above `from`, each once.
std::set<size_t> SizesFrom(const TestEvidence& test, size_t from) {
  std::set<size_t> sizes;
  for (const Sweep& sweep : test.sweeps) {
    for (auto it = sweep.busbw.lower_bound(from); it != sweep.busbw.end(); ++it) {
      sizes.insert(it->first);
    }
  }
  return sizes;
}

// The model's busbw over `sizes`, as an expectation; empty with `why` set when the model
// cannot stand in.
std::optional<ExpectedBusbw> ModelExpectation(const TestEvidence& test, const Platform& platform,
                                              const std::set<size_t>& sizes, bool ring,
                                              const CheckOptions& options, std::string& why) {
  const CollectiveSpec* spec = nullptr;
  for (const CollectiveSpec& s : Collectives()) {
    if (s.name == test.collective) spec = &s;
  }
  if (spec == nullptr) {
    why = "the model does not know the collective '" + test.collective + "'";
    return std::nullopt;
  }
  try {
    ModelOptions model_options;
    model_options.nodes = test.nodes;
    if (ring) model_options.algorithms = {NcclAlgorithm::kRing};
    const CollectiveModel model(platform, model_options);
    double sum = 0;
    std::string algorithm;
    std::string protocol;
    for (size_t size : sizes) {
      const Prediction p = model.Predict(spec->id, size);
      sum += p.busbw;
      algorithm = std::string(AlgorithmName(p.algorithm));
      protocol = std::string(ProtocolName(p.protocol));
    }
    ExpectedBusbw e;
    e.typical = sum / static_cast<double>(sizes.size());
    e.healthy = options.model_healthy * e.typical;
    e.fail_below = options.warn_floor * e.healthy;
    e.from_size = *sizes.begin();
    e.algorithm = algorithm;
    e.basis = "model";
    e.source = fmt::format(
        "fabricscope model (NCCL {} tuning constants over the platform's figures) for {} on {} "
        "node{}, {}/{}",
        NcclTuningVersion(), test.collective, test.nodes, test.nodes == 1 ? "" : "s", algorithm,
        protocol);
    return e;
  } catch (const Error& e) {
    why = std::string("the model cannot predict this run: ") + e.what();
    return std::nullopt;
  }
}

// OK, WARN or CRITICAL from the mean, or from the interval when there are repeats: a verdict
// whose band holds the true mean with less than 90% probability cannot be told from its
// neighbour, which is a WARN.
Severity Grade(BandwidthJudgement& j) {
  const ExpectedBusbw& e = *j.expected;
  const double m = *j.measured;
  Severity status = m >= e.healthy      ? Severity::kOk
                    : m >= e.fail_below ? Severity::kWarn
                                        : Severity::kCritical;
  if (j.confidence) {
    const double inf = std::numeric_limits<double>::infinity();
    double lo = e.fail_below;
    double hi = e.healthy;
    if (status == Severity::kOk) {
      lo = e.healthy;
      hi = inf;
    } else if (status == Severity::kCritical) {
      lo = -inf;
      hi = e.fail_below;
    }
    j.confidence->probability_verdict = ProbabilityBetween(*j.confidence, lo, hi);
    if (status != Severity::kWarn && j.confidence->probability_verdict < 0.9) {
      status = Severity::kWarn;
    }
  }
  return status;
}

// One sample per sweep: its mean busbw over the judged sizes.
void TakeSamples(const TestEvidence& test, BandwidthJudgement& j) {
  for (const Sweep& sweep : test.sweeps) {
    double sum = 0;
    size_t count = 0;
    for (auto it = sweep.busbw.lower_bound(j.expected->from_size); it != sweep.busbw.end(); ++it) {
      sum += it->second;
      ++count;
    }
    if (count == 0) continue;
    j.samples.push_back(sum / static_cast<double>(count));
    j.sizes_judged = std::max(j.sizes_judged, count);
  }
}

}  // namespace

bool OverNvlink(const TestEvidence& test, const Platform& platform) {
  return platform.InNvlinkDomain(test.nodes) && test.Env("NCCL_MNNVL_ENABLE") != "0";
}

bool PlatformApplies(const TestEvidence& test, const PlatformChoice& choice) {
  return choice.platform.has_value() && (!test.host_memory || choice.generic());
}

BandwidthJudgement JudgeBandwidth(const TestEvidence& test, const PlatformChoice& choice,
                                  const CheckOptions& options) {
  BandwidthJudgement j;
  if (!PlatformApplies(test, choice)) {
    j.not_judged = "no platform applies";
    return j;
  }
  const Platform& platform = *choice.platform;
  j.nic_total = platform.NicTotalGBs();
  if (test.nodes <= 0) {
    j.not_judged =
        "the node count is unknown (the results name no hosts and the rank count is unknown): "
        "give --nodes N";
    return j;
  }
  if (test.sweeps.empty() || test.largest_size == 0) {
    j.not_judged = "the test has no rows";
    return j;
  }
  j.over_nvlink = OverNvlink(test, platform);
  j.facts = ReadAlgorithmFacts(test, platform, options);
  j.above_nic_total = !j.over_nvlink && test.nodes >= 2 && test.peak_busbw > j.nic_total;
  // --judge-from moves where every band starts: then any band counts as reached.
  const size_t reach = options.judge_from ? std::numeric_limits<size_t>::max() : test.largest_size;
  bool size_reached = false;
  const Expectation* band = ChooseBand(test, platform, j, reach, size_reached);
  if (options.judge_from && test.largest_size < *options.judge_from) size_reached = false;
  if (band != nullptr && size_reached) {
    j.possible.emplace_back(*band, Severity::kInfo);
    ExpectedBusbw e;
    e.typical = band->typical_busbw;
    e.healthy = band->low_busbw;
    e.fail_below = options.warn_floor * e.healthy;
    e.from_size = options.judge_from.value_or(band->min_size);
    e.algorithm = band->algorithm;
    e.basis = band->basis;
    e.source = band->source;
    j.expected = e;
  } else {
    if (band != nullptr) {
      j.fallback = fmt::format(
          "the run stops at {}, below the {} {}", FormatBytes(test.largest_size),
          FormatBytes(options.judge_from.value_or(band->min_size)),
          options.judge_from ? "given by --judge-from" : "the platform's band starts at");
    } else {
      j.fallback = fmt::format("the platform has no figure for {} on {} node{}", test.collective,
                               test.nodes, test.nodes == 1 ? "" : "s");
    }
    const size_t from = options.judge_from.value_or(test.largest_size);
    if (test.host_memory) {
      j.not_judged = j.fallback +
                     ", and the model describes NCCL on GPUs, not a host-memory run: judge from "
                     "a size the run reached with --judge-from SIZE";
      return j;
    }
    if (from < options.model_min_size) {
      j.not_judged = fmt::format(
          "{}, and at {} time is mostly latency, which the model does not pin down: rerun with "
          "-e {} or larger",
          j.fallback, FormatBytes(test.largest_size),
          SizeFlag(band != nullptr ? band->min_size : size_t{1} << 30));
      return j;
    }
    const std::set<size_t> sizes = SizesFrom(test, from);
    if (sizes.empty()) {
      j.not_judged = j.fallback + ", and the run has no size at or above " + FormatBytes(from);
      return j;
    }
    const bool ring = !j.above_nic_total && !j.over_nvlink && RingCollective(test.collective);
    std::string why;
    j.expected = ModelExpectation(test, platform, sizes, ring, options, why);
    if (!j.expected) {
      j.not_judged = j.fallback + "; " + why;
      return j;
    }
  }

  TakeSamples(test, j);
  if (j.samples.empty()) {
    j.not_judged = "no sweep reached " + FormatBytes(j.expected->from_size);
    j.expected.reset();
    return j;
  }
  j.measured = Mean(j.samples);
  j.confidence = MeanInterval(j.samples, options.confidence_level, j.expected->healthy);
  j.status = Grade(j);
  if (!j.possible.empty()) j.possible.front().second = j.status;
  if (band != nullptr && j.expected->basis != "model")
    WeighOtherBands(test, platform, *band, options, j);
  return j;
}

}  // namespace fabricscope::check
