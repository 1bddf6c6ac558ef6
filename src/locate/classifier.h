// Private: the classifier. It turns pair measurements into candidate slow nodes and slow
// links (per rail), picks the known-good nodes to retest them against, and decides, from
// the retests, which candidates are named.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope::classify {

// One pair on one rail, its samples combined (medians), judged against the rail's baseline.
struct PairVerdict {
  NodePair pair;
  double sendrecv = 0;
  double all_reduce = 0;
  int64_t wrong = 0;
  int samples = 0;
  double ratio = 1.0;  // mean of the two bandwidths over their medians; 0 when data was wrong
  bool slow = false;
};

// The yardstick of one rail: what a pair's bandwidth is compared with.
class Baseline {
 public:
  Baseline() = default;
  Baseline(RailBaseline values, double center, const LocateOptions& options);
  // A pair's bandwidths as one number: their mean ratio to the rail's medians.
  double Ratio(double sendrecv, double all_reduce, int64_t wrong) const;
  // Below threshold AND more than min_robust_z robust standard deviations under the center.
  bool IsSlow(double ratio) const;
  // At or above the threshold: clearly not slow (below it but within the noise is neither).
  bool IsFine(double ratio) const;
  const RailBaseline& values() const { return values_; }

 private:
  RailBaseline values_;
  double center_ = 1.0;
  double threshold_ = 0.7;
  double min_z_ = 3.0;
};

// Combines the samples of each pair of one rail (median per metric, wrong summed).
std::vector<PairVerdict> CombineSamples(const std::vector<PairSample>& samples, int rail);

// What the pair rounds say about one rail.
struct RailAnalysis {
  Baseline baseline;
  std::vector<PairVerdict> pairs;
  std::vector<std::vector<size_t>> pairs_of_node;  // indices into pairs
  std::vector<char> slow_node;                     // per node: slow with most peers
  std::vector<int> slow_node_order;                // the order they were found in
  std::vector<size_t> slow_links;  // slow pairs neither of whose ends is a slow node

  // Pairs of `node` whose peer is not a slow node, and how many of them are slow.
  int Unexplained(int node, int* slow = nullptr) const;
  // The median ratio of those pairs.
  double MedianRatio(int node) const;
};

// Slow nodes: repeatedly the node slow with the largest share (over half) of its peers
// that are not themselves slow nodes, with at least two such peers; a slow node explains
// every slow pair it is in. Slow links: the slow pairs left.
RailAnalysis AnalyzeRail(int rail, int nodes, const std::vector<PairSample>& samples,
                         const LocateOptions& options);

// The candidates after the pair rounds, every rail.
struct Candidates {
  std::vector<RailAnalysis> rails;
  std::vector<int> nodes;       // slow on some rail, in index order
  std::vector<NodePair> links;  // slow link on some rail
  std::vector<int> good;        // in no candidate on any rail, best median ratio first
};

Candidates FindCandidates(const ClusterLayout& layout, const std::vector<PairSample>& samples,
                          const LocateOptions& options);

// Which known-good nodes each candidate is retested against.
struct ConfirmationPlan {
  struct NodeRetest {
    int node = 0;
    std::vector<int> good;
  };
  struct LinkRetest {
    NodePair link;
    int good_a = -1;  // retested with link.a
    int good_b = -1;  // retested with link.b
  };
  std::vector<NodeRetest> nodes;
  std::vector<LinkRetest> links;
  // Every retest pair once, in an order that packs into few rounds.
  std::vector<NodePair> Pairs() const;
};

// Spreads the retests over the known-good nodes, so the rounds stay few.
ConfirmationPlan PlanConfirmation(const Candidates& candidates, const LocateOptions& options);

// Named (confirmed) suspects and the candidates the retests did not bear out.
struct Decision {
  std::vector<Suspect> named;
  std::vector<Suspect> unconfirmed;
};

Decision Decide(const ClusterLayout& layout, const Candidates& candidates,
                const ConfirmationPlan& plan, const std::vector<PairSample>& retests);

// The per-node test: nodes whose own ranks are slow together, in the first measurement;
// `second` (the retest, may be empty) confirms them.
std::vector<int> IntraNodeCandidates(const std::vector<NodeSample>& samples,
                                     const LocateOptions& options);
Decision DecideIntraNode(const ClusterLayout& layout, const std::vector<NodeSample>& first,
                         const std::vector<NodeSample>& second, const LocateOptions& options);

}  // namespace fabricscope::classify
