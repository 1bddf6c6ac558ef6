// The fabric simulator against the effects operators know (seed 003's ECMP story,
// rail-optimized designs, oversubscription) and against exact results it must reproduce.
#include "fabricscope/fabric_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "fabricscope/error.h"

namespace fabricscope::sim {
namespace {

FabricOptions TwoTier(int nodes, FabricDesign design, int leaf_ports = 32) {
  FabricOptions o;
  o.nodes = nodes;
  o.gpus_per_node = 8;
  o.nics_per_node = 8;
  o.nic_gbs = 50;
  o.design = design;
  o.leaf_ports = leaf_ports;
  return o;
}

double MaxConnections(const SimResult& r) {
  double most = 0;
  for (const auto& l : r.links) most = std::max(most, l.connections);
  return most;
}

const TierLoad& Tier(const SimResult& r, LinkTier tier) {
  for (const auto& t : r.tiers) {
    if (t.tier == tier) return t;
  }
  throw std::runtime_error("no tier");
}

// E[max load] of `balls` labelled balls thrown uniformly into `bins` bins, exactly:
// P(max <= k) = balls! [x^balls] (sum_{j<=k} x^j / j!)^bins / bins^balls.
double ExpectedMaxLoad(int balls, int bins) {
  double expected = 0;
  for (int k = 0; k < balls; ++k) {
    // Polynomial power by repeated multiplication, coefficients up to x^balls.
    std::vector<double> term(static_cast<size_t>(balls) + 1, 0.0);
    double factorial = 1;
    for (int j = 0; j <= std::min(k, balls); ++j) {
      if (j > 0) factorial *= j;
      term[static_cast<size_t>(j)] = 1.0 / factorial;
    }
    std::vector<double> power(static_cast<size_t>(balls) + 1, 0.0);
    power[0] = 1;
    for (int b = 0; b < bins; ++b) {
      std::vector<double> next(power.size(), 0.0);
      for (size_t i = 0; i < power.size(); ++i) {
        for (size_t j = 0; i + j < power.size(); ++j) next[i + j] += power[i] * term[j];
      }
      power = next;
    }
    double balls_factorial = 1;
    for (int i = 2; i <= balls; ++i) balls_factorial *= i;
    const double at_most_k =
        balls_factorial * power[static_cast<size_t>(balls)] / std::pow(bins, balls);
    expected += 1 - at_most_k;  // E[max] = sum_{k>=0} P(max > k)
  }
  return expected;
}

TEST(FabricSim, BuildsTheExpectedSwitchesAndLinks) {
  const Fabric classic(TwoTier(16, FabricDesign::kClassic));
  // 128 NICs on 32-port leaves: 4 leaves, 32 spines, each leaf one link to each spine.
  EXPECT_EQ(classic.leaves_per_plane(), 4);
  EXPECT_EQ(classic.spines_per_plane(), 32);
  EXPECT_EQ(classic.switch_count(), 36u);
  EXPECT_EQ(classic.link_count(), 2u * (128 + 4 * 32));
  const Fabric rail(TwoTier(16, FabricDesign::kRailOptimized));
  EXPECT_EQ(rail.leaves_per_plane(), 8);  // one scalable unit, a leaf per rail
  EXPECT_EQ(rail.LeafOf(5, 3), 3);
  const Fabric rail_only(TwoTier(64, FabricDesign::kRailOnly));
  EXPECT_EQ(rail_only.leaves_per_plane(), 2);  // per rail: 64 nodes on 32-port leaves
  EXPECT_EQ(rail_only.switch_count(), 8u * (2 + 32));
  EXPECT_TRUE(rail_only.FindLink("rail5.leaf1->rail5.spine0").has_value());
  FabricOptions three = TwoTier(2048, FabricDesign::kClassic);
  three.tiers = 3;
  three.nvlink_gbs = 370;
  const Fabric big(three);
  // 16384 NICs: 512 leaves in 16 pods of 32, 32 aggregation switches per pod, 1024 cores.
  EXPECT_EQ(big.leaves_per_plane(), 512);
  EXPECT_EQ(big.pods_per_plane(), 16);
  EXPECT_EQ(big.cores_per_plane(), 1024);
  EXPECT_EQ(big.link_count(), 2u * (16384 + 16384 + 16384 + 16384));
}

TEST(FabricSim, UniformHashingOfEightFlowsOnEightPathsMatchesBallsInBins) {
  // Two nodes on two leaves, eight spines: node 0's eight NICs each send one connection to
  // node 1, and the leaf hashes each onto a spine.
  FabricOptions o = TwoTier(2, FabricDesign::kClassic, 8);
  const Fabric fabric(o);
  ASSERT_EQ(fabric.spines_per_plane(), 8);
  SimOptions so;
  so.collective = Collective::kSendRecv;
  so.bytes = 1 << 20;
  constexpr int kSeeds = 4000;
  double sum = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    so.seed = static_cast<uint64_t>(seed);
    const SimResult r = Simulate(fabric, so);
    double most = 0;
    for (const auto& l : r.links) {
      if (l.tier == LinkTier::kLeafUp && l.name.rfind("leaf0->", 0) == 0) {
        most = std::max(most, l.connections);
      }
    }
    sum += most;
  }
  const double expected = ExpectedMaxLoad(8, 8);
  EXPECT_NEAR(expected, 2.6, 0.1);            // the figure operators quote
  EXPECT_NEAR(sum / kSeeds, expected, 0.05);  // 4000 seeds: standard error ~0.01
}

TEST(FabricSim, AnEcmpCollisionSlowsTheWholeRingToTheMostLoadedLinksShare) {
  // Seed 003: a hash collision put two flows of one communicator on one spine path. A ring
  // moves at its slowest hop, so the whole collective runs at that link's share.
  FabricOptions o = TwoTier(2, FabricDesign::kClassic, 8);
  const Fabric fabric(o);
  SimOptions so;
  so.channels = 8;  // one per NIC: the NICs themselves are never shared
  so.routing = Routing::kBalanced;
  const double clean = Simulate(fabric, so).busbw;
  EXPECT_NEAR(clean, 8 * 50.0, 1e-6);  // no collision: every NIC at line rate
  so.routing = Routing::kEcmp;
  int collided = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    so.seed = seed;
    const SimResult r = Simulate(fabric, so);
    const double most = MaxConnections(r);
    EXPECT_NEAR(r.busbw, clean / most, 1e-6 * clean) << "seed " << seed;
    if (most >= 2) ++collided;
  }
  EXPECT_GT(collided, 30);  // with 8 on 8, a collision is the rule (P = 1 - 8!/8^8)
}

TEST(FabricSim, RailOptimizedPlacementAvoidsSpineHashing) {
  const double nic_total = 8 * 50.0;
  SimOptions so;
  so.bytes = size_t{1} << 30;
  FabricOptions rail_o = TwoTier(16, FabricDesign::kRailOptimized);
  FabricOptions tor_o = TwoTier(16, FabricDesign::kClassic);
  rail_o.nvlink_gbs = tor_o.nvlink_gbs = 370;
  const Fabric rail(rail_o);
  const Fabric tor(tor_o);
  double tor_sum = 0;
  double tor_worst = nic_total;
  constexpr int kSeeds = 20;
  for (int seed = 0; seed < kSeeds; ++seed) {
    so.seed = static_cast<uint64_t>(seed);
    const SimResult r = Simulate(rail, so);
    EXPECT_EQ(Tier(r, LinkTier::kLeafUp).used, 0u) << "a ring hop left its rail leaf";
    EXPECT_NEAR(r.busbw, nic_total, 1e-6 * nic_total);
    const SimResult t = Simulate(tor, so);
    EXPECT_GT(Tier(t, LinkTier::kLeafUp).used, 0u);
    tor_sum += t.busbw;
    tor_worst = std::min(tor_worst, t.busbw);
  }
  EXPECT_LT(tor_sum / kSeeds, 0.8 * nic_total);
  EXPECT_LE(tor_worst, nic_total / 2 + 1e-6);
}

TEST(FabricSim, TwoToOneOversubscriptionHalvesCrossPodBandwidth) {
  // 8 nodes of 8 NICs, a leaf per node, 4 leaves per pod: 2 pods. Each node sends to the
  // node 4 away, in the other pod; balanced routing spreads the flows evenly.
  auto run = [](double pod_oversubscription, int shift, std::vector<std::vector<int>> groups = {}) {
    FabricOptions o = TwoTier(8, FabricDesign::kClassic, 8);
    o.tiers = 3;
    o.leaves_per_pod = 4;
    o.pod_oversubscription = pod_oversubscription;
    const Fabric fabric(o);
    EXPECT_EQ(fabric.pods_per_plane(), 2);
    SimOptions so;
    so.collective = Collective::kSendRecv;
    so.routing = Routing::kBalanced;
    so.peer_shift = shift;
    so.groups = std::move(groups);
    return Simulate(fabric, so).busbw;
  };
  const double full = run(1, 4);
  EXPECT_NEAR(full, 50.0, 1e-6);  // sendrecv busbw = one GPU's NIC
  EXPECT_NEAR(run(2, 4) / full, 0.5, 0.01);
  EXPECT_NEAR(run(4, 4) / full, 0.25, 0.01);
  // Within a pod the core tier is not crossed, so its oversubscription costs nothing.
  const std::vector<std::vector<int>> pods = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  EXPECT_NEAR(run(2, 1, pods) / run(1, 1, pods), 1.0, 0.01);
}

TEST(FabricSim, FailedLinksAreRoutedAroundAndUnavoidableOnesStallWithTheirName) {
  FabricOptions o = TwoTier(16, FabricDesign::kClassic);
  Fabric fabric(o);
  fabric.DegradeLink("leaf0-spine3", 0.0);
  SimOptions so;
  SimResult r = Simulate(fabric, so);
  EXPECT_FALSE(r.stalled);
  for (const auto& l : r.links) {
    EXPECT_NE(l.name, "leaf0->spine3");
    EXPECT_NE(l.name, "spine3->leaf0");
  }
  fabric.DegradeLink("n2.nic5->leaf0", 0.0);  // a NIC has one way out
  r = Simulate(fabric, so);
  EXPECT_TRUE(r.stalled);
  EXPECT_NE(r.stall_reason.find("n2.nic5->leaf0"), std::string::npos) << r.stall_reason;
}

TEST(FabricSim, ADegradedLinkOrSlowNodeSlowsTheRingToItsShare) {
  FabricOptions o = TwoTier(4, FabricDesign::kRailOptimized);
  SimOptions so;
  const double clean = Simulate(Fabric(o), so).busbw;
  Fabric slow(o);
  slow.SlowNode(2, 0.5);
  EXPECT_NEAR(Simulate(slow, so).busbw, clean / 2, 1e-6 * clean);
  Fabric degraded(o);
  degraded.DegradeLink("n1.nic4->leaf4", 0.25);  // one channel pair's hop
  const SimResult r = Simulate(degraded, so);
  EXPECT_NEAR(r.busbw, clean / 4, 1e-6 * clean);  // the rings through it set the pace
  EXPECT_GT(r.events, 1);                         // the others finished first
}

TEST(FabricSim, InNetworkReductionNearlyDoublesAllReduceBusbw) {
  FabricOptions o = TwoTier(16, FabricDesign::kRailOptimized);
  SimOptions so;
  const double ring = Simulate(Fabric(o), so).busbw;
  so.in_network_reduction = true;
  const SimResult sharp = Simulate(Fabric(o), so);
  // Each node sends and receives the data once instead of 2(n-1)/n times.
  const double n = 16 * 8;
  EXPECT_NEAR(sharp.busbw / ring, 2 * (n - 1) / n, 0.01);
}

TEST(FabricSim, ConcurrentGroupsShareTheFabricAndOnlyTheSlowPairSlows) {
  // locate's pairwise rounds: disjoint pairs measured at once.
  FabricOptions o = TwoTier(8, FabricDesign::kRailOptimized);
  Fabric fabric(o);
  fabric.SlowNode(5, 0.5);
  SimOptions so;
  so.groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const SimResult r = Simulate(fabric, so);
  ASSERT_EQ(r.groups.size(), 4u);
  EXPECT_NEAR(r.groups[2].busbw, r.groups[0].busbw / 2, 1e-6 * r.groups[0].busbw);
  EXPECT_DOUBLE_EQ(r.groups[1].busbw, r.groups[0].busbw);
  EXPECT_DOUBLE_EQ(r.groups[3].busbw, r.groups[0].busbw);
  EXPECT_DOUBLE_EQ(r.busbw, r.groups[2].busbw);  // the slowest group is the result
}

TEST(FabricSim, SingleNodeRingRunsAtTheNvlinkRate) {
  FabricOptions o = TwoTier(1, FabricDesign::kRailOptimized);
  o.nvlink_gbs = 370;
  SimOptions so;
  so.groups = {{0}};
  const SimResult r = Simulate(Fabric(o), so);
  EXPECT_NEAR(r.busbw, 370, 1e-6 * 370);
  EXPECT_EQ(Tier(r, LinkTier::kNicUp).used, 0u);
}

TEST(FabricSim, TheSixteenThousandGpuRingIsRoutedWhole) {
  FabricOptions o = TwoTier(2048, FabricDesign::kClassic);
  o.tiers = 3;
  o.nvlink_gbs = 370;
  const SimResult r = Simulate(Fabric(o), SimOptions{});
  EXPECT_FALSE(r.stalled);
  EXPECT_EQ(r.flows, 16u);
  EXPECT_EQ(r.connections, 16u * 2048);
  EXPECT_GT(r.busbw, 0);
  EXPECT_LE(r.busbw, 8 * 50.0);
  EXPECT_GT(Tier(r, LinkTier::kAggUp).used, 0u);  // some hops cross pods
}

TEST(FabricSim, BadRequestsAreRefusedWithTheReason) {
  Fabric fabric(TwoTier(4, FabricDesign::kClassic));
  SimOptions so;
  so.groups = {{0, 9}};
  EXPECT_THROW(Simulate(fabric, so), UsageError);
  so.groups = {{0, 1}, {1, 2}};
  EXPECT_THROW(Simulate(fabric, so), UsageError);
  so.groups.clear();
  so.collective = Collective::kAlltoAll;
  EXPECT_THROW(Simulate(fabric, so), UsageError);
  so.collective = Collective::kAllGather;
  so.in_network_reduction = true;
  EXPECT_THROW(Simulate(fabric, so), UsageError);
  so.in_network_reduction = false;
  so.qps_per_connection = 0;
  EXPECT_THROW(Simulate(fabric, so), UsageError);
  try {
    fabric.DegradeLink("leaf0-spine99", 0.5);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("leaf0->spine99"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fabric.DegradeLink("leaf0", 0.5), UsageError);
  EXPECT_THROW(fabric.DegradeLink("leaf0-spine1", 1.5), UsageError);
  EXPECT_THROW(fabric.SlowNode(4, 0.5), UsageError);
  FabricOptions bad = TwoTier(4, FabricDesign::kClassic);
  bad.tiers = 4;
  EXPECT_THROW(Fabric{bad}, UsageError);
  bad.tiers = 2;
  bad.leaf_oversubscription = 0.5;
  EXPECT_THROW(Fabric{bad}, UsageError);
  EXPECT_THROW(ParseDesign("dragonfly"), UsageError);
  EXPECT_THROW(ParseRouting("random"), UsageError);
}

}  // namespace
}  // namespace fabricscope::sim
