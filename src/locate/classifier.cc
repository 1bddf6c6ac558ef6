// The classifier: slow node (slow with every peer) against slow link (slow with one peer),
// candidates first, then the verdict after the retests against known-good nodes.
#include "locate/classifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

namespace fabricscope::classify {
namespace {

bool Finite(double x) { return std::isfinite(x); }

std::string Gbs(double gbs) { return fmt::format("{:.3g} GB/s", gbs); }

std::string Times(double ratio) { return fmt::format("{:.2f}x", ratio); }

// "rail 1", "rails 0, 2", or "" when the cluster has one rail.
std::string RailsPhrase(const std::vector<int>& rails, int total) {
  if (total <= 1) return "";
  if (static_cast<int>(rails.size()) == total) return ", on every rail";
  std::string s = rails.size() == 1 ? ", on rail " : ", on rails ";
  for (size_t i = 0; i < rails.size(); ++i) s += (i ? ", " : "") + std::to_string(rails[i]);
  return s;
}

std::string NameList(const ClusterLayout& layout, const std::vector<int>& nodes) {
  std::string s;
  for (size_t i = 0; i < nodes.size(); ++i) {
    s += (i ? ", " : "") + layout.names[static_cast<size_t>(nodes[i])];
  }
  return s;
}

// The retest verdicts of one rail, by pair, against that rail's baseline.
std::map<NodePair, PairVerdict> RetestVerdicts(const std::vector<PairSample>& retests, int rail,
                                               const Baseline& baseline) {
  std::map<NodePair, PairVerdict> out;
  for (PairVerdict v : CombineSamples(retests, rail)) {
    v.ratio = baseline.Ratio(v.sendrecv, v.all_reduce, v.wrong);
    v.slow = baseline.IsSlow(v.ratio);
    out[v.pair] = v;
  }
  return out;
}

const PairVerdict* Find(const std::map<NodePair, PairVerdict>& verdicts, int x, int y) {
  const auto it = verdicts.find(x < y ? NodePair{x, y} : NodePair{y, x});
  return it == verdicts.end() ? nullptr : &it->second;
}

int Other(const NodePair& p, int node) { return p.a == node ? p.b : p.a; }

void SortSuspects(std::vector<Suspect>& suspects) {
  std::sort(suspects.begin(), suspects.end(), [](const Suspect& x, const Suspect& y) {
    if (x.kind != y.kind) return x.kind < y.kind;
    return x.nodes < y.nodes;
  });
}

}  // namespace

Baseline::Baseline(RailBaseline values, double center, const LocateOptions& options)
    : values_(values),
      center_(center),
      threshold_(options.threshold),
      min_z_(options.min_robust_z) {}

double Baseline::Ratio(double sendrecv, double all_reduce, int64_t wrong) const {
  if (wrong > 0) return 0.0;  // wrong data is the worst a link can do
  double sum = 0;
  int parts = 0;
  if (values_.sendrecv_typical > 0 && Finite(sendrecv)) {
    sum += sendrecv / values_.sendrecv_typical;
    ++parts;
  }
  if (values_.all_reduce_typical > 0 && Finite(all_reduce)) {
    sum += all_reduce / values_.all_reduce_typical;
    ++parts;
  }
  return parts == 0 ? 1.0 : sum / parts;
}

bool Baseline::IsFine(double ratio) const { return Finite(ratio) && ratio >= threshold_ * center_; }

bool Baseline::IsSlow(double ratio) const {
  if (!Finite(ratio)) return false;
  const double sigma = Finite(values_.sigma) ? values_.sigma : 0.0;
  return ratio < threshold_ * center_ && center_ - ratio > min_z_ * sigma;
}

std::vector<PairVerdict> CombineSamples(const std::vector<PairSample>& samples, int rail) {
  // Sorted rather than mapped: a full schedule of a thousand nodes is half a million pairs.
  std::vector<std::pair<NodePair, const PairSample*>> list;
  list.reserve(samples.size());
  for (const PairSample& s : samples) {
    if (s.rail != rail) continue;
    list.emplace_back(s.pair.a < s.pair.b ? s.pair : NodePair{s.pair.b, s.pair.a}, &s);
  }
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<PairVerdict> out;
  std::vector<double> sr;
  std::vector<double> ar;
  for (size_t i = 0; i < list.size();) {
    PairVerdict v;
    v.pair = list[i].first;
    sr.clear();
    ar.clear();
    for (; i < list.size() && list[i].first == v.pair; ++i) {
      sr.push_back(list[i].second->sendrecv_busbw);
      ar.push_back(list[i].second->all_reduce_busbw);
      v.wrong += list[i].second->wrong;
    }
    v.sendrecv = Median(sr);
    v.all_reduce = Median(ar);
    v.samples = static_cast<int>(sr.size());
    out.push_back(v);
  }
  return out;
}

int RailAnalysis::Unexplained(int node, int* slow) const {
  int total = 0;
  int slow_count = 0;
  for (size_t i : pairs_of_node[static_cast<size_t>(node)]) {
    const PairVerdict& v = pairs[i];
    if (slow_node[static_cast<size_t>(Other(v.pair, node))]) continue;
    ++total;
    if (v.slow) ++slow_count;
  }
  if (slow != nullptr) *slow = slow_count;
  return total;
}

double RailAnalysis::MedianRatio(int node) const {
  std::vector<double> ratios;
  for (size_t i : pairs_of_node[static_cast<size_t>(node)]) {
    if (slow_node[static_cast<size_t>(Other(pairs[i].pair, node))]) continue;
    ratios.push_back(pairs[i].ratio);
  }
  return Median(std::move(ratios));
}

RailAnalysis AnalyzeRail(int rail, int nodes, const std::vector<PairSample>& samples,
                         const LocateOptions& options) {
  RailAnalysis a;
  a.pairs = CombineSamples(samples, rail);
  const size_t n = static_cast<size_t>(nodes);
  a.pairs_of_node.assign(n, {});
  a.slow_node.assign(n, 0);
  for (size_t i = 0; i < a.pairs.size(); ++i) {
    for (int end : {a.pairs[i].pair.a, a.pairs[i].pair.b}) {
      a.pairs_of_node[static_cast<size_t>(end)].push_back(i);
    }
  }
  // The yardstick is the typical node's typical pair (the median over nodes of each node's
  // median pair), not the median pair: one slow node of four is in half of all pairs, but
  // it is a minority among every other node's peers.
  auto typical = [&](double PairVerdict::*metric) {
    std::vector<double> per_node;
    std::vector<double> values;
    for (size_t x = 0; x < n; ++x) {
      values.clear();
      for (size_t i : a.pairs_of_node[x]) {
        const PairVerdict& v = a.pairs[i];
        if (v.wrong == 0 && Finite(v.*metric)) values.push_back(v.*metric);
      }
      if (!values.empty()) per_node.push_back(Median(values));
    }
    return Median(std::move(per_node));
  };
  RailBaseline values;
  values.rail = rail;
  values.sendrecv_typical = typical(&PairVerdict::sendrecv);
  values.all_reduce_typical = typical(&PairVerdict::all_reduce);
  const Baseline provisional(values, 1.0, options);
  for (PairVerdict& v : a.pairs) v.ratio = provisional.Ratio(v.sendrecv, v.all_reduce, v.wrong);
  // The noise of a healthy pair: the spread of pairs between nodes whose median pair is
  // not slow (all pairs when there are too few such pairs to say).
  std::vector<char> typical_node(n, 0);
  std::vector<double> ratios;
  for (size_t x = 0; x < n; ++x) {
    ratios.clear();
    for (size_t i : a.pairs_of_node[x]) ratios.push_back(a.pairs[i].ratio);
    typical_node[x] = !ratios.empty() && Median(ratios) >= options.threshold;
  }
  std::vector<double> healthy;
  std::vector<double> all;
  for (const PairVerdict& v : a.pairs) {
    all.push_back(v.ratio);
    if (typical_node[static_cast<size_t>(v.pair.a)] &&
        typical_node[static_cast<size_t>(v.pair.b)]) {
      healthy.push_back(v.ratio);
    }
  }
  const std::vector<double>& spread = healthy.size() >= 3 ? healthy : all;
  values.sigma = spread.empty() ? 0.0 : RobustSigma(spread);
  const double center = spread.empty() ? 1.0 : Median(spread);
  a.baseline = Baseline(values, center, options);

  std::vector<int> unexplained(n, 0);
  std::vector<int> slow_count(n, 0);
  for (PairVerdict& v : a.pairs) {
    v.slow = a.baseline.IsSlow(v.ratio);
    for (int end : {v.pair.a, v.pair.b}) {
      ++unexplained[static_cast<size_t>(end)];
      if (v.slow) ++slow_count[static_cast<size_t>(end)];
    }
  }

  // Explaining away: the node slow with the largest share of its peers goes first; its
  // slow pairs then no longer count against its peers, so a healthy node that met two
  // slow nodes is not taken for a third.
  for (;;) {
    int best = -1;
    double best_share = 0;
    double best_median = 0;
    for (size_t x = 0; x < n; ++x) {
      if (a.slow_node[x] || unexplained[x] < 2 || 2 * slow_count[x] <= unexplained[x]) continue;
      const double share = static_cast<double>(slow_count[x]) / unexplained[x];
      if (best >= 0 && share < best_share) continue;
      const double median = a.MedianRatio(static_cast<int>(x));
      if (best >= 0 && share == best_share && median >= best_median) continue;
      best = static_cast<int>(x);
      best_share = share;
      best_median = median;
    }
    if (best < 0) break;
    a.slow_node[static_cast<size_t>(best)] = 1;
    a.slow_node_order.push_back(best);
    for (size_t i : a.pairs_of_node[static_cast<size_t>(best)]) {
      const size_t peer = static_cast<size_t>(Other(a.pairs[i].pair, best));
      if (a.slow_node[peer]) continue;
      --unexplained[peer];
      if (a.pairs[i].slow) --slow_count[peer];
    }
  }
  for (size_t i = 0; i < a.pairs.size(); ++i) {
    const PairVerdict& v = a.pairs[i];
    if (v.slow && !a.slow_node[static_cast<size_t>(v.pair.a)] &&
        !a.slow_node[static_cast<size_t>(v.pair.b)]) {
      a.slow_links.push_back(i);
    }
  }
  return a;
}

Candidates FindCandidates(const ClusterLayout& layout, const std::vector<PairSample>& samples,
                          const LocateOptions& options) {
  Candidates c;
  const int nodes = static_cast<int>(layout.names.size());
  for (int r = 0; r < layout.rails; ++r) c.rails.push_back(AnalyzeRail(r, nodes, samples, options));
  std::vector<char> suspect(static_cast<size_t>(nodes), 0);
  std::set<NodePair> links;
  for (const RailAnalysis& rail : c.rails) {
    for (int x : rail.slow_node_order) {
      if (!suspect[static_cast<size_t>(x)]) c.nodes.push_back(x);
      suspect[static_cast<size_t>(x)] = 1;
    }
    for (size_t i : rail.slow_links) links.insert(rail.pairs[i].pair);
  }
  std::sort(c.nodes.begin(), c.nodes.end());
  c.links.assign(links.begin(), links.end());
  for (const NodePair& p : c.links) {
    suspect[static_cast<size_t>(p.a)] = 1;
    suspect[static_cast<size_t>(p.b)] = 1;
  }
  // Known good: in no candidate, measured on every rail, best median ratio first.
  std::vector<std::pair<double, int>> ranked;
  for (int x = 0; x < nodes; ++x) {
    if (suspect[static_cast<size_t>(x)]) continue;
    double sum = 0;
    bool measured = true;
    for (const RailAnalysis& rail : c.rails) {
      const double m = rail.MedianRatio(x);
      if (!Finite(m)) measured = false;
      sum += m;
    }
    if (measured && !c.rails.empty())
      ranked.emplace_back(-sum / static_cast<double>(c.rails.size()), x);
  }
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [score, x] : ranked) c.good.push_back(x);
  return c;
}

ConfirmationPlan PlanConfirmation(const Candidates& candidates, const LocateOptions& options) {
  ConfirmationPlan plan;
  const size_t g = candidates.good.size();
  size_t cursor = 0;
  auto next_good = [&] { return candidates.good[cursor++ % g]; };
  for (int x : candidates.nodes) {
    ConfirmationPlan::NodeRetest retest;
    retest.node = x;
    const size_t count = std::min(g, static_cast<size_t>(std::max(0, options.confirm_peers)));
    for (size_t i = 0; i < count; ++i) retest.good.push_back(next_good());
    plan.nodes.push_back(retest);
  }
  for (const NodePair& link : candidates.links) {
    ConfirmationPlan::LinkRetest retest;
    retest.link = link;
    if (g > 0) {
      retest.good_a = next_good();
      retest.good_b = next_good();
    }
    plan.links.push_back(retest);
  }
  return plan;
}

std::vector<NodePair> ConfirmationPlan::Pairs() const {
  std::vector<NodePair> pairs;
  std::set<NodePair> seen;
  auto add = [&](int x, int y) {
    const NodePair p = x < y ? NodePair{x, y} : NodePair{y, x};
    if (x != y && seen.insert(p).second) pairs.push_back(p);
  };
  // The i-th retest of every node before the (i+1)-th of any: first fit then fills each
  // round with one retest per suspect.
  size_t most = 0;
  for (const NodeRetest& r : nodes) most = std::max(most, r.good.size());
  for (size_t i = 0; i < most; ++i) {
    for (const NodeRetest& r : nodes) {
      if (i < r.good.size()) add(r.node, r.good[i]);
    }
  }
  for (const LinkRetest& r : links) add(r.link.a, r.link.b);
  for (const LinkRetest& r : links) {
    if (r.good_a >= 0) add(r.link.a, r.good_a);
    if (r.good_b >= 0) add(r.link.b, r.good_b);
  }
  return pairs;
}

Decision Decide(const ClusterLayout& layout, const Candidates& candidates,
                const ConfirmationPlan& plan, const std::vector<PairSample>& retests) {
  Decision decision;
  const int total_rails = layout.rails;
  std::vector<std::map<NodePair, PairVerdict>> retest(candidates.rails.size());
  for (size_t r = 0; r < candidates.rails.size(); ++r) {
    retest[r] = RetestVerdicts(retests, static_cast<int>(r), candidates.rails[r].baseline);
  }
  auto name = [&](int node) { return layout.names[static_cast<size_t>(node)]; };

  for (const ConfirmationPlan::NodeRetest& plan_node : plan.nodes) {
    const int x = plan_node.node;
    struct RailFacts {
      int rail;
      int peers, slow_peers, retests, slow_retests;
      std::vector<double> slow_ratios, slow_sendrecv, retest_ratios;
    };
    std::vector<RailFacts> flagged;
    for (size_t r = 0; r < candidates.rails.size(); ++r) {
      const RailAnalysis& rail = candidates.rails[r];
      if (!rail.slow_node[static_cast<size_t>(x)]) continue;
      RailFacts f{static_cast<int>(r), 0, 0, 0, 0, {}, {}, {}};
      f.peers = rail.Unexplained(x, &f.slow_peers);
      for (size_t i : rail.pairs_of_node[static_cast<size_t>(x)]) {
        const PairVerdict& v = rail.pairs[i];
        if (v.slow && !rail.slow_node[static_cast<size_t>(Other(v.pair, x))]) {
          f.slow_ratios.push_back(v.ratio);
          f.slow_sendrecv.push_back(v.sendrecv);
        }
      }
      for (int good : plan_node.good) {
        if (const PairVerdict* v = Find(retest[r], x, good)) {
          ++f.retests;
          if (v->slow) ++f.slow_retests;
          f.retest_ratios.push_back(v->ratio);
        }
      }
      flagged.push_back(std::move(f));
    }
    if (flagged.empty()) continue;
    std::vector<int> confirmed_rails;
    for (const RailFacts& f : flagged) {
      if (f.retests > 0 && 2 * f.slow_retests > f.retests) confirmed_rails.push_back(f.rail);
    }
    Suspect s;
    s.nodes = {x};
    s.confirmed = !confirmed_rails.empty();
    std::vector<int> flagged_rails;
    for (const RailFacts& f : flagged) flagged_rails.push_back(f.rail);
    s.rails = s.confirmed ? confirmed_rails : flagged_rails;
    s.kind =
        static_cast<int>(s.rails.size()) == total_rails ? SuspectKind::kNode : SuspectKind::kNic;
    std::vector<double> ratios, sendrecv, retest_ratios;
    int peers = 0, slow_peers = 0, retests_n = 0, slow_retests = 0;
    for (const RailFacts& f : flagged) {
      if (std::find(s.rails.begin(), s.rails.end(), f.rail) == s.rails.end()) continue;
      peers += f.peers;
      slow_peers += f.slow_peers;
      retests_n += f.retests;
      slow_retests += f.slow_retests;
      ratios.insert(ratios.end(), f.slow_ratios.begin(), f.slow_ratios.end());
      sendrecv.insert(sendrecv.end(), f.slow_sendrecv.begin(), f.slow_sendrecv.end());
      retest_ratios.insert(retest_ratios.end(), f.retest_ratios.begin(), f.retest_ratios.end());
    }
    s.ratio = Median(ratios);
    s.agreeing = slow_peers + slow_retests;
    s.measurements = peers + retests_n;
    s.confidence = s.measurements > 0 ? static_cast<double>(s.agreeing) / s.measurements : 0.0;
    const RailBaseline& base =
        candidates.rails[static_cast<size_t>(s.rails.front())].baseline.values();
    s.evidence = fmt::format(
        "slow with {} of {} peers{}: median {} the typical pair (sendrecv {} against {})",
        slow_peers, peers, RailsPhrase(s.rails, total_rails), Times(s.ratio), Gbs(Median(sendrecv)),
        Gbs(base.sendrecv_typical));
    if (plan_node.good.empty()) {
      s.evidence += "; not retested: no known-good node to test it against";
    } else {
      s.evidence += fmt::format("; retested against known-good {}: {} of {} slow (median {})",
                                NameList(layout, plan_node.good), slow_retests, retests_n,
                                Times(Median(retest_ratios)));
    }
    (s.confirmed ? decision.named : decision.unconfirmed).push_back(std::move(s));
  }

  for (const ConfirmationPlan::LinkRetest& plan_link : plan.links) {
    const NodePair link = plan_link.link;
    std::vector<int> flagged_rails, confirmed_rails;
    int agreeing = 0, measurements = 0, others = 0, fine_others = 0;
    std::vector<double> ratios, sendrecv;
    std::string retest_text;
    for (size_t r = 0; r < candidates.rails.size(); ++r) {
      const RailAnalysis& rail = candidates.rails[r];
      const auto it = std::find_if(rail.slow_links.begin(), rail.slow_links.end(),
                                   [&](size_t i) { return rail.pairs[i].pair == link; });
      if (it == rail.slow_links.end()) continue;
      flagged_rails.push_back(static_cast<int>(r));
      const PairVerdict& v = rail.pairs[*it];
      int rail_agreeing = 1, rail_measurements = 1;
      // Both ends with their other peers: fine is what a link (not a node) predicts.
      for (int end : {link.a, link.b}) {
        for (size_t i : rail.pairs_of_node[static_cast<size_t>(end)]) {
          const PairVerdict& o = rail.pairs[i];
          if (o.pair == link || rail.slow_node[static_cast<size_t>(Other(o.pair, end))]) continue;
          ++others;
          ++rail_measurements;
          if (rail.baseline.IsFine(o.ratio)) {
            ++fine_others;
            ++rail_agreeing;
          }
        }
      }
      const PairVerdict* again = Find(retest[r], link.a, link.b);
      const PairVerdict* with_a =
          plan_link.good_a >= 0 ? Find(retest[r], link.a, plan_link.good_a) : nullptr;
      const PairVerdict* with_b =
          plan_link.good_b >= 0 ? Find(retest[r], link.b, plan_link.good_b) : nullptr;
      // The ends must be clearly fine with good nodes, not merely short of slow: an end at
      // 0.55x in a noisy cluster is no evidence that the link, not the node, is at fault.
      const auto fine = [&](const PairVerdict* t) {
        return t != nullptr && rail.baseline.IsFine(t->ratio);
      };
      for (const PairVerdict* t : {again, with_a, with_b}) {
        if (t == nullptr) continue;
        ++rail_measurements;
        if (t == again ? t->slow : fine(t)) ++rail_agreeing;
      }
      const bool confirmed = again != nullptr && again->slow && fine(with_a) && fine(with_b);
      if (confirmed) confirmed_rails.push_back(static_cast<int>(r));
      agreeing += rail_agreeing;
      measurements += rail_measurements;
      ratios.push_back(v.ratio);
      sendrecv.push_back(v.sendrecv);
      if (retest_text.empty() && again != nullptr) {
        retest_text = fmt::format("; retested: {} again", Times(again->ratio));
        if (with_a != nullptr) {
          retest_text +=
              fmt::format(", {}-{} {}", name(link.a), name(plan_link.good_a), Times(with_a->ratio));
        }
        if (with_b != nullptr) {
          retest_text +=
              fmt::format(", {}-{} {}", name(link.b), name(plan_link.good_b), Times(with_b->ratio));
        }
      }
    }
    if (flagged_rails.empty()) continue;
    Suspect s;
    s.kind = SuspectKind::kLink;
    s.nodes = {link.a, link.b};
    s.confirmed = !confirmed_rails.empty();
    s.rails = s.confirmed ? confirmed_rails : flagged_rails;
    s.ratio = Median(ratios);
    s.agreeing = agreeing;
    s.measurements = measurements;
    s.confidence = measurements > 0 ? static_cast<double>(agreeing) / measurements : 0.0;
    const RailBaseline& base =
        candidates.rails[static_cast<size_t>(s.rails.front())].baseline.values();
    s.evidence = fmt::format(
        "slow between {} and {} only{}: {} the typical pair (sendrecv {} against {}); {} of "
        "their {} other pairs fine",
        name(link.a), name(link.b), RailsPhrase(s.rails, total_rails), Times(s.ratio),
        Gbs(Median(sendrecv)), Gbs(base.sendrecv_typical), fine_others, others);
    s.evidence += plan_link.good_a < 0 ? "; not retested: no known-good node to test it against"
                                       : retest_text;
    (s.confirmed ? decision.named : decision.unconfirmed).push_back(std::move(s));
  }
  SortSuspects(decision.named);
  SortSuspects(decision.unconfirmed);
  return decision;
}

namespace {

// The per-node test's yardstick: the median node, and how far below it is slow.
struct NodeBaseline {
  double median = 0;
  double center = 1;
  double sigma = 0;
  double Ratio(const NodeSample& s) const {
    return s.wrong > 0 ? 0.0 : (median > 0 ? s.all_reduce_busbw / median : 1.0);
  }
};

NodeBaseline MakeNodeBaseline(const std::vector<NodeSample>& samples) {
  NodeBaseline b;
  std::vector<double> bw;
  for (const NodeSample& s : samples) {
    if (s.wrong == 0 && Finite(s.all_reduce_busbw)) bw.push_back(s.all_reduce_busbw);
  }
  b.median = Median(bw);
  std::vector<double> ratios;
  for (const NodeSample& s : samples) ratios.push_back(b.Ratio(s));
  b.center = Median(ratios);
  b.sigma = RobustSigma(ratios);
  return b;
}

bool NodeSlow(const NodeBaseline& b, double ratio, const LocateOptions& options) {
  const double sigma = Finite(b.sigma) ? b.sigma : 0.0;
  return ratio < options.threshold * b.center && b.center - ratio > options.min_robust_z * sigma;
}

}  // namespace

std::vector<int> IntraNodeCandidates(const std::vector<NodeSample>& samples,
                                     const LocateOptions& options) {
  std::vector<int> out;
  if (samples.size() < 3) return out;  // no majority to call normal
  const NodeBaseline b = MakeNodeBaseline(samples);
  for (const NodeSample& s : samples) {
    if (NodeSlow(b, b.Ratio(s), options)) out.push_back(s.node);
  }
  return out;
}

Decision DecideIntraNode(const ClusterLayout& layout, const std::vector<NodeSample>& first,
                         const std::vector<NodeSample>& second, const LocateOptions& options) {
  Decision decision;
  if (first.size() < 3) return decision;
  const NodeBaseline b = MakeNodeBaseline(first);
  for (int x : IntraNodeCandidates(first, options)) {
    const auto in = [x](const std::vector<NodeSample>& list) -> const NodeSample* {
      for (const NodeSample& s : list) {
        if (s.node == x) return &s;
      }
      return nullptr;
    };
    const NodeSample* one = in(first);
    const NodeSample* two = in(second);
    Suspect s;
    s.kind = SuspectKind::kIntraNode;
    s.nodes = {x};
    s.ratio = b.Ratio(*one);
    s.measurements = two != nullptr ? 2 : 1;
    s.agreeing = 1 + (two != nullptr && NodeSlow(b, b.Ratio(*two), options) ? 1 : 0);
    s.confirmed = s.agreeing == 2;
    s.confidence = static_cast<double>(s.agreeing) / s.measurements;
    s.evidence =
        fmt::format("its {} ranks all_reduce among themselves at {}, {} the median node's {}",
                    layout.ranks[static_cast<size_t>(x)].size(), Gbs(one->all_reduce_busbw),
                    Times(s.ratio), Gbs(b.median));
    if (two != nullptr) s.evidence += fmt::format("; retest {}", Times(b.Ratio(*two)));
    (s.confirmed ? decision.named : decision.unconfirmed).push_back(std::move(s));
  }
  return decision;
}

}  // namespace fabricscope::classify
