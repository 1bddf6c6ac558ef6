// Private: the classifier. It works on log bandwidth (a ratio is a difference there), takes
// the noise from repeated measurements of the same pair, and calls each pair, node and
// link slow, fine or undecided at a stated confidence. Each step is its own function, with
// its own tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope::locate {

// One pair on one rail, all its samples: log bandwidth (mean of the two collectives' logs,
// over the rail's typical sample) per sample, in measurement order.
struct PairLevel {
  NodePair pair;
  std::vector<double> logs;
  double level = 0;  // median of logs
  // The same before the rounds' effects were taken off (NaN: not known, the level).
  double raw_level = std::numeric_limits<double>::quiet_NaN();
  double spread = 0;  // its own robust standard deviation (0 below 3 samples)
  // How far its samples (or their collectives) reach above its level, as a standard
  // deviation (the median excess of those above it; 0 below 2 samples). A stall (another process
  // holding the CPU for a whole measurement: 30-50x slower) only slows; when two stalls out of
  // three set the level, the fast third sample shows here where the robust spread ignores it. A
  // slow call must clear it.
  double upper = 0;
  double sendrecv = 0;
  double all_reduce = 0;
  int64_t wrong = 0;
  int n() const { return static_cast<int>(logs.size()); }
};

// The pairs of one rail, and the typical sample's bandwidths the logs are relative to.
struct RailLevels {
  int rail = 0;
  double sendrecv_typical = 0;
  double all_reduce_typical = 0;
  std::vector<PairLevel> pairs;                    // sorted by pair
  std::vector<std::vector<size_t>> pairs_of_node;  // indices into pairs
  // Round effects (EstimateRoundEffects): how many samples lost their round's effect, and
  // the factor on the noise's variance that taking it costs.
  int round_adjusted = 0;
  double noise_variance_factor = 1.0;
  // The noise sample of the measured pairs (NoiseSample), sorted: the round effects' reference
  // and the pairs whose repeats tell the noise.
  std::vector<NodePair> noise_sample;
};

// Round effects: every pair measured in one round shares that round's slowdown (a busy
// CPU, a token bucket's state, another job's traffic: on the namespace bed over MPI, half
// of a healthy run's variance; issue 29, docs/locate.md). Sample i (pairs[i], rounds[i],
// logs[i]) is y = pair level + round effect + noise. The effects come from one pass
// of the `reference` samples alone (the noise sample's pairs: measured whatever they
// showed), only for rounds with kRoundEffectPairs of them or more (with two, a round's
// effect is their mean, and each pair's samples would carry the other's noise); every
// sample of such a round loses its effect. A fault moves every sample of its pair alike
// and so stays in the pair's level, never in a round's effect; a stall is one sample of
// the round's, outvoted by the median.
inline constexpr int kRoundEffectPairs = 4;
struct RoundEffects {
  std::vector<double> effect;  // per sample; 0 outside such rounds (or round < 0)
  int adjusted = 0;            // samples in such rounds
  // The factor on one sample's noise variance, over the samples: 1 + pi/2k for a round of
  // k reference samples (the median's own error), 1 outside such rounds.
  double variance_factor = 1;
};
RoundEffects EstimateRoundEffects(const std::vector<NodePair>& pairs,
                                  const std::vector<int>& rounds, const std::vector<double>& logs,
                                  const std::vector<char>& reference);

// Log of a sample's bandwidth over the typical: wrong data is log(1e-3), far below any
// real pair; a collective that did not run is left out; neither ran: NaN.
double SampleLog(const PairSample& s, double sendrecv_typical, double all_reduce_typical);
// The sample's log per collective that ran (wrong data: log(1e-3) each): SampleLog is their
// mean.
std::vector<double> SampleParts(const PairSample& s, double sendrecv_typical,
                                double all_reduce_typical);

// Each pair's level from its samples, less their rounds' effects (EstimateRoundEffects, the
// noise sample of the measured pairs for reference).
RailLevels BuildLevels(const std::vector<PairSample>& samples, int rail, int nodes,
                       bool round_effects = true);

// The pairs whose repeats tell the noise: rounds of disjoint pairs (each round costs one
// round) until 64 pairs, or every pair when there are fewer. Chosen by name, never by what
// they measured, and measured again every time anything is.
std::vector<NodePair> NoiseSample(const std::vector<NodePair>& pairs, int nodes);

// The noise of one measurement in log bandwidth, from repeats of the same pair only (the
// pairs of `sample`, sorted): 1.4826 x MAD of successive differences / sqrt 2 (robust to a
// transient, blind to a fault, which moves every repeat of its pair alike). df: the
// differences it rests on, times the MAD's efficiency (0.37); 0 when no pair was measured
// twice.
struct Noise {
  double sigma = 0;
  double df = 0;
};
Noise EstimateNoise(const RailLevels& levels, const std::vector<NodePair>& sample);

// How many standard errors make a decision at `confidence` over `tests` tests
// (Bonferroni), with Student's t at `df` degrees of freedom (normal at df >= 1000).
double CriticalValue(double confidence, double tests, double df);

// A pair, or a set of pairs, against a reference set of pairs: the difference of log
// levels, its standard error, and the call.
struct Comparison {
  double diff = 0;       // log(bandwidth / reference)
  double diff_slow = 0;  // for a slow call: the larger of diff and the same before round effects
  double se = 0;         // for a fine call: robust to the pair's own stalls
  double se_slow = 0;    // for a slow call: its samples' reach above its level counts too
  PairCall call = PairCall::kUndecided;
};

// The rules that turn a difference into a call: slow = more than `z` standard errors below
// log(threshold); fine = more than `z_fine` standard errors above it. `z` is corrected for every
// test of the run (a wrong slow call names someone); `z_fine` is the confidence of one test (a
// wrong fine call only hides a fault).
struct Rule {
  double log_threshold = 0;
  double z = 0;
  double z_fine = 0;
  double sigma = 0;
  PairCall Call(double diff, double se) const { return Call(diff, se, se); }
  // `se_slow` for the slow call, `se` for the fine one.
  PairCall Call(double diff, double se, double se_slow) const;
  // `diff_slow` for the slow call, `diff` for the fine one.
  PairCall Call(double diff, double diff_slow, double se, double se_slow) const;
};

// The median of the reference pairs' levels, its standard errors, and their count. For a
// slow call (se_slow) 1.2533 x sd / sqrt m, the sd the larger of the noise and their
// spread; for a fine call (se) the spread counts only up to one pair's own error (pairs
// that differ for good leave the median at the middle one's level). se_slow below se (as
// when only se is set) means se.
struct Reference {
  double level = 0;
  double raw_level = std::numeric_limits<double>::quiet_NaN();  // of the pairs' raw levels
  double se = 0;
  double se_slow = 0;
  int count = 0;
};
Reference MakeReference(const RailLevels& levels, const std::vector<size_t>& pairs, double sigma);

// One pair's level against a reference (the median of its samples: standard error
// 1.2533 x noise / sqrt n from three samples on, the larger of the pooled noise and its
// own robust spread; for the slow call, its samples' reach above its level when larger
// still: a pair that has shown it can run fast is not named slow).
Comparison Compare(const PairLevel& pair, const Reference& reference, const Rule& rule);

// Whether pair `pair` is slow (below the threshold, significantly) against each of its two
// ends' other pairs (those to peers that are not slow nodes): the slowness is the path's
// between the two, not either end's, even when an end cannot be cleared against the whole
// cluster (a noisy one: each end's pairs, not the cluster's, are the reference). A slow
// link needs this or both ends cleared.
struct RailVerdict;
bool SlowerThanBothEnds(const RailVerdict& v, size_t pair);

// The pairs of one rail that touch none of `excluded`; `skip`, when set, left out too.
std::vector<size_t> PairsAvoiding(const RailLevels& levels, const std::vector<char>& excluded,
                                  size_t skip = static_cast<size_t>(-1));

// A node against the pairs that do not involve it (nor an already slow node): slow when
// each of its pairs to peers that are not slow nodes is slow, or (three or more) their
// median is significantly below the threshold; cleared when one of them is fine or their
// median is significantly above the threshold; undecided otherwise.
struct NodeTest {
  int node = 0;
  PairCall call = PairCall::kUndecided;
  int pairs = 0;       // its pairs to peers that are not slow nodes
  int slow_pairs = 0;  // of them, slow
  double diff = 0;     // median difference of those pairs
};
// `shared`, when given, is the reference instead of the pairs that avoid the node: above
// kSharedReferenceNodes nodes one node's pairs barely move the median, and computing it
// per node would cost nodes x pairs.
inline constexpr int kSharedReferenceNodes = 16;
NodeTest TestNode(const RailLevels& levels, int node, const std::vector<char>& slow_nodes,
                  const Rule& rule, const Reference* shared = nullptr);

// Slow nodes, explained away one by one: of the nodes whose every pair is slow, the
// slowest goes first; its pairs then leave every other node's test and the references.
std::vector<int> FindSlowNodes(const RailLevels& levels, const Rule& rule);

// One rail decided: each pair's call (pairs of a slow node slow by that), the slow nodes,
// the slow links (a slow pair whose ends are both cleared), what is undecided.
struct RailVerdict {
  RailLevels levels;
  Noise noise;
  Rule rule;
  std::vector<Comparison> pairs;  // per levels.pairs
  std::vector<int> slow_nodes;
  std::vector<char> is_slow_node;
  std::vector<PairCall> node_calls;  // per node
  std::vector<size_t> slow_links;    // indices into levels.pairs
  std::vector<size_t> undecided_pairs;
  std::vector<int> undecided_nodes;
  // The typical healthy pair: median GB/s of the pairs that touch no slow node.
  double sendrecv_typical = 0;
  double all_reduce_typical = 0;
  bool Decided() const { return undecided_pairs.empty() && undecided_nodes.empty(); }
};

// `tests`: how many decisions the confidence is split over (pairs x rails x sweeps).
RailVerdict JudgeRail(const std::vector<PairSample>& samples, int rail, int nodes,
                      const LocateOptions& options, double tests);

// The suspects of every rail together: a node slow on every rail is a node, on some a nic;
// a link lists its rails. Undecided nodes and slow-looking undecided pairs are listed as
// undecided (not named).
struct Decision {
  std::vector<Suspect> named;
  std::vector<Suspect> undecided;
};
Decision Decide(const ClusterLayout& layout, const std::vector<RailVerdict>& rails);

// The judgements the matrix shows: every pair and rail, its ratio, interval and call.
std::vector<PairJudgement> Judgements(const std::vector<RailVerdict>& rails);

// Pairs to measure again: while the noise rests on few repeats, a sample of disjoint pairs;
// then every undecided pair (with six nodes or fewer, every pair: each is a reference).
std::vector<NodePair> PairsToRemeasure(const std::vector<RailVerdict>& rails, int nodes);

// Two nodes: one pair, nothing to compare it with. Against the expected bandwidth when
// given; what stays ambiguous is said in `unknown`.
struct TwoNodeVerdict {
  LocateStatus status = LocateStatus::kInconclusive;
  std::string unknown;
  std::string next_step;
  bool decided = false;  // nothing more to measure
};
TwoNodeVerdict JudgeTwoNodes(const ClusterLayout& layout, const std::vector<RailVerdict>& rails,
                             const std::vector<NodeSample>& node_samples,
                             const LocateOptions& options);

// The per-node test: each node's own ranks together, over the per-node rounds (every node
// in every round). A node is named when its median is significantly below the threshold x
// the other nodes' (the noise from its repeats, the same rule as pairs); below the
// threshold but not significantly, it is undecided and `decided` is false (measure again).
struct IntraVerdict {
  Decision decision;
  bool decided = true;
};
IntraVerdict JudgeIntraNode(const ClusterLayout& layout,
                            const std::vector<std::vector<NodeSample>>& rounds,
                            const LocateOptions& options);

}  // namespace fabricscope::locate
