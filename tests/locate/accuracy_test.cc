// The acceptance of locate's verdicts on simulated clusters: N = 2..16 nodes; noise 0.1,
// 0.3 and 0.5 with transients (5% of measurements lose up to half); 100 seeds each, with
// one slow node (a quarter of the bandwidth) and without a fault. Zero wrong names; the
// slow node named in at least 99% of runs at noise 0.3 or less from 3 nodes on; at 2 nodes,
// the verdict says what stays ambiguous. bench/locate_accuracy.cc prints the whole table.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope {
namespace {

constexpr int kSeeds = 100;
constexpr double kTransients = 0.05;

LocateReport Simulate(int nodes, double noise, uint64_t seed, int slow, double expect = 0) {
  SimulatedClusterOptions sim;
  sim.nodes = nodes;
  sim.noise = noise;
  sim.transient_rate = kTransients;
  sim.seed = seed;
  if (slow >= 0) {
    SimulatedFault f;
    f.kind = SuspectKind::kNode;
    f.node = slow;
    f.factor = 0.25;
    sim.faults.push_back(f);
  }
  SimulatedCluster cluster(sim);
  LocateOptions options;
  options.stragglers = false;
  options.expect_gbs = expect;
  return Locate(options, cluster.Layout(), cluster);
}

struct Param {
  int nodes;
  double noise;
};

class Accuracy : public ::testing::TestWithParam<Param> {};

TEST_P(Accuracy, NoWrongNamesAndTheSlowNodeNamed) {
  const auto [nodes, noise] = GetParam();
  int named = 0;
  for (int s = 0; s < kSeeds; ++s) {
    const uint64_t seed = 1000003ULL * static_cast<uint64_t>(nodes) + static_cast<uint64_t>(s);
    const int slow = s % nodes;
    const LocateReport fault = Simulate(nodes, noise, seed, slow);
    for (const Suspect& x : fault.suspects) {
      EXPECT_TRUE(x.kind == SuspectKind::kNode && x.nodes == std::vector<int>{slow})
          << "seed " << seed << " named " << NameOf(x.kind) << ": " << x.evidence;
    }
    if (fault.suspects.size() == 1 && fault.suspects[0].nodes == std::vector<int>{slow}) ++named;
    const LocateReport none = Simulate(nodes, noise, seed + 7, -1);
    for (const Suspect& x : none.suspects) {
      ADD_FAILURE() << "no fault, seed " << seed + 7 << " named " << x.evidence;
    }
    if (nodes == 2) {
      // Against the platform's expectation the pair is slow, and which end is not known.
      const LocateReport two = Simulate(nodes, noise, seed, slow, 25.0);
      EXPECT_TRUE(two.status == LocateStatus::kAmbiguous ||
                  two.status == LocateStatus::kInconclusive);
      EXPECT_NE(two.unknown.find("cannot tell whether sim0, sim1 or the path"), std::string::npos)
          << two.unknown;
    }
  }
  if (nodes >= 3 && noise <= 0.3) {
    EXPECT_GE(named, 99) << "of " << kSeeds;
  }
}

std::vector<Param> Params() {
  std::vector<Param> out;
  for (int n = 2; n <= 16; ++n) {
    for (double noise : {0.1, 0.3, 0.5}) out.push_back({n, noise});
  }
  return out;
}

std::string Name(const ::testing::TestParamInfo<Param>& p) {
  return "n" + std::to_string(p.param.nodes) + "_noise0" +
         std::to_string(static_cast<int>(p.param.noise * 10 + 0.5));
}

INSTANTIATE_TEST_SUITE_P(Simulated, Accuracy, ::testing::ValuesIn(Params()), Name);

}  // namespace
}  // namespace fabricscope
