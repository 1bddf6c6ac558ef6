// The classifier: log bandwidth, noise from repeats of the same pair, and a call per pair,
// node and link that is either significant at the stated confidence or "undecided".
#include "locate/classifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fabricscope/statistics.h"

namespace fabricscope::locate {
namespace {

constexpr double kWrongLog = -6.907755278982137;  // log(1e-3): wrong data
constexpr double kMedianEfficiency = 1.2533;      // sd of a median over sd of a mean
constexpr double kMadEfficiency = 0.37;           // MAD's share of a sd's degrees of freedom
constexpr size_t kSharedReferencePairs = 120;     // the pairs of 16 nodes
constexpr double kInfinity = std::numeric_limits<double>::infinity();
// A pair names a link, or clears one of its ends, on three samples at least: a median of
// two is a mean, and one burst moves it (a token bucket's burst once made a slow node's
// pair, measured once, 2.7x the typical: "fine", it cleared the node, and the node's
// other pairs were named as links; issue 29's replay, N 14, seed 28000094).
constexpr int kSamplesToVouch = 3;

// Whether a node's fine pairs (on kSamplesToVouch samples each) may clear it: two or more,
// or one when fewer than half of its pairs are slow. One against a majority of slow pairs
// is not enough: the replayed bed's bursts once lifted two of a slow node's pair's three
// samples 7x, "fine" against ten of its fifteen pairs significantly slow; cleared, the
// node's slow pairs were named as links (issue 29, N 16, seed 16000122). The nodes behind
// a slow uplink have several fine pairs among themselves, and are cleared.
bool Vouched(int fine_pairs, int slow_pairs, int pairs) {
  return fine_pairs >= 2 || (fine_pairs == 1 && 2 * slow_pairs < pairs);
}

bool Finite(double x) { return std::isfinite(x); }

int Other(const NodePair& p, int node) { return p.a == node ? p.b : p.a; }

NodePair Ordered(const NodePair& p) { return p.a < p.b ? p : NodePair{p.b, p.a}; }

std::string Gbs(double gbs) { return fmt::format("{:.3g} GB/s", gbs); }

std::string Times(double log_ratio) { return fmt::format("{:.2f}x", std::exp(log_ratio)); }

// "rail 1", "rails 0, 2", or "" when the cluster has one rail.
std::string RailsPhrase(const std::vector<int>& rails, int total) {
  if (total <= 1) return "";
  if (static_cast<int>(rails.size()) == total) return ", on every rail";
  std::string s = rails.size() == 1 ? ", on rail " : ", on rails ";
  for (size_t i = 0; i < rails.size(); ++i) s += (i ? ", " : "") + std::to_string(rails[i]);
  return s;
}

void SortSuspects(std::vector<Suspect>& suspects) {
  std::sort(suspects.begin(), suspects.end(), [](const Suspect& x, const Suspect& y) {
    if (x.kind != y.kind) return x.kind < y.kind;
    return x.nodes < y.nodes;
  });
}

double MedianOf(const std::vector<PairSample>& samples, int rail, double PairSample::*metric) {
  std::vector<double> values;
  for (const PairSample& s : samples) {
    if (s.rail == rail && s.wrong == 0 && Finite(s.*metric) && s.*metric > 0) {
      values.push_back(s.*metric);
    }
  }
  return Median(std::move(values));
}

}  // namespace

std::vector<double> SampleParts(const PairSample& s, double sendrecv_typical,
                                double all_reduce_typical) {
  std::vector<double> parts;
  for (const auto& [bw, typical] :
       {std::pair{s.sendrecv_busbw, sendrecv_typical}, {s.all_reduce_busbw, all_reduce_typical}}) {
    if (!(Finite(bw) && typical > 0)) continue;
    parts.push_back(s.wrong > 0 ? kWrongLog : std::log(std::max(bw, 0.0) / typical + 1e-9));
  }
  return parts;
}

namespace {

// SampleLog from the sample's parts (SampleParts).
double LogOfParts(const PairSample& s, const std::vector<double>& parts) {
  if (s.wrong > 0) return kWrongLog;
  return parts.empty() ? std::numeric_limits<double>::quiet_NaN() : Mean(parts);
}

}  // namespace

double SampleLog(const PairSample& s, double sendrecv_typical, double all_reduce_typical) {
  return LogOfParts(s, SampleParts(s, sendrecv_typical, all_reduce_typical));
}

namespace {

// How far the samples reach above the pair's level, as a standard deviation, from `logs`
// (one per sample) and `parts` (one per collective of each sample, over sqrt(collectives
// per sample): what it would be for a mean of independent ones; none: `logs` alone), the
// larger. A stall only
// slows, so it falls below the level and does not count; a sample faster than the level
// does: a healthy pair two stalls out of three have made look slow showed the third time
// what it can do, and a sample whose sendrecv ran at full speed while its all_reduce
// stalled disagrees with itself (a slow path slows both). Of the samples above the level,
// the smaller of two figures, each the sd for symmetric noise: the root of twice their
// mean square excess over n - 1 (steady with few samples), and their median excess over
// 0.6745, the median of a half-normal (one fast sample among six, a token bucket's burst
// on a slow link, is not the level either).
double UpperSpread(double level, const std::vector<double>& logs,
                   const std::vector<double>& parts) {
  if (logs.size() < 2) return 0.0;
  constexpr double kHalfNormalMedian = 0.6745;
  auto above = [level](const std::vector<double>& values) {
    std::vector<double> excess;
    double squares = 0;
    for (double y : values) {
      if (!(y > level)) continue;
      excess.push_back(y - level);
      squares += (y - level) * (y - level);
    }
    if (excess.empty()) return 0.0;
    const double mean_square = std::sqrt(2.0 * squares / static_cast<double>(values.size() - 1));
    return std::min(mean_square, Median(std::move(excess)) / kHalfNormalMedian);
  };
  if (parts.empty()) return above(logs);
  const double per_sample = static_cast<double>(parts.size()) / static_cast<double>(logs.size());
  return std::max(above(logs), above(parts) / std::sqrt(std::max(1.0, per_sample)));
}

}  // namespace

namespace {

// One finite sample of a rail: its pair, round, log and its collectives' logs.
struct LoggedSample {
  NodePair pair;
  int round = -1;
  double y = 0;
  std::vector<double> parts;
};

}  // namespace

RoundEffects EstimateRoundEffects(const std::vector<NodePair>& pairs,
                                  const std::vector<int>& rounds, const std::vector<double>& logs,
                                  const std::vector<char>& reference) {
  RoundEffects out;
  std::map<int, std::vector<size_t>> of_round;      // the reference samples of each round
  std::map<NodePair, std::vector<size_t>> of_pair;  // the samples of each reference pair
  for (size_t i = 0; i < logs.size(); ++i) {
    if (!reference[i]) continue;
    if (rounds[i] >= 0) of_round[rounds[i]].push_back(i);
    of_pair[pairs[i]].push_back(i);
  }
  // One pass: each round's effect is the median, over its reference samples, of their
  // difference from their pair's median. Not a median polish iterated to convergence: a
  // packing can put the same few pairs together in every round of theirs, and iterating
  // then trades their common level against their rounds' effects (one replayed cluster's
  // three such pairs all lost 0.5; issue 29, N 11, seed 22000064). In one pass a pair's
  // level stays the median of what it measured.
  std::map<NodePair, double> level;
  for (const auto& [pair, indices] : of_pair) {
    std::vector<double> values;
    for (size_t i : indices) values.push_back(logs[i]);
    level[pair] = Median(std::move(values));
  }
  std::map<int, double> effect;
  std::map<int, size_t> used;  // the samples each effect is the median of
  for (const auto& [round, all] : of_round) {
    // A pair's median of one or two samples is a sample or a mean: a stall in it makes
    // its other samples' differences large. Three at least.
    std::vector<size_t> indices;
    for (size_t i : all) {
      if (of_pair[pairs[i]].size() >= 3) indices.push_back(i);
    }
    if (indices.size() < static_cast<size_t>(kRoundEffectPairs)) continue;
    std::vector<double> residuals;
    residuals.reserve(indices.size());
    for (size_t i : indices) residuals.push_back(logs[i] - level[pairs[i]]);
    used[round] = indices.size();
    effect[round] = Median(std::move(residuals));
  }
  out.effect.assign(logs.size(), 0.0);
  double factor = 0;
  for (size_t i = 0; i < logs.size(); ++i) {
    const auto it = rounds[i] >= 0 ? effect.find(rounds[i]) : effect.end();
    if (it == effect.end()) {
      factor += 1.0;
      continue;
    }
    out.effect[i] = it->second;
    // A median of k: its error adds pi/2k of the variance to a sample outside it, and a
    // sample inside it loses about 1/k (k/(k-1) puts that back): 1 + pi/2k covers both.
    factor += 1.0 + 1.5708 / static_cast<double>(used[rounds[i]]);
    ++out.adjusted;
  }
  out.variance_factor = logs.empty() ? 1.0 : factor / static_cast<double>(logs.size());
  return out;
}

RailLevels BuildLevels(const std::vector<PairSample>& samples, int rail, int nodes,
                       bool round_effects) {
  RailLevels out;
  out.rail = rail;
  out.sendrecv_typical = MedianOf(samples, rail, &PairSample::sendrecv_busbw);
  out.all_reduce_typical = MedianOf(samples, rail, &PairSample::all_reduce_busbw);
  std::map<NodePair, PairLevel> by_pair;
  std::map<NodePair, std::pair<std::vector<double>, std::vector<double>>> bandwidths;
  std::vector<LoggedSample> logged;
  for (const PairSample& s : samples) {
    if (s.rail != rail) continue;
    const NodePair p = Ordered(s.pair);
    std::vector<double> mine = SampleParts(s, out.sendrecv_typical, out.all_reduce_typical);
    const double y = LogOfParts(s, mine);
    PairLevel& level = by_pair[p];
    level.pair = p;
    level.wrong += s.wrong;
    if (Finite(y)) logged.push_back({p, s.wrong > 0 ? -1 : s.round, y, std::move(mine)});
    bandwidths[p].first.push_back(s.sendrecv_busbw);
    bandwidths[p].second.push_back(s.all_reduce_busbw);
  }
  // Each sample less its round's shared effect (wrong data is in no round: it is wrong at
  // any speed).
  std::vector<NodePair> pairs;
  std::vector<int> rounds;
  std::vector<double> logs;
  for (const LoggedSample& l : logged) {
    pairs.push_back(l.pair);
    rounds.push_back(l.round);
    logs.push_back(l.y);
  }
  // The round effects from the noise sample's pairs only: they are measured whatever they
  // showed. Pairs measured again for looking slow all come back faster (regression to the
  // mean), and a round of them alone would look like a fast round.
  std::vector<NodePair> measured(pairs.begin(), pairs.end());
  std::sort(measured.begin(), measured.end());
  measured.erase(std::unique(measured.begin(), measured.end()), measured.end());
  out.noise_sample = NoiseSample(measured, nodes);
  std::sort(out.noise_sample.begin(), out.noise_sample.end());
  const std::vector<NodePair>& sample = out.noise_sample;
  std::vector<char> reference;
  for (const NodePair& p : pairs) {
    const bool in_sample = std::binary_search(sample.begin(), sample.end(), p);
    reference.push_back(round_effects && in_sample ? 1 : 0);
  }
  const RoundEffects effects = EstimateRoundEffects(pairs, rounds, logs, reference);
  out.noise_variance_factor = effects.variance_factor;
  out.round_adjusted = effects.adjusted;
  // The stall rule (UpperSpread) reads what each sample measured, before its round's
  // effect is taken off: a pair that ran fast once has shown it, whatever its round did
  // (a round in which three of four pairs stalled has a large "effect", and taking it off
  // the third pair's stalled samples made its one fast sample look like the others).
  std::map<NodePair, std::vector<double>> raw;
  std::map<NodePair, std::vector<double>> raw_parts;
  for (size_t i = 0; i < logged.size(); ++i) {
    PairLevel& level = by_pair[logged[i].pair];
    level.logs.push_back(logged[i].y - effects.effect[i]);
    raw[logged[i].pair].push_back(logged[i].y);
    auto& mine = raw_parts[logged[i].pair];
    mine.insert(mine.end(), logged[i].parts.begin(), logged[i].parts.end());
  }
  out.pairs_of_node.assign(static_cast<size_t>(std::max(0, nodes)), {});
  for (auto& [pair, level] : by_pair) {
    if (level.logs.empty()) continue;
    level.level = Median(level.logs);
    level.raw_level = Median(raw[pair]);
    level.spread = level.logs.size() >= 3 ? RobustSigma(level.logs) : 0.0;
    level.upper = UpperSpread(level.raw_level, raw[pair], raw_parts[pair]);
    level.sendrecv = Median(bandwidths[pair].first);
    level.all_reduce = Median(bandwidths[pair].second);
    const size_t index = out.pairs.size();
    out.pairs.push_back(std::move(level));
    for (int end : {pair.a, pair.b}) out.pairs_of_node[static_cast<size_t>(end)].push_back(index);
  }
  return out;
}

std::vector<NodePair> NoiseSample(const std::vector<NodePair>& pairs, int nodes) {
  const std::set<NodePair> all(pairs.begin(), pairs.end());
  constexpr size_t kNoisePairs = 64;
  std::vector<NodePair> out;
  std::set<NodePair> left = all;
  while (!left.empty() && out.size() < kNoisePairs) {
    std::vector<char> busy(static_cast<size_t>(nodes), 0);
    for (auto it = left.begin(); it != left.end();) {
      const auto a = static_cast<size_t>(it->a);
      const auto b = static_cast<size_t>(it->b);
      if (busy[a] || busy[b]) {
        ++it;
        continue;
      }
      busy[a] = busy[b] = 1;
      out.push_back(*it);
      it = left.erase(it);
    }
  }
  return out;
}

Noise EstimateNoise(const RailLevels& levels, const std::vector<NodePair>& sample) {
  std::vector<double> differences;
  for (const PairLevel& p : levels.pairs) {
    if (!std::binary_search(sample.begin(), sample.end(), p.pair)) continue;
    for (size_t i = 1; i < p.logs.size(); ++i) differences.push_back(p.logs[i] - p.logs[i - 1]);
  }
  Noise noise;
  if (differences.empty()) return noise;
  // The MAD about zero, not about the median: the differences of one pair have mean zero.
  for (double& d : differences) d = std::abs(d);
  // Less each round's effect, a sample also carries that effect's own error (or, inside
  // its round's median, lost its share of it): levels.noise_variance_factor puts that
  // back (1 + pi/2k for a round of k reference samples, 1 outside; EstimateRoundEffects).
  noise.sigma = 1.4826 * Median(differences) / std::sqrt(2.0) *
                std::sqrt(std::max(1.0, levels.noise_variance_factor));
  noise.df = kMadEfficiency * static_cast<double>(differences.size());
  return noise;
}

double CriticalValue(double confidence, double tests, double df) {
  const double alpha = std::clamp(1.0 - confidence, 1e-15, 0.5);
  const double p = alpha / std::max(1.0, tests);
  if (!(df > 0)) return std::numeric_limits<double>::infinity();
  if (df >= 1000) return NormalUpperQuantile(p);
  return StudentUpperQuantile(p, df);
}

PairCall Rule::Call(double diff, double se, double se_slow) const {
  return Call(diff, diff, se, se_slow);
}

PairCall Rule::Call(double diff, double diff_slow, double se, double se_slow) const {
  if (!Finite(diff) || !Finite(diff_slow) || !Finite(se) || !Finite(se_slow) || !Finite(z) ||
      !Finite(z_fine)) {
    return PairCall::kUndecided;
  }
  // No noise figure yet (an infinite critical value) decides nothing; no error at all
  // (identical repeats) needs no critical value.
  const double slow_margin = se_slow > 0 ? z * se_slow : 0.0;
  const double fine_margin = se > 0 ? z_fine * se : 0.0;
  if (!Finite(slow_margin) || !Finite(fine_margin)) return PairCall::kUndecided;
  if (diff_slow + slow_margin < log_threshold) return PairCall::kSlow;
  if (diff - fine_margin > log_threshold) return PairCall::kFine;
  return PairCall::kUndecided;
}

std::vector<size_t> PairsAvoiding(const RailLevels& levels, const std::vector<char>& excluded,
                                  size_t skip) {
  std::vector<size_t> out;
  for (size_t i = 0; i < levels.pairs.size(); ++i) {
    const NodePair& p = levels.pairs[i].pair;
    if (i == skip || excluded[static_cast<size_t>(p.a)] || excluded[static_cast<size_t>(p.b)]) {
      continue;
    }
    out.push_back(i);
  }
  return out;
}

Reference MakeReference(const RailLevels& levels, const std::vector<size_t>& pairs, double sigma) {
  Reference ref;
  std::vector<double> values;
  double inverse_n = 0;
  for (size_t i : pairs) {
    values.push_back(levels.pairs[i].level);
    inverse_n += 1.0 / levels.pairs[i].n();
  }
  ref.count = static_cast<int>(values.size());
  if (values.empty()) {
    ref.level = std::numeric_limits<double>::quiet_NaN();
    ref.se = std::numeric_limits<double>::infinity();
    return ref;
  }
  ref.level = Median(values);
  std::vector<double> raw;
  for (size_t i : pairs) {
    if (Finite(levels.pairs[i].raw_level)) raw.push_back(levels.pairs[i].raw_level);
  }
  if (raw.size() == values.size()) ref.raw_level = Median(std::move(raw));
  const double m = static_cast<double>(values.size());
  // The noise of one pair's level (on average over the reference), or the pairs' own
  // spread, whichever is larger: genuine differences between healthy pairs count too.
  const double per_pair = sigma * std::sqrt(inverse_n / m);
  const double spread = values.size() >= 3 ? RobustSigma(values) : 0.0;
  ref.se_slow = kMedianEfficiency * std::max(per_pair, spread) / std::sqrt(m);
  // For a fine call, the spread counts only up to one pair's own error: pairs whose levels
  // differ for good (0.12 against 0.155 GB/s on the bed, healthy) leave the median at the
  // middle pair's level, whose error is that pair's alone; the spread itself does not
  // shrink with measuring, and as an error it kept a 4-node bed "inconclusive" at noise
  // 0.004 after 16 sweeps (issue 29).
  const double one_pair = kMedianEfficiency * sigma * std::sqrt(inverse_n / m);
  ref.se = std::max(kMedianEfficiency * per_pair / std::sqrt(m), std::min(ref.se_slow, one_pair));
  return ref;
}

Comparison Compare(const PairLevel& pair, const Reference& reference, const Rule& rule) {
  Comparison c;
  c.diff = pair.level - reference.level;
  // Slow only as measured too: the round effects taken off may clear, never name (a round
  // in which most pairs stalled has a large "effect"; taken off, it made a healthy pair
  // 0.40x: issue 29, Simulation.StallsNeverNameAHealthyPair).
  const double raw = Finite(reference.raw_level) && Finite(pair.raw_level)
                         ? pair.raw_level - reference.raw_level
                         : c.diff;
  c.diff_slow = std::max(c.diff, raw);
  const double n = static_cast<double>(std::max(1, pair.n()));
  const double efficiency = (pair.n() >= 3 ? kMedianEfficiency : 1.0) / std::sqrt(n);
  const double own = efficiency * std::max(rule.sigma, pair.spread);
  const double own_slow = efficiency * std::max({rule.sigma, pair.spread, pair.upper});
  const double ref_slow = std::max(reference.se, reference.se_slow);
  c.se = std::sqrt(own * own + reference.se * reference.se);
  c.se_slow = std::sqrt(own_slow * own_slow + ref_slow * ref_slow);
  // Wrong data is wrong at any noise.
  c.call = pair.wrong > 0 ? PairCall::kSlow : rule.Call(c.diff, c.diff_slow, c.se, c.se_slow);
  return c;
}

NodeTest TestNode(const RailLevels& levels, int node, const std::vector<char>& slow_nodes,
                  const Rule& rule, const Reference* shared) {
  NodeTest t;
  t.node = node;
  Reference own;
  if (shared == nullptr) {
    std::vector<char> excluded = slow_nodes;
    excluded[static_cast<size_t>(node)] = 1;
    own = MakeReference(levels, PairsAvoiding(levels, excluded), rule.sigma);
  }
  const Reference& ref = shared != nullptr ? *shared : own;
  std::vector<double> diffs;
  std::vector<double> errors;
  std::vector<double> slow_errors;
  std::vector<double> slow_diffs;
  int vouching = 0;       // pairs fine on kSamplesToVouch samples (Vouched)
  bool any_fine = false;  // a pair fine at all: not slow
  for (size_t i : levels.pairs_of_node[static_cast<size_t>(node)]) {
    const PairLevel& p = levels.pairs[i];
    if (slow_nodes[static_cast<size_t>(Other(p.pair, node))]) continue;
    const Comparison c = Compare(p, ref, rule);
    ++t.pairs;
    diffs.push_back(c.diff);
    slow_diffs.push_back(c.diff_slow);
    errors.push_back(c.se);
    slow_errors.push_back(c.se_slow);
    if (c.call == PairCall::kSlow) ++t.slow_pairs;
    any_fine = any_fine || c.call == PairCall::kFine;
    vouching += c.call == PairCall::kFine && p.n() >= kSamplesToVouch ? 1 : 0;
  }
  bool fine = Vouched(vouching, t.slow_pairs, t.pairs);
  t.diff = Median(diffs);
  bool slow = ref.count > 0 && t.pairs > 0 && t.slow_pairs == t.pairs;
  if (diffs.size() >= 3) {
    // The node as a whole: the median of its pairs, whose error shrinks with their number.
    // (The reference's own error is shared by all of them: it does not shrink.)
    // (The slow call with the pairs' errors for a slow call: a stall argues for neither.)
    const double root_n = std::sqrt(static_cast<double>(diffs.size()));
    auto with_reference = [&](const std::vector<double>& e, double ref_se) {
      const double spread = kMedianEfficiency * Median(e) / root_n;
      return std::sqrt(spread * spread + ref_se * ref_se);
    };
    fine = fine || t.diff - rule.z_fine * with_reference(errors, ref.se) > rule.log_threshold;
    slow = slow || (ref.count > 0 &&
                    Median(slow_diffs) +
                            rule.z * with_reference(slow_errors, std::max(ref.se, ref.se_slow)) <
                        rule.log_threshold);
  }
  if (fine) {
    t.call = PairCall::kFine;
  } else if (slow && !any_fine) {
    t.call = PairCall::kSlow;
  }
  return t;
}

namespace {

// The reference every node shares on a large cluster; none (each its own) on a small one.
std::optional<Reference> SharedReference(const RailLevels& levels,
                                         const std::vector<char>& slow_nodes, double sigma) {
  if (static_cast<int>(levels.pairs_of_node.size()) <= kSharedReferenceNodes) return std::nullopt;
  return MakeReference(levels, PairsAvoiding(levels, slow_nodes), sigma);
}

}  // namespace

std::vector<int> FindSlowNodes(const RailLevels& levels, const Rule& rule) {
  const size_t n = levels.pairs_of_node.size();
  std::vector<char> slow(n, 0);
  std::vector<int> order;
  for (;;) {
    int best = -1;
    double best_diff = 0;
    const std::optional<Reference> shared = SharedReference(levels, slow, rule.sigma);
    for (size_t x = 0; x < n; ++x) {
      if (slow[x]) continue;
      const NodeTest t =
          TestNode(levels, static_cast<int>(x), slow, rule, shared ? &*shared : nullptr);
      // A node with one pair left (two nodes, or three once one is slow) cannot be told
      // from its peer: that is not a node test's to decide.
      if (t.call != PairCall::kSlow || t.pairs < 2) continue;
      if (best < 0 || t.diff < best_diff) {
        best = static_cast<int>(x);
        best_diff = t.diff;
      }
    }
    if (best < 0) break;
    slow[static_cast<size_t>(best)] = 1;
    order.push_back(best);
  }
  return order;
}

namespace {

// Every pair against the pairs that touch no slow node (itself left out when others are
// left): the calls the matrix shows and the links come from.
void CallPairs(RailVerdict& v) {
  const RailLevels& levels = v.levels;
  v.pairs.assign(levels.pairs.size(), {});
  const std::vector<size_t> healthy = PairsAvoiding(levels, v.is_slow_node);
  const Reference all = MakeReference(levels, healthy, v.rule.sigma);
  Reference own;
  for (size_t i = 0; i < levels.pairs.size(); ++i) {
    const NodePair& p = levels.pairs[i].pair;
    const bool touches_slow =
        v.is_slow_node[static_cast<size_t>(p.a)] || v.is_slow_node[static_cast<size_t>(p.b)];
    // Itself left out of a small reference; in a large one it barely moves the median.
    std::vector<size_t> others;
    if (healthy.size() <= kSharedReferencePairs) {
      others = healthy;
      others.erase(std::remove(others.begin(), others.end(), i), others.end());
    }
    const Reference& ref =
        others.empty() ? all : (own = MakeReference(levels, others, v.rule.sigma));
    v.pairs[i] = Compare(levels.pairs[i], ref, v.rule);
    // A slow node's pairs were each slow against the pairs that avoid it: the node test.
    if (touches_slow && v.pairs[i].call != PairCall::kSlow) {
      const int x = v.is_slow_node[static_cast<size_t>(p.a)] ? p.a : p.b;
      const int peer = Other(p, x);
      if (!v.is_slow_node[static_cast<size_t>(peer)]) v.pairs[i].call = PairCall::kSlow;
    }
  }
}

// Nodes: slow (found), cleared (a fine pair), or undecided.
void CallNodes(RailVerdict& v) {
  const size_t n = v.levels.pairs_of_node.size();
  v.node_calls.assign(n, PairCall::kUndecided);
  const std::optional<Reference> shared = SharedReference(v.levels, v.is_slow_node, v.rule.sigma);
  for (size_t x = 0; x < n; ++x) {
    if (v.is_slow_node[x]) {
      v.node_calls[x] = PairCall::kSlow;
      continue;
    }
    const NodeTest t = TestNode(v.levels, static_cast<int>(x), v.is_slow_node, v.rule,
                                shared ? &*shared : nullptr);
    int vouching = 0;
    int slow = 0;
    int pairs = 0;
    for (size_t i : v.levels.pairs_of_node[x]) {
      if (v.is_slow_node[static_cast<size_t>(Other(v.levels.pairs[i].pair, static_cast<int>(x)))]) {
        continue;
      }
      ++pairs;
      slow += v.pairs[i].call == PairCall::kSlow ? 1 : 0;
      vouching +=
          v.pairs[i].call == PairCall::kFine && v.levels.pairs[i].n() >= kSamplesToVouch ? 1 : 0;
    }
    const bool fine = t.call == PairCall::kFine || Vouched(vouching, slow, pairs);
    if (!fine && t.pairs > 0) {
      // Every pair of a node slow or undecided, and the node not found slow: undecided,
      // never "nobody" while its whole row could be starred.
      v.undecided_nodes.push_back(static_cast<int>(x));
    } else {
      // Fine, or only slow nodes for peers: nothing to decide.
      v.node_calls[x] = PairCall::kFine;
    }
  }
}

}  // namespace

bool SlowerThanBothEnds(const RailVerdict& v, size_t pair) {
  const NodePair& p = v.levels.pairs[pair].pair;
  for (int end : {p.a, p.b}) {
    std::vector<size_t> others;
    for (size_t k : v.levels.pairs_of_node[static_cast<size_t>(end)]) {
      if (k == pair || v.is_slow_node[static_cast<size_t>(Other(v.levels.pairs[k].pair, end))]) {
        continue;
      }
      others.push_back(k);
    }
    if (others.empty()) return false;
    const Reference ref = MakeReference(v.levels, others, v.rule.sigma);
    if (Compare(v.levels.pairs[pair], ref, v.rule).call != PairCall::kSlow) return false;
  }
  return true;
}

namespace {

// Links: slow pairs between two nodes that are cleared, or that are each significantly
// faster with their other peers (SlowerThanBothEnds); other slow pairs, and undecided
// pairs, are undecided.
void CallLinks(RailVerdict& v) {
  for (size_t i = 0; i < v.levels.pairs.size(); ++i) {
    const NodePair& p = v.levels.pairs[i].pair;
    const auto a = static_cast<size_t>(p.a);
    const auto b = static_cast<size_t>(p.b);
    if (v.is_slow_node[a] || v.is_slow_node[b]) continue;
    const PairCall call = v.pairs[i].call;
    if (call == PairCall::kUndecided) {
      v.undecided_pairs.push_back(i);
    } else if (call == PairCall::kSlow) {
      const bool ends_clear =
          (v.node_calls[a] == PairCall::kFine && v.node_calls[b] == PairCall::kFine) ||
          SlowerThanBothEnds(v, i);
      if (ends_clear && v.levels.pairs[i].n() >= kSamplesToVouch) {
        v.slow_links.push_back(i);
      } else {
        v.undecided_pairs.push_back(i);
      }
    }
  }
}

}  // namespace

RailVerdict JudgeRail(const std::vector<PairSample>& samples, int rail, int nodes,
                      const LocateOptions& options, double tests) {
  RailVerdict v;
  v.levels = BuildLevels(samples, rail, nodes, options.round_effects);
  v.noise = EstimateNoise(v.levels, v.levels.noise_sample);
  v.rule.log_threshold = std::log(options.threshold);
  v.rule.sigma = v.noise.sigma;
  v.rule.z = CriticalValue(options.confidence, tests, v.noise.df);
  v.rule.z_fine = CriticalValue(options.confidence, 1, v.noise.df);
  v.slow_nodes = FindSlowNodes(v.levels, v.rule);
  v.is_slow_node.assign(static_cast<size_t>(nodes), 0);
  for (int x : v.slow_nodes) v.is_slow_node[static_cast<size_t>(x)] = 1;
  CallPairs(v);
  CallNodes(v);
  CallLinks(v);
  std::vector<double> sendrecv;
  std::vector<double> all_reduce;
  for (size_t i : PairsAvoiding(v.levels, v.is_slow_node)) {
    sendrecv.push_back(v.levels.pairs[i].sendrecv);
    all_reduce.push_back(v.levels.pairs[i].all_reduce);
  }
  v.sendrecv_typical = Median(std::move(sendrecv));
  v.all_reduce_typical = Median(std::move(all_reduce));
  return v;
}

namespace {

// A slow node's evidence on one rail: its pairs, their median, against the typical.
struct NodeFacts {
  int rail = 0;
  int pairs = 0;
  double diff = 0;
  double sendrecv = 0;
};

NodeFacts FactsOf(const RailVerdict& v, int x) {
  NodeFacts f;
  f.rail = v.levels.rail;
  std::vector<double> diffs;
  std::vector<double> sendrecv;
  for (size_t i : v.levels.pairs_of_node[static_cast<size_t>(x)]) {
    if (v.is_slow_node[static_cast<size_t>(Other(v.levels.pairs[i].pair, x))]) continue;
    ++f.pairs;
    diffs.push_back(v.pairs[i].diff);
    sendrecv.push_back(v.levels.pairs[i].sendrecv);
  }
  f.diff = Median(diffs);
  f.sendrecv = Median(sendrecv);
  return f;
}

Suspect NodeSuspect(const ClusterLayout& layout, const std::vector<RailVerdict>& rails, int x,
                    bool decided) {
  Suspect s;
  s.nodes = {x};
  s.confirmed = decided;
  std::vector<double> diffs;
  std::vector<double> sendrecv;
  int pairs = 0;
  for (const RailVerdict& v : rails) {
    const bool flagged =
        decided ? v.is_slow_node[static_cast<size_t>(x)] != 0
                : std::count(v.undecided_nodes.begin(), v.undecided_nodes.end(), x) > 0;
    if (!flagged) continue;
    const NodeFacts f = FactsOf(v, x);
    s.rails.push_back(f.rail);
    diffs.push_back(f.diff);
    sendrecv.push_back(f.sendrecv);
    pairs += f.pairs;
  }
  s.kind =
      static_cast<int>(s.rails.size()) == layout.rails ? SuspectKind::kNode : SuspectKind::kNic;
  const double diff = Median(diffs);
  s.ratio = std::exp(diff);
  s.agreeing = decided ? pairs : 0;
  s.measurements = pairs;
  s.confidence = decided ? 1.0 : 0.0;
  const RailVerdict& first = rails[static_cast<size_t>(s.rails.front())];
  s.evidence = fmt::format(
      "{} {} peers{}: median {} the pairs without it (sendrecv {} against {}); noise {:.2f} "
      "(log sd, from repeats)",
      decided ? "significantly slow with all" : "slow or undecided with all", pairs,
      RailsPhrase(s.rails, layout.rails), Times(diff), Gbs(Median(sendrecv)),
      Gbs(first.sendrecv_typical), first.noise.sigma);
  return s;
}

Suspect LinkSuspect(const ClusterLayout& layout, const std::vector<RailVerdict>& rails,
                    const NodePair& link, bool decided) {
  Suspect s;
  s.kind = SuspectKind::kLink;
  s.nodes = {link.a, link.b};
  s.confirmed = decided;
  std::vector<double> diffs;
  std::vector<double> sendrecv;
  int samples = 0;
  for (const RailVerdict& v : rails) {
    const auto& list = decided ? v.slow_links : v.undecided_pairs;
    for (size_t i : list) {
      if (v.levels.pairs[i].pair != link) continue;
      s.rails.push_back(v.levels.rail);
      diffs.push_back(v.pairs[i].diff);
      sendrecv.push_back(v.levels.pairs[i].sendrecv);
      samples += v.levels.pairs[i].n();
    }
  }
  const double diff = Median(diffs);
  s.ratio = std::exp(diff);
  s.agreeing = decided ? samples : 0;
  s.measurements = samples;
  s.confidence = decided ? 1.0 : 0.0;
  auto name = [&](int node) { return layout.names[static_cast<size_t>(node)]; };
  const RailVerdict& first = rails[static_cast<size_t>(s.rails.front())];
  s.evidence = fmt::format(
      "{} between {} and {}{}: {} the other pairs over {} measurements (sendrecv {} against "
      "{})",
      decided ? "significantly slow" : "slow-looking, undecided,", name(link.a), name(link.b),
      RailsPhrase(s.rails, layout.rails), Times(diff), samples, Gbs(Median(sendrecv)),
      Gbs(first.sendrecv_typical));
  if (decided) s.evidence += "; both ends fine with other peers";
  return s;
}

}  // namespace

Decision Decide(const ClusterLayout& layout, const std::vector<RailVerdict>& rails) {
  Decision d;
  std::set<int> slow;
  std::set<int> undecided;
  std::set<NodePair> links;
  std::set<NodePair> undecided_links;
  for (const RailVerdict& v : rails) {
    slow.insert(v.slow_nodes.begin(), v.slow_nodes.end());
    undecided.insert(v.undecided_nodes.begin(), v.undecided_nodes.end());
    for (size_t i : v.slow_links) links.insert(v.levels.pairs[i].pair);
    for (size_t i : v.undecided_pairs) {
      // Only pairs that look slow are worth listing; merely imprecise ones are counted.
      if (v.pairs[i].diff < v.rule.log_threshold) undecided_links.insert(v.levels.pairs[i].pair);
    }
  }
  for (int x : slow) d.named.push_back(NodeSuspect(layout, rails, x, true));
  for (int x : undecided) {
    if (!slow.count(x)) d.undecided.push_back(NodeSuspect(layout, rails, x, false));
  }
  for (const NodePair& p : links) d.named.push_back(LinkSuspect(layout, rails, p, true));
  for (const NodePair& p : undecided_links) {
    if (!links.count(p)) d.undecided.push_back(LinkSuspect(layout, rails, p, false));
  }
  SortSuspects(d.named);
  SortSuspects(d.undecided);
  return d;
}

std::vector<PairJudgement> Judgements(const std::vector<RailVerdict>& rails) {
  std::vector<PairJudgement> out;
  for (const RailVerdict& v : rails) {
    for (size_t i = 0; i < v.levels.pairs.size(); ++i) {
      const PairLevel& p = v.levels.pairs[i];
      const Comparison& c = v.pairs[i];
      PairJudgement j;
      j.pair = p.pair;
      j.rail = v.levels.rail;
      j.samples = p.n();
      j.sendrecv = p.sendrecv;
      j.all_reduce = p.all_reduce;
      j.wrong = p.wrong;
      j.ratio = std::exp(c.diff);
      // The slow call's bound above, the fine call's below (both at the slow call's z).
      const bool known = Finite(v.rule.z);
      j.low = std::exp(c.diff - (known ? v.rule.z * c.se : kInfinity));
      j.high = std::exp(c.diff + (known ? v.rule.z * c.se_slow : kInfinity));
      j.call = c.call;
      out.push_back(j);
    }
  }
  return out;
}

std::vector<NodePair> PairsToRemeasure(const std::vector<RailVerdict>& rails, int nodes) {
  std::set<NodePair> want;
  std::set<NodePair> all;
  bool no_noise = false;
  for (const RailVerdict& v : rails) {
    for (const PairLevel& p : v.levels.pairs) all.insert(p.pair);
    // An undecided node's pairs are slow or undecided (a fine one on three samples would
    // clear it), and each of them is an undecided pair: no need to measure its decided
    // ones again.
    for (size_t i : v.undecided_pairs) want.insert(v.levels.pairs[i].pair);
    // Its pairs that look fine on too few samples to clear it, too.
    for (int x : v.undecided_nodes) {
      for (size_t i : v.levels.pairs_of_node[static_cast<size_t>(x)]) {
        if (v.levels.pairs[i].n() < kSamplesToVouch) want.insert(v.levels.pairs[i].pair);
      }
    }
    no_noise = no_noise || v.noise.df < 4;
  }
  // The noise sample every time something is measured again: its pairs are measured
  // whatever they showed, so their repeats tell the noise without the bias of measuring
  // again only what looked slow.
  const std::vector<NodePair>& sample = rails.front().levels.noise_sample;
  if (no_noise) return sample;
  if (want.empty()) return {};
  // Few nodes: every pair is some test's reference; measure them all again.
  if (nodes <= 6) want = all;
  // The pairs to decide first, the noise sample after them: PackRounds fills each round
  // first-fit, so the sample's pairs join the rounds of the undecided ones, and each of
  // those rounds has reference pairs whose shared effect can be taken off (round effects,
  // EstimateRoundEffects).
  std::vector<NodePair> out;
  for (const NodePair& p : want) {
    if (!std::binary_search(sample.begin(), sample.end(), p)) out.push_back(p);
  }
  out.insert(out.end(), sample.begin(), sample.end());
  return out;
}

namespace {

// Rails of two nodes against each other: a rail slower than the others is that rail's NIC
// on one of the two nodes (or the cable, or the switch port between them).
// Each rail's logs are relative to its own typical sample: this puts them on one scale.
double Offset(const RailLevels& levels) {
  // Pairs on NCCL's job communicator measure sendrecv only: no all_reduce typical.
  if (!Finite(levels.all_reduce_typical)) return std::log(levels.sendrecv_typical);
  return 0.5 * (std::log(levels.sendrecv_typical) + std::log(levels.all_reduce_typical));
}

std::vector<int> SlowRailsOfPair(const std::vector<RailVerdict>& rails) {
  std::vector<int> slow;
  for (size_t r = 0; r < rails.size(); ++r) {
    if (rails[r].levels.pairs.empty()) continue;
    std::vector<double> others;
    double inverse_n = 0;
    for (size_t o = 0; o < rails.size(); ++o) {
      if (o == r || rails[o].levels.pairs.empty()) continue;
      others.push_back(rails[o].levels.pairs[0].level + Offset(rails[o].levels));
      inverse_n += 1.0 / rails[o].levels.pairs[0].n();
    }
    if (others.empty()) continue;
    const double m = static_cast<double>(others.size());
    Reference ref;
    ref.level = Median(others);
    ref.count = static_cast<int>(others.size());
    ref.se = kMedianEfficiency * rails[r].rule.sigma * std::sqrt(inverse_n) / m;
    PairLevel pair = rails[r].levels.pairs[0];
    pair.level += Offset(rails[r].levels);
    if (Compare(pair, ref, rails[r].rule).call == PairCall::kSlow) {
      slow.push_back(static_cast<int>(r));
    }
  }
  return slow;
}

// The pair against the expected bandwidth: slow, fine, or undecided.
PairCall AgainstExpectation(const RailVerdict& v, double expect_gbs) {
  if (!(expect_gbs > 0) || v.levels.pairs.empty()) return PairCall::kUndecided;
  const PairLevel& p = v.levels.pairs[0];
  Reference ref;
  ref.level = std::log(expect_gbs / v.levels.sendrecv_typical);
  ref.se = 0;
  ref.count = 1;
  // The level is relative to the typical sample of both collectives; against the expected
  // sendrecv, use the sendrecv median alone.
  PairLevel alone = p;
  alone.level = std::log(p.sendrecv / v.levels.sendrecv_typical + 1e-9);
  return Compare(alone, ref, v.rule).call;
}

// "0.40x the expected 41.2 GB/s (dgx-h100: ...)": the pair's sendrecv median against the
// expectation and where that comes from.
std::string AgainstExpectationPhrase(const std::vector<RailVerdict>& rails,
                                     const LocateOptions& options) {
  std::string source;
  if (!options.expect_source.empty()) source = " (" + options.expect_source + ")";
  if (rails.empty() || rails[0].levels.pairs.empty() || !(options.expect_gbs > 0)) {
    return fmt::format("the expected {}{}", Gbs(options.expect_gbs), source);
  }
  return fmt::format("{:.2f}x the expected {}{}",
                     rails[0].levels.pairs[0].sendrecv / options.expect_gbs,
                     Gbs(options.expect_gbs), source);
}

}  // namespace

TwoNodeVerdict JudgeTwoNodes(const ClusterLayout& layout, const std::vector<RailVerdict>& rails,
                             const std::vector<NodeSample>& node_samples,
                             const LocateOptions& options) {
  TwoNodeVerdict t;
  const std::string a = layout.names[0];
  const std::string b = layout.names[1];
  const std::vector<int> slow_rails = SlowRailsOfPair(rails);
  const PairCall expected =
      rails.empty() ? PairCall::kUndecided : AgainstExpectation(rails[0], options.expect_gbs);
  std::string inside;
  if (node_samples.size() == 2) {
    inside = fmt::format(
        "; each node's own ranks: {} {}, {} {} (a node far below the other is the likelier "
        "culprit)",
        a, Gbs(node_samples[0].all_reduce_busbw), b, Gbs(node_samples[1].all_reduce_busbw));
  }
  const std::string pairs_cannot = fmt::format(
      "two nodes have one pair: it cannot tell whether {}, {} or the path between "
      "them is slow",
      a, b);
  if (!slow_rails.empty()) {
    t.status = LocateStatus::kAmbiguous;
    t.decided = true;
    t.unknown = fmt::format(
        "rail {} is slower than the others between {} and {}: that rail's "
        "NIC on {} or on {}, or their cable or switch port; {}{}",
        slow_rails.front(), a, b, a, b, pairs_cannot, inside);
    t.next_step = "run locate with a third node (a known-good host) to tell which end";
    return t;
  }
  if (expected == PairCall::kSlow) {
    t.status = LocateStatus::kAmbiguous;
    t.decided = true;
    t.unknown = fmt::format(
        "the pair's sendrecv bandwidth is {}, significantly below {:.2f}x: the fault is on "
        "the path between them or on the nodes; {}{}",
        AgainstExpectationPhrase(rails, options), options.threshold, pairs_cannot, inside);
    t.next_step = "run locate with a third node (a known-good host) to tell which end";
  } else if (expected == PairCall::kFine) {
    t.status = LocateStatus::kClear;
    t.decided = true;
  } else {
    t.status = LocateStatus::kInconclusive;
    t.decided = options.expect_gbs <= 0;
    t.unknown =
        options.expect_gbs > 0
            ? fmt::format(
                  "the pair's sendrecv bandwidth is {}, neither clearly below nor "
                  "clearly above {:.2f}x at this noise; {}{}",
                  AgainstExpectationPhrase(rails, options), options.threshold, pairs_cannot, inside)
            : pairs_cannot +
                  ", nor whether it is slow at all: no other pair to compare "
                  "with" +
                  inside;
    t.next_step = options.expect_gbs > 0
                      ? "measure longer: raise --budget, -n/--iters or -b/--size"
                      : "give --platform NAME (check's expectation for the platform) or "
                        "--expect GBPS (the pair's expected sendrecv bus bandwidth), or add a "
                        "third node";
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// The per-node test.

namespace {

// Each node's per-node measurements as one level, in log bandwidth over the first
// round's median node; a "pair" of a node with itself, so the pairs' tools apply. A sample
// with no finite bandwidth (the node could not be measured) is left out, as BuildLevels
// leaves out a pair's; a node with none is unmeasured: listed, with no level, so that no NaN
// reaches the median, the noise or the comparisons.
struct NodeLevelsResult {
  RailLevels levels;
  std::vector<int> unmeasured;  // nodes without one finite sample, in node order
  int rounds = 0;
};

double TypicalNodeBandwidth(const std::vector<std::vector<NodeSample>>& rounds) {
  // The first round's median node; the later rounds' when the first has no finite sample.
  for (const auto& round : rounds) {
    std::vector<double> values;
    for (const NodeSample& s : round) {
      if (s.wrong == 0 && Finite(s.all_reduce_busbw) && s.all_reduce_busbw > 0) {
        values.push_back(s.all_reduce_busbw);
      }
    }
    if (!values.empty()) return Median(std::move(values));
  }
  return 0.0;
}

NodeLevelsResult NodeLevels(const std::vector<std::vector<NodeSample>>& rounds) {
  NodeLevelsResult out;
  out.rounds = static_cast<int>(rounds.size());
  RailLevels& levels = out.levels;
  const double median = TypicalNodeBandwidth(rounds);
  std::map<int, PairLevel> by_node;
  for (const auto& round : rounds) {
    for (const NodeSample& s : round) {
      PairLevel& level = by_node[s.node];
      level.pair = {s.node, s.node};
      level.wrong += s.wrong;
      if (s.wrong > 0) {
        level.logs.push_back(kWrongLog);
      } else if (Finite(s.all_reduce_busbw) && median > 0) {
        level.logs.push_back(std::log(std::max(s.all_reduce_busbw, 0.0) / median + 1e-9));
      }
    }
  }
  for (auto& [node, level] : by_node) {
    if (level.logs.empty()) {
      out.unmeasured.push_back(node);
      continue;
    }
    level.level = Median(level.logs);
    level.spread = level.logs.size() >= 3 ? RobustSigma(level.logs) : 0.0;
    level.upper = UpperSpread(level.level, level.logs, {});  // one collective: no parts
    std::vector<double> bw;
    for (double y : level.logs) bw.push_back(median * std::exp(y));
    level.all_reduce = Median(bw);
    levels.pairs.push_back(level);
  }
  levels.all_reduce_typical = median;
  return out;
}

// An unmeasured node: undecided, and said to be unmeasured.
Suspect UnmeasuredNode(const ClusterLayout& layout, int node, int rounds) {
  Suspect s;
  s.kind = SuspectKind::kIntraNode;
  s.nodes = {node};
  s.ratio = std::numeric_limits<double>::quiet_NaN();
  s.evidence = fmt::format(
      "unmeasured: its {} ranks' all_reduce among themselves gave no finite bandwidth in {} "
      "round(s), so it is not judged and not part of the other nodes' statistics",
      layout.ranks[static_cast<size_t>(node)].size(), rounds);
  return s;
}

}  // namespace

IntraVerdict JudgeIntraNode(const ClusterLayout& layout,
                            const std::vector<std::vector<NodeSample>>& rounds,
                            const LocateOptions& options) {
  IntraVerdict v;
  if (rounds.empty() || rounds.front().size() < 3) return v;  // no majority to call normal
  const NodeLevelsResult measured = NodeLevels(rounds);
  for (const int node : measured.unmeasured) {
    v.decision.undecided.push_back(UnmeasuredNode(layout, node, measured.rounds));
    v.decided = false;
  }
  const RailLevels& levels = measured.levels;
  if (levels.pairs.size() < 3) return v;  // no majority to call normal
  std::vector<NodePair> every;
  for (const PairLevel& p : levels.pairs) every.push_back(p.pair);
  const Noise noise = EstimateNoise(levels, every);
  Rule rule;
  rule.log_threshold = std::log(options.threshold);
  rule.sigma = noise.sigma;
  rule.z = CriticalValue(options.confidence,
                         static_cast<double>(levels.pairs.size()) * options.max_sweeps, noise.df);
  rule.z_fine = CriticalValue(options.confidence, 1, noise.df);
  for (size_t i = 0; i < levels.pairs.size(); ++i) {
    std::vector<size_t> others;
    for (size_t o = 0; o < levels.pairs.size(); ++o) {
      if (o != i) others.push_back(o);
    }
    const Comparison c = Compare(levels.pairs[i], MakeReference(levels, others, noise.sigma), rule);
    const bool slow = c.call == PairCall::kSlow;
    if (!slow && !(c.call == PairCall::kUndecided && c.diff < rule.log_threshold)) continue;
    const int x = levels.pairs[i].pair.a;
    Suspect s;
    s.kind = SuspectKind::kIntraNode;
    s.nodes = {x};
    s.ratio = std::exp(c.diff);
    s.measurements = levels.pairs[i].n();
    s.agreeing = slow ? s.measurements : 0;
    s.confirmed = slow;
    s.confidence = slow ? 1.0 : 0.0;
    s.evidence = fmt::format(
        "its {} ranks all_reduce among themselves at {} (median of {}), {:.2f}x the other "
        "nodes; noise {:.2f} (log sd between its repeats){}",
        layout.ranks[static_cast<size_t>(x)].size(), Gbs(levels.pairs[i].all_reduce),
        s.measurements, s.ratio, noise.sigma, slow ? "" : ": undecided");
    v.decided = v.decided && slow;
    (slow ? v.decision.named : v.decision.undecided).push_back(std::move(s));
  }
  return v;
}

}  // namespace fabricscope::locate
