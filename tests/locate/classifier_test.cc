// The classifier on hand-made measurements, one part at a time: log levels, noise from
// repeats, the critical value, the rule, references, the node test, explaining away, the
// rail's verdict, the suspects, what to remeasure, two nodes, and the per-node test.
#include "locate/classifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"
#include "fabricscope/model.h"
#include "fabricscope/platform.h"

namespace fabricscope::locate {
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

// Every pair `repeats` times (sweeps of the full schedule), bandwidth from `bw`, the same
// for both metrics, times a fixed jitter of +-2% so that repeats differ (noise about 0.015).
std::vector<PairSample> AllPairs(int nodes, int rails, const Bandwidth& bw, int repeats = 4) {
  std::vector<PairSample> samples;
  int i = 0;
  for (int k = 0; k < repeats; ++k) {
    for (int a = 0; a < nodes; ++a) {
      for (int b = a + 1; b < nodes; ++b) {
        for (int r = 0; r < rails; ++r) {
          const double jitter = 1.0 + 0.01 * (((3 * i++ + k) % 5) - 2);
          samples.push_back({{a, b}, r, bw(a, b, r) * jitter, bw(a, b, r) * jitter, 0});
        }
      }
    }
  }
  return samples;
}

// The rule of a quiet cluster: threshold 0.7, z 4 to name, 3 to clear, noise 0.05.
Rule QuietRule() {
  Rule rule;
  rule.log_threshold = std::log(0.7);
  rule.z = 4;
  rule.z_fine = 3;
  rule.sigma = 0.05;
  return rule;
}

RailVerdict Judge(int nodes, const std::vector<PairSample>& samples, int rail = 0) {
  return JudgeRail(samples, rail, nodes, LocateOptions{}, 1000);
}

Bandwidth SlowNode(int node, double factor) {
  return [=](int a, int b, int) { return (a == node || b == node) ? 10.0 * factor : 10.0; };
}

Bandwidth SlowLink(int x, int y, double factor) {
  return [=](int a, int b, int) { return (a == x && b == y) ? 10.0 * factor : 10.0; };
}

TEST(SampleLog, MeanOfTheTwoLogsAndWrongDataFarBelow) {
  const PairSample s{{0, 1}, 0, 5.0, 20.0, 0};
  EXPECT_NEAR(SampleLog(s, 10.0, 10.0), 0.5 * (std::log(0.5) + std::log(2.0)), 1e-6);
  PairSample wrong = s;
  wrong.wrong = 3;
  EXPECT_LT(SampleLog(wrong, 10.0, 10.0), std::log(0.01));
  PairSample one = s;
  one.all_reduce_busbw = std::nan("");  // a collective that did not run is left out
  EXPECT_NEAR(SampleLog(one, 10.0, 10.0), std::log(0.5), 1e-6);
  one.sendrecv_busbw = std::nan("");
  EXPECT_TRUE(std::isnan(SampleLog(one, 10.0, 10.0)));
}

TEST(BuildLevels, OneLevelPerPairFromAllItsSamples) {
  const RailLevels levels = BuildLevels(AllPairs(4, 1, SlowLink(1, 2, 0.5), 3), 0, 4);
  ASSERT_EQ(levels.pairs.size(), 6u);
  ASSERT_EQ(levels.pairs_of_node.size(), 4u);
  for (const auto& of : levels.pairs_of_node) EXPECT_EQ(of.size(), 3u);
  for (const PairLevel& p : levels.pairs) {
    EXPECT_EQ(p.n(), 3);
    const double expected = p.pair == NodePair{1, 2} ? std::log(0.5) : 0.0;
    EXPECT_NEAR(p.level, expected, 0.03) << p.pair.a << "-" << p.pair.b;
  }
}

TEST(EstimateNoise, FromRepeatsOfOnePairNotFromTheFault) {
  // A fault that takes one node to a quarter makes the pairs differ by a factor of four;
  // repeats of each pair still differ by +-2% only.
  const RailLevels faulty = BuildLevels(AllPairs(6, 1, SlowNode(2, 0.25), 4), 0, 6);
  std::vector<NodePair> every;
  for (const PairLevel& p : faulty.pairs) every.push_back(p.pair);
  EXPECT_EQ(NoiseSample(every, 6).size(), 15u);  // fewer than 64: all of them
  const Noise noise = EstimateNoise(faulty, every);
  EXPECT_GT(noise.sigma, 0.0);
  EXPECT_LT(noise.sigma, 0.05);
  EXPECT_GT(noise.df, 10.0);
  // One measurement per pair: no repeats, no noise figure.
  const Noise none = EstimateNoise(BuildLevels(AllPairs(6, 1, SlowNode(2, 0.25), 1), 0, 6), every);
  EXPECT_EQ(none.df, 0.0);
}

TEST(NoiseSample, RoundsOfDisjointPairsUntil64) {
  std::vector<NodePair> every;
  for (int a = 0; a < 40; ++a) {
    for (int b = a + 1; b < 40; ++b) every.push_back({a, b});
  }
  const std::vector<NodePair> sample = NoiseSample(every, 40);
  EXPECT_EQ(sample.size(), 80u);  // four rounds of 20 disjoint pairs
  EXPECT_EQ(PackRounds(sample).size(), 4u);
}

TEST(CriticalValue, GrowsWithTheTestsAndWithFewDegreesOfFreedom) {
  const double one = CriticalValue(0.999, 1, 1e6);
  EXPECT_NEAR(one, 3.09, 0.01);  // the normal quantile at 0.999
  EXPECT_GT(CriticalValue(0.999, 1000, 1e6), one);
  EXPECT_GT(CriticalValue(0.999, 1, 5), one);  // Student's t
  EXPECT_TRUE(std::isinf(CriticalValue(0.999, 1, 0)));
}

TEST(Rule, SlowFineOrUndecided) {
  const Rule rule = QuietRule();
  EXPECT_EQ(rule.Call(std::log(0.25), 0.05), PairCall::kSlow);
  EXPECT_EQ(rule.Call(0.0, 0.05), PairCall::kFine);
  EXPECT_EQ(rule.Call(std::log(0.25), 0.5), PairCall::kUndecided);   // too noisy to say
  EXPECT_EQ(rule.Call(std::log(0.65), 0.05), PairCall::kUndecided);  // near the threshold
  EXPECT_EQ(rule.Call(std::nan(""), 0.05), PairCall::kUndecided);
}

TEST(Compare, MoreSamplesNarrowTheError) {
  const RailLevels few = BuildLevels(AllPairs(6, 1, SlowNode(0, 0.5), 2), 0, 6);
  const RailLevels many = BuildLevels(AllPairs(6, 1, SlowNode(0, 0.5), 12), 0, 6);
  const Rule rule = QuietRule();
  const std::vector<char> none(6, 0);
  const Comparison a =
      Compare(few.pairs[0], MakeReference(few, PairsAvoiding(few, none, 0), 0.05), rule);
  const Comparison b =
      Compare(many.pairs[0], MakeReference(many, PairsAvoiding(many, none, 0), 0.05), rule);
  EXPECT_LT(b.se, a.se);
  EXPECT_NEAR(b.diff, std::log(0.5), 0.05);
}

// A stall only slows: two stalled samples out of three set a healthy pair's median 30x
// low, and its third sample shows what the pair can do. Its reach above the level keeps the
// slow call from the robust spread alone; the same stall on a slow pair changes nothing.
TEST(Compare, ASampleAboveTheLevelArguesAgainstASlowCallAStallDoesNot) {
  const Rule rule = QuietRule();
  Reference ref;  // the other pairs, at the typical
  ref.count = 10;
  ref.se = 0.02;
  PairLevel stalled;
  stalled.logs = {std::log(1.0 / 30), std::log(1.0 / 30), 0.0};
  stalled.level = std::log(1.0 / 30);
  stalled.upper = 0;
  EXPECT_EQ(Compare(stalled, ref, rule).call, PairCall::kSlow);  // the robust view alone
  // Other pairs at 10 GB/s: the rail's typical sample.
  auto with_others = [](std::vector<PairSample> samples) {
    for (int k = 0; k < 8; ++k) samples.push_back({{2, 3}, 0, 10.0, 10.0, 0});
    return samples;
  };
  const RailLevels levels = BuildLevels(with_others({{{0, 1}, 0, 10.0 / 30, 10.0 / 30, 0},
                                                     {{0, 1}, 0, 10.0 / 30, 10.0 / 30, 0},
                                                     {{0, 1}, 0, 10.0, 10.0, 0}}),
                                        0, 4);
  // The one sample above the level, log(30) above it: sqrt(2 x log(30)^2 / (3 - 1)), the
  // smaller of that and log(30) / 0.6745.
  EXPECT_NEAR(levels.pairs[0].upper, std::log(30.0), 1e-6);
  const Comparison c = Compare(levels.pairs[0], ref, rule);
  EXPECT_GT(c.se_slow, 5 * c.se);
  EXPECT_EQ(c.call, PairCall::kUndecided);

  // One collective stalled in every sample, the other at full speed: no slow call either.
  const RailLevels mixed = BuildLevels(with_others({{{0, 1}, 0, 10.0, 10.0 / 30, 0},
                                                    {{0, 1}, 0, 10.0 / 30, 10.0, 0},
                                                    {{0, 1}, 0, 10.0, 10.0 / 30, 0}}),
                                       0, 4);
  EXPECT_NEAR(mixed.pairs[0].logs[0], std::log(1.0 / 30) / 2, 1e-6);  // every sample alike
  EXPECT_EQ(Compare(mixed.pairs[0], ref, rule).call, PairCall::kUndecided);

  // A slow pair (0.3x) with one fast sample among six (a token bucket's burst): slow.
  const RailLevels burst = BuildLevels(with_others({{{0, 1}, 0, 3.0, 3.0, 0},
                                                    {{0, 1}, 0, 3.1, 2.9, 0},
                                                    {{0, 1}, 0, 10.0, 10.0, 0},
                                                    {{0, 1}, 0, 2.9, 3.1, 0},
                                                    {{0, 1}, 0, 3.05, 3.0, 0},
                                                    {{0, 1}, 0, 2.95, 3.0, 0}}),
                                       0, 4);
  EXPECT_EQ(Compare(burst.pairs[0], ref, rule).call, PairCall::kSlow);

  // A slow pair (0.3x) with one stalled sample: still slow.
  const RailLevels real = BuildLevels(with_others({{{0, 1}, 0, 3.0, 3.0, 0},
                                                   {{0, 1}, 0, 3.1, 2.9, 0},
                                                   {{0, 1}, 0, 3.0 / 30, 3.0 / 30, 0},
                                                   {{0, 1}, 0, 2.9, 3.1, 0}}),
                                      0, 4);
  EXPECT_EQ(Compare(real.pairs[0], ref, rule).call, PairCall::kSlow);
}

TEST(PairsAvoiding, LeavesOutPairsOfExcludedNodes) {
  const RailLevels levels = BuildLevels(AllPairs(4, 1, SlowNode(0, 1.0), 1), 0, 4);
  std::vector<char> excluded(4, 0);
  excluded[0] = 1;
  EXPECT_EQ(PairsAvoiding(levels, excluded).size(), 3u);     // 1-2, 1-3, 2-3
  EXPECT_EQ(PairsAvoiding(levels, excluded, 5).size(), 2u);  // and not pair 5 (2-3)
}

TEST(TestNode, EveryPairSlowIsASlowNodeOneFinePairClearsIt) {
  const Rule rule = QuietRule();
  const std::vector<char> none(6, 0);
  const RailLevels node = BuildLevels(AllPairs(6, 1, SlowNode(2, 0.25)), 0, 6);
  const NodeTest slow = TestNode(node, 2, none, rule);
  EXPECT_EQ(slow.call, PairCall::kSlow);
  EXPECT_EQ(slow.pairs, 5);
  EXPECT_EQ(slow.slow_pairs, 5);
  EXPECT_NEAR(std::exp(slow.diff), 0.25, 0.02);
  // The end of a slow link is slow with one peer and fine with the others: cleared.
  const RailLevels link = BuildLevels(AllPairs(6, 1, SlowLink(1, 4, 0.25)), 0, 6);
  EXPECT_EQ(TestNode(link, 1, none, rule).call, PairCall::kFine);
}

TEST(FindSlowNodes, ExplainsAwayAHealthyNodeThatMetTwoSlowOnes) {
  const Bandwidth two = [](int a, int b, int) {
    return (a == 1 || b == 1 || a == 3 || b == 3) ? 2.5 : 10.0;
  };
  const RailLevels levels = BuildLevels(AllPairs(6, 1, two), 0, 6);
  EXPECT_EQ(Sorted(FindSlowNodes(levels, QuietRule())), (std::vector<int>{1, 3}));
}

TEST(FindSlowNodes, ThreeNodesTwoSlowPairsShareTheSlowNode) {
  const RailLevels levels = BuildLevels(AllPairs(3, 1, SlowNode(2, 0.25)), 0, 3);
  EXPECT_EQ(FindSlowNodes(levels, QuietRule()), std::vector<int>{2});
  // One slow pair of three: its two ends each have a fine pair: no node.
  const RailLevels link = BuildLevels(AllPairs(3, 1, SlowLink(0, 1, 0.25)), 0, 3);
  EXPECT_TRUE(FindSlowNodes(link, QuietRule()).empty());
}

TEST(JudgeRail, ASlowNodeStarsItsWholeRowAndIsFound) {
  const RailVerdict v = Judge(6, AllPairs(6, 1, SlowNode(2, 0.25)));
  EXPECT_EQ(v.slow_nodes, std::vector<int>{2});
  for (size_t i = 0; i < v.levels.pairs.size(); ++i) {
    const NodePair& p = v.levels.pairs[i].pair;
    const bool of_2 = p.a == 2 || p.b == 2;
    EXPECT_EQ(v.pairs[i].call, of_2 ? PairCall::kSlow : PairCall::kFine) << p.a << "-" << p.b;
  }
  EXPECT_TRUE(v.slow_links.empty());
  EXPECT_TRUE(v.Decided());
  EXPECT_NEAR(v.sendrecv_typical, 10.0, 0.2);  // the healthy pairs, not the slow node's
}

TEST(JudgeRail, ASlowPairBetweenClearedEndsIsALink) {
  const RailVerdict v = Judge(6, AllPairs(6, 1, SlowLink(1, 4, 0.4)));
  EXPECT_TRUE(v.slow_nodes.empty());
  ASSERT_EQ(v.slow_links.size(), 1u);
  EXPECT_EQ(v.levels.pairs[v.slow_links[0]].pair, (NodePair{1, 4}));
  EXPECT_TRUE(v.Decided());
}

TEST(JudgeRail, TwoSamplesAreNotEnoughToNameALink) {
  // A median of two is a mean: one burst of other traffic moves it. Undecided, not named.
  const RailVerdict v = Judge(20, AllPairs(20, 1, SlowLink(1, 4, 0.4), 2));
  EXPECT_TRUE(v.slow_links.empty());
  EXPECT_FALSE(v.Decided());
  // Measured again: the noise sample (7 rounds of 10 disjoint pairs) and the link.
  const std::vector<NodePair> again = PairsToRemeasure({v}, 20);
  EXPECT_LE(again.size(), 71u);
  EXPECT_NE(std::find(again.begin(), again.end(), NodePair{1, 4}), again.end());
}

TEST(JudgeRail, OneMeasurementPerPairDecidesNothing) {
  const RailVerdict v = Judge(8, AllPairs(8, 1, SlowNode(2, 0.25), 1));
  EXPECT_TRUE(v.slow_nodes.empty());
  EXPECT_FALSE(v.Decided());
  // A noise sample first: rounds of disjoint pairs, all 28 pairs of eight nodes (below 64).
  EXPECT_EQ(PairsToRemeasure({v}, 8).size(), 28u);
}

TEST(JudgeRail, WrongDataIsSlowAtAnyNoise) {
  std::vector<PairSample> samples = AllPairs(6, 1, SlowNode(0, 1.0));
  for (PairSample& s : samples) {
    if (s.pair == NodePair{2, 5}) s.wrong = 7;
  }
  const RailVerdict v = Judge(6, samples);
  ASSERT_EQ(v.slow_links.size(), 1u);
  EXPECT_EQ(v.levels.pairs[v.slow_links[0]].pair, (NodePair{2, 5}));
}

TEST(Decide, SlowOnOneOfTwoRailsIsANic) {
  const ClusterLayout layout = Layout(6, 2);
  const Bandwidth bw = [](int a, int b, int rail) {
    return (rail == 1 && (a == 4 || b == 4)) ? 2.0 : 10.0;
  };
  const std::vector<PairSample> samples = AllPairs(6, 2, bw);
  const Decision d = Decide(layout, {Judge(6, samples, 0), Judge(6, samples, 1)});
  ASSERT_EQ(d.named.size(), 1u);
  EXPECT_EQ(d.named[0].kind, SuspectKind::kNic);
  EXPECT_EQ(d.named[0].rails, std::vector<int>{1});
  EXPECT_TRUE(d.named[0].confirmed);
  EXPECT_NE(d.named[0].evidence.find("on rail 1"), std::string::npos) << d.named[0].evidence;
}

TEST(Decide, SlowOnEveryRailIsANodeAndUndecidedIsNotNamed) {
  const ClusterLayout layout = Layout(6);
  const Decision node = Decide(layout, {Judge(6, AllPairs(6, 1, SlowNode(3, 0.3)))});
  ASSERT_EQ(node.named.size(), 1u);
  EXPECT_EQ(node.named[0].kind, SuspectKind::kNode);
  EXPECT_EQ(node.named[0].nodes, std::vector<int>{3});
  const Decision early = Decide(layout, {Judge(6, AllPairs(6, 1, SlowLink(1, 4, 0.4), 2))});
  EXPECT_TRUE(early.named.empty());
  ASSERT_EQ(early.undecided.size(), 1u);
  EXPECT_EQ(early.undecided[0].kind, SuspectKind::kLink);
  EXPECT_FALSE(early.undecided[0].confirmed);
}

TEST(Judgements, TheMatrixShowsTheClassifiersCalls) {
  const RailVerdict v = Judge(4, AllPairs(4, 1, SlowNode(1, 0.25)));
  const std::vector<PairJudgement> j = Judgements({v});
  ASSERT_EQ(j.size(), 6u);
  for (const PairJudgement& p : j) {
    const bool of_1 = p.pair.a == 1 || p.pair.b == 1;
    EXPECT_EQ(p.call == PairCall::kSlow, of_1);
    EXPECT_LE(p.low, p.ratio);
    EXPECT_GE(p.high, p.ratio);
    EXPECT_EQ(p.samples, 4);
  }
}

TEST(JudgeTwoNodes, APairAloneCannotSayWhichNode) {
  const ClusterLayout layout = Layout(2);
  const std::vector<PairSample> slow = AllPairs(2, 1, SlowNode(0, 0.25), 12);  // 2.5 GB/s
  LocateOptions options;
  const TwoNodeVerdict none = JudgeTwoNodes(layout, {Judge(2, slow)}, {}, options);
  EXPECT_EQ(none.status, LocateStatus::kInconclusive);
  EXPECT_NE(none.unknown.find("cannot tell whether n0, n1 or the path"), std::string::npos)
      << none.unknown;
  EXPECT_NE(none.next_step.find("--expect"), std::string::npos);
  options.expect_gbs = 10;
  const TwoNodeVerdict below = JudgeTwoNodes(layout, {Judge(2, slow)}, {}, options);
  EXPECT_EQ(below.status, LocateStatus::kAmbiguous);
  EXPECT_NE(below.unknown.find("is 0.25x the expected 10 GB/s, significantly below 0.70x"),
            std::string::npos)
      << below.unknown;
  options.expect_source = "dgx-h100: check's expectation";
  const TwoNodeVerdict sourced = JudgeTwoNodes(layout, {Judge(2, slow)}, {}, options);
  EXPECT_NE(sourced.unknown.find("0.25x the expected 10 GB/s (dgx-h100: check's expectation)"),
            std::string::npos)
      << sourced.unknown;
  EXPECT_NE(sourced.unknown.find("the fault is on the path between them or on the nodes"),
            std::string::npos)
      << sourced.unknown;
  const TwoNodeVerdict fine =
      JudgeTwoNodes(layout, {Judge(2, AllPairs(2, 1, SlowNode(0, 1.0), 12))}, {}, options);
  EXPECT_EQ(fine.status, LocateStatus::kClear);
}

// Every pair `repeats` times at bw(a, b), each repeat off by a factor of e^+-0.3 (noise
// about 0.6 between repeats, as on the CPU-bound test bed).
std::vector<PairSample> NoisyPairs(int nodes, const Bandwidth& bw, int repeats) {
  std::vector<PairSample> samples;
  int i = 0;
  for (int k = 0; k < repeats; ++k) {
    for (int a = 0; a < nodes; ++a) {
      for (int b = a + 1; b < nodes; ++b) {
        const double f = std::exp(((i++ + k) % 2 == 0 ? 0.3 : -0.3));
        samples.push_back({{a, b}, 0, bw(a, b, 0) * f, bw(a, b, 0) * f, 0});
      }
    }
  }
  return samples;
}

// The test bed's slow link: n1-n3 at a tenth, n3's other pairs at 0.8x, noise 0.6. n3 cannot
// be cleared against the cluster at this noise, but the link is far below each end's own
// other pairs: named. At 0.6x of its ends it is not (not below 0.7x of them significantly).
TEST(CallLinks, ALinkFarBelowBothEndsOwnPairsIsNamedWhereAnEndIsNotCleared) {
  const Bandwidth bw = [](int a, int b, int) {
    if (a == 1 && b == 3) return 1.0;
    return b == 3 ? 8.0 : 10.0;
  };
  const RailVerdict v = Judge(4, NoisyPairs(4, bw, 16));
  EXPECT_GT(v.noise.sigma, 0.5);
  EXPECT_TRUE(v.slow_nodes.empty());
  EXPECT_NE(v.node_calls[3], PairCall::kFine);  // not cleared against the cluster
  ASSERT_EQ(v.slow_links.size(), 1u);
  EXPECT_EQ(v.levels.pairs[v.slow_links[0]].pair, (NodePair{1, 3}));
  EXPECT_TRUE(SlowerThanBothEnds(v, v.slow_links[0]));
  const Bandwidth mild = [](int a, int b, int) {
    if (a == 1 && b == 3) return 4.8;  // 0.6x of n3's other pairs
    return b == 3 ? 8.0 : 10.0;
  };
  const RailVerdict m = Judge(4, NoisyPairs(4, mild, 16));
  EXPECT_TRUE(m.slow_links.empty());
  for (size_t i = 0; i < m.levels.pairs.size(); ++i) EXPECT_FALSE(SlowerThanBothEnds(m, i));
}

// check's expectation for a 2-node sendrecv, the figure two nodes' pair is judged against:
// the catalog has no sendrecv band, so it is the model's, as check falls back to it.
TEST(PlatformPairExpectation, IsChecksModelForSendrecvOnTwoNodes) {
  const Catalog catalog = Catalog::Builtin();
  const Platform& h100 = catalog.Get("dgx-h100");
  const size_t bytes = size_t{64} << 20;
  const PairExpectation e = PlatformPairExpectation(h100, bytes);
  ModelOptions two;
  two.nodes = 2;
  EXPECT_DOUBLE_EQ(e.gbs, CollectiveModel(h100, two).Predict(Collective::kSendRecv, bytes).busbw);
  // One pair crosses one NIC: below its line rate (400 Gb/s = 50 GB/s), well above nothing.
  EXPECT_GT(e.gbs, 25.0);
  EXPECT_LT(e.gbs, 50.0);
  EXPECT_NE(e.source.find("dgx-h100"), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("sendrecv on 2 nodes"), std::string::npos) << e.source;
  // A smaller message is latency-bound: a lower expectation, as check would judge it.
  EXPECT_LT(PlatformPairExpectation(h100, size_t{1} << 20).gbs, e.gbs);
  EXPECT_THROW(PlatformPairExpectation(h100, 0), UsageError);
}

TEST(JudgeTwoNodes, ASlowRailIsThatRailsNicOnOneOfTheTwo) {
  const ClusterLayout layout = Layout(2, 2);
  const Bandwidth bw = [](int, int, int rail) { return rail == 1 ? 3.0 : 10.0; };
  const std::vector<PairSample> samples = AllPairs(2, 2, bw, 12);
  const std::vector<NodeSample> inside = {{0, 150.0, 0}, {1, 40.0, 0}};
  const TwoNodeVerdict v =
      JudgeTwoNodes(layout, {Judge(2, samples, 0), Judge(2, samples, 1)}, inside, {});
  EXPECT_EQ(v.status, LocateStatus::kAmbiguous);
  EXPECT_NE(v.unknown.find("rail 1 is slower"), std::string::npos) << v.unknown;
  EXPECT_NE(v.unknown.find("n1 40 GB/s"), std::string::npos) << v.unknown;  // the per-node test
}

// Per-node rounds: node 3's own ranks at 30 against about 100 (with a +-2% jitter).
std::vector<std::vector<NodeSample>> NodeRounds(int rounds, double slow_bw) {
  std::vector<std::vector<NodeSample>> out;
  for (int r = 0; r < rounds; ++r) {
    std::vector<NodeSample> round;
    for (int x = 0; x < 5; ++x) {
      const double jitter = 1.0 + 0.01 * (((3 * x + r) % 5) - 2);
      round.push_back({x, (x == 3 ? slow_bw : 100.0) * jitter, 0});
    }
    out.push_back(round);
  }
  return out;
}

TEST(JudgeIntraNode, ASlowInteriorIsNamedOnlyWhenSignificant) {
  const ClusterLayout layout = Layout(5, 2);
  const IntraVerdict slow = JudgeIntraNode(layout, NodeRounds(3, 30.0), {});
  ASSERT_EQ(slow.decision.named.size(), 1u);
  EXPECT_EQ(slow.decision.named[0].kind, SuspectKind::kIntraNode);
  EXPECT_EQ(slow.decision.named[0].nodes, std::vector<int>{3});
  EXPECT_TRUE(slow.decided);
  // Healthy interiors: nobody.
  const IntraVerdict fine = JudgeIntraNode(layout, NodeRounds(3, 100.0), {});
  EXPECT_TRUE(fine.decision.named.empty());
  EXPECT_TRUE(fine.decided);
  // One round has no noise figure: below the threshold is undecided, not named.
  const IntraVerdict once = JudgeIntraNode(layout, NodeRounds(1, 30.0), {});
  EXPECT_TRUE(once.decision.named.empty());
  ASSERT_EQ(once.decision.undecided.size(), 1u);
  EXPECT_FALSE(once.decided);
}

// A node that could not be measured (NaN or infinite bandwidth in every round) is named as
// unmeasured; the others are judged on their own samples, and no NaN reaches the noise, the
// median or the calls: node 3's slow interior is still named. A node with one NaN round
// among finite ones is judged on the finite ones.
TEST(JudgeIntraNode, AnUnmeasuredNodeIsNamedUnmeasuredAndKeptOutOfTheStatistics) {
  const ClusterLayout layout = Layout(6, 2);
  std::vector<std::vector<NodeSample>> rounds = NodeRounds(3, 30.0);
  for (size_t r = 0; r < rounds.size(); ++r) {
    rounds[r].push_back({5,
                         r == 1 ? std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::quiet_NaN(),
                         0});
  }
  rounds[1][0].all_reduce_busbw = std::numeric_limits<double>::quiet_NaN();  // node 0, once
  const IntraVerdict v = JudgeIntraNode(layout, rounds, {});
  ASSERT_EQ(v.decision.named.size(), 1u);
  EXPECT_EQ(v.decision.named[0].nodes, std::vector<int>{3});
  EXPECT_TRUE(std::isfinite(v.decision.named[0].ratio));
  EXPECT_NEAR(v.decision.named[0].ratio, 0.3, 0.03);
  EXPECT_EQ(v.decision.named[0].evidence.find("nan"), std::string::npos)
      << v.decision.named[0].evidence;
  ASSERT_EQ(v.decision.undecided.size(), 1u);
  const Suspect& unmeasured = v.decision.undecided[0];
  EXPECT_EQ(unmeasured.nodes, std::vector<int>{5});
  EXPECT_EQ(unmeasured.measurements, 0);
  EXPECT_EQ(unmeasured.evidence.rfind("unmeasured: its 2 ranks", 0), 0u) << unmeasured.evidence;
  EXPECT_NE(unmeasured.evidence.find("in 3 round(s)"), std::string::npos) << unmeasured.evidence;
  EXPECT_FALSE(v.decided);  // a node not measured: not a clear result
  // The same rounds without node 5: the same call on node 3 (it took no part).
  std::vector<std::vector<NodeSample>> without = rounds;
  for (auto& round : without) round.pop_back();
  const IntraVerdict w = JudgeIntraNode(layout, without, {});
  ASSERT_EQ(w.decision.named.size(), 1u);
  EXPECT_DOUBLE_EQ(w.decision.named[0].ratio, v.decision.named[0].ratio);
  // Every node unmeasured: all named so, none judged.
  for (auto& round : rounds) {
    for (NodeSample& s : round) s.all_reduce_busbw = std::numeric_limits<double>::quiet_NaN();
  }
  const IntraVerdict none = JudgeIntraNode(layout, rounds, {});
  EXPECT_TRUE(none.decision.named.empty());
  EXPECT_EQ(none.decision.undecided.size(), 6u);
  EXPECT_FALSE(none.decided);
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

// Round effects (issue 29): eight disjoint pairs measured together in each of six rounds,
// each round slower or faster as a whole, one pair slow for good. The rounds' effects are
// found (the median of their pairs' differences from their own levels), the slow pair stays
// slow, and a round of three reference samples is left alone.
TEST(EstimateRoundEffects, EachRoundsSharedSlowdownIsFoundAndAFaultStaysInItsPair) {
  const std::vector<double> round_effect = {0.0, -0.4, 0.3, 0.0, -0.2, 0.5};
  std::vector<NodePair> pairs;
  std::vector<int> rounds;
  std::vector<double> logs;
  for (int r = 0; r < 6; ++r) {
    for (int p = 0; p < 8; ++p) {
      const double jitter = 0.01 * (((3 * p + r) % 5) - 2);
      const double level = p == 5 ? std::log(0.3) : 0.0;
      pairs.push_back({2 * p, 2 * p + 1});
      rounds.push_back(r);
      logs.push_back(level + round_effect[static_cast<size_t>(r)] + jitter);
    }
  }
  // A seventh round of three pairs: too few to tell its effect.
  for (int p = 0; p < 3; ++p) {
    pairs.push_back({2 * p, 2 * p + 1});
    rounds.push_back(6);
    logs.push_back(-0.6);
  }
  const std::vector<char> reference(logs.size(), 1);
  const RoundEffects e = EstimateRoundEffects(pairs, rounds, logs, reference);
  ASSERT_EQ(e.effect.size(), logs.size());
  for (size_t i = 0; i < 48; ++i) {
    // The rounds' effects are relative to the pairs' medians over rounds (whose own
    // median effect is 0.0 here).
    EXPECT_NEAR(e.effect[i], round_effect[static_cast<size_t>(rounds[i])], 0.03) << "sample " << i;
  }
  for (size_t i = 48; i < logs.size(); ++i) EXPECT_EQ(e.effect[i], 0.0);
  EXPECT_EQ(e.adjusted, 48);
  // 48 samples in rounds of 8: 1 + pi/16 each; 3 outside: 1.
  EXPECT_NEAR(e.variance_factor, (48 * (1 + 1.5708 / 8) + 3) / 51.0, 1e-6);
  // Not a reference sample: measured, never used for an effect.
  std::vector<char> none(logs.size(), 0);
  EXPECT_EQ(EstimateRoundEffects(pairs, rounds, logs, none).adjusted, 0);
}

// Round effects taken off shrink the noise the classifier measures on a cluster whose rounds
// are slow or fast together, and the slow call keeps what was measured: a round's effect
// taken off can clear a pair, never name one.
TEST(BuildLevels, RoundEffectsComeOffTheSamplesButNotOffTheStallRule) {
  // The schedule's rounds: pairs of one round are disjoint (round robin of 8: 7 rounds of 4).
  const std::vector<Round> schedule = RoundRobinSchedule(8);
  int round = 0;
  std::vector<PairSample> ordered;
  for (int sweep = 0; sweep < 6; ++sweep) {
    for (const Round& r : schedule) {
      const double effect = ((round * 7) % 5 - 2) * 0.2;  // -0.4 .. 0.4, shared
      for (const NodePair& p : r.pairs) {
        PairSample s;
        s.pair = p;
        s.round = round;
        s.sendrecv_busbw = s.all_reduce_busbw = 10.0 * std::exp(effect);
        ordered.push_back(s);
      }
      ++round;
    }
  }
  const RailLevels with = BuildLevels(ordered, 0, 8);
  const RailLevels without = BuildLevels(ordered, 0, 8, false);
  std::vector<NodePair> every;
  for (const PairLevel& p : with.pairs) every.push_back(p.pair);
  EXPECT_LT(EstimateNoise(with, every).sigma, 0.01);
  EXPECT_GT(EstimateNoise(without, every).sigma, 0.2);
  EXPECT_EQ(with.round_adjusted, static_cast<int>(ordered.size()));
  EXPECT_EQ(without.round_adjusted, 0);
  // Every pair's raw level is kept for the slow call.
  for (const PairLevel& p : with.pairs) EXPECT_TRUE(std::isfinite(p.raw_level));
}

// A node is cleared by a fine pair only when that pair was measured three times, and then
// only when fewer than half of its pairs are slow (or two such pairs are fine): one burst
// makes a once-measured pair of a slow node look fine (issue 29's replayed bed), and a slow
// node cleared has its slow pairs named as links.
TEST(JudgeRail, ABurstOnAOnceMeasuredPairDoesNotClearASlowNode) {
  // Six nodes, node 2 slow: each pair measured four times, but pair 2-3 once, and fast.
  std::vector<PairSample> samples;
  for (const PairSample& s : AllPairs(6, 1, SlowNode(2, 0.25), 4)) {
    if (s.pair.a == 2 && s.pair.b == 3) continue;
    samples.push_back(s);
  }
  samples.push_back({{2, 3}, 0, 12.0, 12.0, 0});
  const RailVerdict v = Judge(6, samples);
  EXPECT_TRUE(v.slow_links.empty()) << "a slow node's pairs named as links";
  for (int x : v.slow_nodes) EXPECT_EQ(x, 2);
  // Measured three times and fast each time, it is fine; against four slow pairs of five
  // it still does not clear node 2.
  samples.push_back({{2, 3}, 0, 12.0, 12.0, 0});
  samples.push_back({{2, 3}, 0, 12.0, 12.0, 0});
  const RailVerdict three = Judge(6, samples);
  EXPECT_TRUE(three.slow_links.empty()) << "a slow node's pairs named as links";
  EXPECT_NE(three.node_calls[2], PairCall::kFine);
}

// A fine call's reference error counts the spread between the reference pairs only up to
// one pair's own error (their median sits at the middle pair's level); the slow call keeps
// the whole spread.
TEST(MakeReference, TheSpreadBetweenPairsCountsOnlyUpToOnePairsErrorForAFineCall) {
  // Four pairs at 10, 11, 12 and 14 GB/s for good, measured 16 times at noise ~0.015.
  const RailLevels levels = BuildLevels(AllPairs(
                                            3, 1,
                                            [](int a, int b, int) {
                                              if (a == 0 && b == 1) return 10.0;
                                              if (a == 0 && b == 2) return 12.0;
                                              return 14.0;
                                            },
                                            16),
                                        0, 3);
  const Reference ref = MakeReference(levels, {0, 1, 2}, 0.015);
  EXPECT_GT(ref.se_slow, 0.05);                  // 1.2533 x the spread (0.14) / sqrt 3
  EXPECT_LT(ref.se, 1.2533 * 0.015 / 4 + 1e-9);  // one pair's own error: 1.2533 x 0.015 / sqrt 16
  EXPECT_GE(ref.se, 1.2533 * 0.015 / 4 / std::sqrt(3.0) - 1e-9);
}

}  // namespace
}  // namespace fabricscope::locate
