// The classifier on hand-made measurements: slow node against slow link, explaining away,
// wrong data, noise, and what the retests decide.
#include "locate/classifier.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope::classify {
namespace {

ClusterLayout Layout(int nodes, int rails = 1) {
  ClusterLayout layout;
  for (int x = 0; x < nodes; ++x) {
    layout.names.push_back("n" + std::to_string(x));
    std::vector<int> ranks;
    for (int r = 0; r < rails; ++r) ranks.push_back(x * rails + r);
    layout.ranks.push_back(ranks);
  }
  layout.rails = rails;
  return layout;
}

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

using Bandwidth = std::function<double(int a, int b, int rail)>;

// Every pair once (the full schedule), bandwidth from `bw`, the same for both metrics
// except a fixed small spread so the MAD is not zero.
std::vector<PairSample> AllPairs(int nodes, int rails, const Bandwidth& bw) {
  std::vector<PairSample> samples;
  int i = 0;
  for (int a = 0; a < nodes; ++a) {
    for (int b = a + 1; b < nodes; ++b) {
      for (int r = 0; r < rails; ++r) {
        const double jitter = 1.0 + 0.01 * ((i++ % 5) - 2);  // +-2%
        samples.push_back({{a, b}, r, bw(a, b, r) * jitter, bw(a, b, r) * jitter, 0});
      }
    }
  }
  return samples;
}

Bandwidth SlowNode(int node, double factor) {
  return [=](int a, int b, int) { return (a == node || b == node) ? 10.0 * factor : 10.0; };
}

Bandwidth SlowLink(int x, int y, double factor) {
  return [=](int a, int b, int) { return (a == x && b == y) ? 10.0 * factor : 10.0; };
}

TEST(Classifier, SlowWithEveryPeerIsANode) {
  const ClusterLayout layout = Layout(6);
  const Candidates c = FindCandidates(layout, AllPairs(6, 1, SlowNode(2, 0.25)), LocateOptions{});
  EXPECT_EQ(c.nodes, std::vector<int>{2});
  EXPECT_TRUE(c.links.empty());
  EXPECT_EQ(c.good.size(), 5u);
  EXPECT_EQ(std::count(c.good.begin(), c.good.end(), 2), 0);
  ASSERT_EQ(c.rails.size(), 1u);
  EXPECT_NEAR(c.rails[0].baseline.values().sendrecv_typical, 10.0, 0.2);
}

TEST(Classifier, SlowWithOnePeerIsALink) {
  const ClusterLayout layout = Layout(6);
  const Candidates c = FindCandidates(layout, AllPairs(6, 1, SlowLink(1, 4, 0.3)), LocateOptions{});
  EXPECT_TRUE(c.nodes.empty());
  EXPECT_EQ(c.links, (std::vector<NodePair>{{1, 4}}));
  EXPECT_EQ(Sorted(c.good), (std::vector<int>{0, 2, 3, 5}));
}

TEST(Classifier, FourNodesAreEnoughToTellThemApart) {
  // A slow node of four is in half of all pairs: the yardstick is the typical node's
  // median pair, which stays healthy.
  const ClusterLayout layout = Layout(4);
  const Candidates link = FindCandidates(layout, AllPairs(4, 1, SlowLink(0, 1, 0.3)), {});
  EXPECT_TRUE(link.nodes.empty());
  EXPECT_EQ(link.links, (std::vector<NodePair>{{0, 1}}));
  EXPECT_EQ(Sorted(link.good), (std::vector<int>{2, 3}));
  const Candidates node = FindCandidates(layout, AllPairs(4, 1, SlowNode(0, 0.3)), {});
  EXPECT_EQ(node.nodes, std::vector<int>{0});
  EXPECT_TRUE(node.links.empty());
  EXPECT_NEAR(node.rails[0].baseline.values().sendrecv_typical, 10.0, 0.2);
}

TEST(Classifier, TwoSlowNodesDoNotMakeTheirPeersLookSlow) {
  // As quick mode may pair them: node 0 meets slow 1, slow 2 and healthy 3, so two of its
  // three pairs are slow; both are explained once 1 and 2 are found, and 0 is not a third.
  const ClusterLayout layout = Layout(8);
  const std::vector<NodePair> pairs = {{0, 1}, {0, 2}, {0, 3}, {1, 4}, {1, 5},
                                       {2, 6}, {2, 7}, {3, 4}, {3, 5}, {4, 6},
                                       {5, 7}, {6, 7}, {3, 6}, {4, 7}, {5, 6}};
  std::vector<PairSample> samples;
  int i = 0;
  for (const NodePair& p : pairs) {
    const bool slow = p.a == 1 || p.b == 1 || p.a == 2 || p.b == 2;
    const double bw = (slow ? 2.0 : 10.0) * (1.0 + 0.01 * ((i++ % 5) - 2));
    samples.push_back({p, 0, bw, bw, 0});
  }
  const Candidates c = FindCandidates(layout, samples, {});
  EXPECT_EQ(c.nodes, (std::vector<int>{1, 2}));
  EXPECT_TRUE(c.links.empty());
  EXPECT_EQ(c.rails[0].Unexplained(0), 1);  // only 0-3 is left to judge node 0 by
}

TEST(Classifier, SlowNodeAndSlowLinkTogether) {
  const ClusterLayout layout = Layout(6);
  const Bandwidth bw = [](int a, int b, int) {
    if (a == 5 || b == 5) return 3.0;
    if (a == 0 && b == 3) return 4.0;
    return 10.0;
  };
  const Candidates c = FindCandidates(layout, AllPairs(6, 1, bw), {});
  EXPECT_EQ(c.nodes, std::vector<int>{5});
  EXPECT_EQ(c.links, (std::vector<NodePair>{{0, 3}}));
  EXPECT_EQ(Sorted(c.good), (std::vector<int>{1, 2, 4}));
}

TEST(Classifier, WrongDataCountsAsTheSlowestLink) {
  const ClusterLayout layout = Layout(5);
  std::vector<PairSample> samples = AllPairs(5, 1, [](int, int, int) { return 10.0; });
  for (PairSample& s : samples) {
    if (s.pair == NodePair{2, 3}) s.wrong = 7;
  }
  const Candidates c = FindCandidates(layout, samples, {});
  EXPECT_EQ(c.links, (std::vector<NodePair>{{2, 3}}));
  const auto& pairs = c.rails[0].pairs;
  const auto it = std::find_if(pairs.begin(), pairs.end(), [](const PairVerdict& v) {
    return v.pair == NodePair{2, 3};
  });
  ASSERT_NE(it, pairs.end());
  EXPECT_EQ(it->ratio, 0.0);
}

TEST(Classifier, ThresholdAndRobustZBothHaveToSaySlow) {
  Baseline tight({0, 10, 10, 0.01}, 1.0, LocateOptions{});
  EXPECT_TRUE(tight.IsSlow(0.6));
  EXPECT_FALSE(tight.IsSlow(0.75));  // tight cluster, but above the threshold
  Baseline noisy({0, 10, 10, 0.2}, 1.0, LocateOptions{});
  EXPECT_FALSE(noisy.IsSlow(0.6));  // below the threshold, but only 2 sigma down
  EXPECT_TRUE(noisy.IsSlow(0.3));
  EXPECT_DOUBLE_EQ(tight.Ratio(5, 15, 0), 1.0);
  EXPECT_DOUBLE_EQ(tight.Ratio(5, 5, 1), 0.0);
}

TEST(Classifier, NoFaultNoCandidates) {
  const ClusterLayout layout = Layout(16);
  const Candidates c =
      FindCandidates(layout, AllPairs(16, 1, [](int, int, int) { return 10.0; }), {});
  EXPECT_TRUE(c.nodes.empty());
  EXPECT_TRUE(c.links.empty());
  EXPECT_EQ(c.good.size(), 16u);
}

TEST(Classifier, SlowOnOneRailOnlyIsThatRailsCandidate) {
  const ClusterLayout layout = Layout(6, 2);
  const Bandwidth bw = [](int a, int b, int rail) {
    return (rail == 1 && (a == 4 || b == 4)) ? 2.0 : 10.0;
  };
  const Candidates c = FindCandidates(layout, AllPairs(6, 2, bw), {});
  EXPECT_EQ(c.nodes, std::vector<int>{4});
  EXPECT_FALSE(c.rails[0].slow_node[4]);
  EXPECT_TRUE(c.rails[1].slow_node[4]);
}

// Retest samples as a measurer would return them, from a bandwidth function.
std::vector<PairSample> Retests(const std::vector<NodePair>& pairs, int rails,
                                const Bandwidth& bw) {
  std::vector<PairSample> out;
  for (const NodePair& p : pairs) {
    for (int r = 0; r < rails; ++r) out.push_back({p, r, bw(p.a, p.b, r), bw(p.a, p.b, r), 0});
  }
  return out;
}

TEST(Decide, RetestsAgainstKnownGoodNodesConfirmASlowNode) {
  const ClusterLayout layout = Layout(6);
  const LocateOptions options;
  const Bandwidth bw = SlowNode(2, 0.25);
  const Candidates c = FindCandidates(layout, AllPairs(6, 1, bw), options);
  const ConfirmationPlan plan = PlanConfirmation(c, options);
  ASSERT_EQ(plan.nodes.size(), 1u);
  EXPECT_EQ(plan.nodes[0].good.size(), 3u);
  EXPECT_EQ(PackRounds(plan.Pairs()).size(), 3u);  // node 2 meets one good node per round
  const Decision d = Decide(layout, c, plan, Retests(plan.Pairs(), 1, bw));
  ASSERT_EQ(d.named.size(), 1u);
  const Suspect& s = d.named[0];
  EXPECT_EQ(s.kind, SuspectKind::kNode);
  EXPECT_EQ(s.nodes, std::vector<int>{2});
  EXPECT_TRUE(s.confirmed);
  EXPECT_EQ(s.agreeing, 5 + 3);
  EXPECT_EQ(s.measurements, 5 + 3);
  EXPECT_DOUBLE_EQ(s.confidence, 1.0);
  EXPECT_NEAR(s.ratio, 0.25, 0.02);
  EXPECT_NE(s.evidence.find("slow with 5 of 5 peers"), std::string::npos) << s.evidence;
  EXPECT_NE(s.evidence.find("3 of 3 slow"), std::string::npos) << s.evidence;
  EXPECT_TRUE(d.unconfirmed.empty());
}

TEST(Decide, ALinkThatIsFineOnRetestIsNotNamed) {
  const ClusterLayout layout = Layout(6);
  const LocateOptions options;
  const Candidates c = FindCandidates(layout, AllPairs(6, 1, SlowLink(1, 4, 0.3)), options);
  const ConfirmationPlan plan = PlanConfirmation(c, options);
  ASSERT_EQ(plan.links.size(), 1u);
  EXPECT_GE(plan.links[0].good_a, 0);
  EXPECT_NE(plan.links[0].good_a, plan.links[0].good_b);
  // A burst of other traffic, gone by the retest.
  const Decision transient =
      Decide(layout, c, plan, Retests(plan.Pairs(), 1, [](int, int, int) { return 10.0; }));
  EXPECT_TRUE(transient.named.empty());
  ASSERT_EQ(transient.unconfirmed.size(), 1u);
  EXPECT_FALSE(transient.unconfirmed[0].confirmed);
  // The real thing: slow again, both ends fine with good nodes.
  const Decision real = Decide(layout, c, plan, Retests(plan.Pairs(), 1, SlowLink(1, 4, 0.3)));
  ASSERT_EQ(real.named.size(), 1u);
  const Suspect& s = real.named[0];
  EXPECT_EQ(s.kind, SuspectKind::kLink);
  EXPECT_EQ(s.nodes, (std::vector<int>{1, 4}));
  // The pair, 4 + 4 other pairs of its ends, 3 retests: all agree.
  EXPECT_EQ(s.measurements, 1 + 8 + 3);
  EXPECT_EQ(s.agreeing, s.measurements);
  EXPECT_NE(s.evidence.find("slow between n1 and n4 only"), std::string::npos) << s.evidence;
  EXPECT_NE(s.evidence.find("8 of their 8 other pairs fine"), std::string::npos) << s.evidence;
}

TEST(Decide, ALinkWhoseEndIsSlowWithAGoodNodeIsNotNamedALink) {
  const ClusterLayout layout = Layout(6);
  const LocateOptions options;
  const Candidates c = FindCandidates(layout, AllPairs(6, 1, SlowLink(1, 4, 0.3)), options);
  const ConfirmationPlan plan = PlanConfirmation(c, options);
  // By the retest, node 1 has become slow with everyone.
  const Decision d = Decide(layout, c, plan, Retests(plan.Pairs(), 1, SlowNode(1, 0.3)));
  EXPECT_TRUE(d.named.empty());
  EXPECT_EQ(d.unconfirmed.size(), 1u);
}

TEST(Decide, ALinkWhoseEndIsOnlyShortOfSlowIsNotConfirmed) {
  const ClusterLayout layout = Layout(6);
  const LocateOptions options;
  const Candidates c = FindCandidates(layout, AllPairs(6, 1, SlowLink(1, 4, 0.3)), options);
  const ConfirmationPlan plan = PlanConfirmation(c, options);
  // Node 1 at 0.6x with its good node: below the threshold, so no evidence of a link.
  const int good_a = plan.links[0].good_a;
  const Decision d = Decide(layout, c, plan, Retests(plan.Pairs(), 1, [&](int a, int b, int) {
                              if (a == 1 && b == 4) return 3.0;
                              if ((a == 1 && b == good_a) || (a == good_a && b == 1)) return 6.0;
                              return 10.0;
                            }));
  EXPECT_TRUE(d.named.empty());
  ASSERT_EQ(d.unconfirmed.size(), 1u);
  const Baseline& b = c.rails[0].baseline;
  EXPECT_FALSE(b.IsFine(0.6));
  EXPECT_TRUE(b.IsFine(0.7));
}

TEST(Decide, SlowOnOneOfTwoRailsIsANic) {
  const ClusterLayout layout = Layout(6, 2);
  const LocateOptions options;
  const Bandwidth bw = [](int a, int b, int rail) {
    return (rail == 1 && (a == 4 || b == 4)) ? 2.0 : 10.0;
  };
  const Candidates c = FindCandidates(layout, AllPairs(6, 2, bw), options);
  const ConfirmationPlan plan = PlanConfirmation(c, options);
  const Decision d = Decide(layout, c, plan, Retests(plan.Pairs(), 2, bw));
  ASSERT_EQ(d.named.size(), 1u);
  EXPECT_EQ(d.named[0].kind, SuspectKind::kNic);
  EXPECT_EQ(d.named[0].rails, std::vector<int>{1});
  EXPECT_NE(d.named[0].evidence.find("on rail 1"), std::string::npos) << d.named[0].evidence;
}

TEST(Decide, IntraNodeNeedsTheRetestToAgree) {
  const ClusterLayout layout = Layout(5, 2);
  std::vector<NodeSample> first;
  for (int x = 0; x < 5; ++x) first.push_back({x, x == 3 ? 30.0 : 100.0 + x, 0});
  EXPECT_EQ(IntraNodeCandidates(first, {}), std::vector<int>{3});
  std::vector<NodeSample> again = first;
  const Decision confirmed = DecideIntraNode(layout, first, again, {});
  ASSERT_EQ(confirmed.named.size(), 1u);
  EXPECT_EQ(confirmed.named[0].kind, SuspectKind::kIntraNode);
  again[3].all_reduce_busbw = 101;
  const Decision cleared = DecideIntraNode(layout, first, again, {});
  EXPECT_TRUE(cleared.named.empty());
  EXPECT_EQ(cleared.unconfirmed.size(), 1u);
}

TEST(Stragglers, TheLateRankHasTheShortestTime) {
  RankTimes t;
  t.per_rank_us = {2000, 2010, 1000, 1990, 2005, 1995};  // rank 2 arrived late: others waited
  const std::vector<Straggler> s = FindStragglers(t, {0, 0, 1, 1, 2, 2}, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rank, 2);
  EXPECT_EQ(s[0].node, 1);
  EXPECT_TRUE(s[0].late);
  EXPECT_NEAR(s[0].ratio, 0.5, 0.01);
  t.per_rank_us = {1000, 1010, 990, 1005, 3000, 995};  // rank 4 held up in the call
  const std::vector<Straggler> held = FindStragglers(t, {0, 0, 1, 1, 2, 2}, {});
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].rank, 4);
  EXPECT_FALSE(held[0].late);
  t.per_rank_us = {1000, 1010, 990, 1005, 1003, 995};
  EXPECT_TRUE(FindStragglers(t, {}, {}).empty());
}

}  // namespace
}  // namespace fabricscope::classify
