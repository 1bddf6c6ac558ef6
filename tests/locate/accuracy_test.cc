// The acceptance of locate's verdicts on simulated clusters: N = 2..16 nodes; noise 0.1,
// 0.3 and 0.5 with transients (5% of measurements lose up to half); 100 seeds each, with
// one slow node (a quarter of the bandwidth) and without a fault. Zero wrong names; the
// slow node named in at least 99% of runs at noise 0.3 or less from 3 nodes on; at 2 nodes,
// the verdict says what stays ambiguous. bench/locate_accuracy.cc prints the whole table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabricscope/locate.h"
#include "locate/classifier.h"
#include "locate/samples.h"

namespace fabricscope {
namespace {

constexpr int kSeeds = 100;
constexpr double kTransients = 0.05;

// locate on the simulated cluster SIM, with node SLOW (if any) at a quarter of its speed.
LocateReport SimulateWith(SimulatedClusterOptions sim, int slow, double expect = 0) {
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

LocateReport Simulate(int nodes, double noise, uint64_t seed, int slow, double expect = 0) {
  SimulatedClusterOptions sim;
  sim.nodes = nodes;
  sim.noise = noise;
  sim.transient_rate = kTransients;
  sim.seed = seed;
  return SimulateWith(sim, slow, expect);
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

// The same clusters on the noise recorded on the namespace test bed (tests/locate/data,
// docs/locate.md "Traces"): healthy runs of 4 and 6 hosts, quiet and beside a CPU hog,
// replayed a whole round at a time. Whatever that noise, nobody healthy should be named.
// DISABLED: it does not hold yet. With the recorded noise (token-bucket bursts: a healthy
// pair's fastest iteration is either ~0.15 or ~1.2 GB/s, a pair's mode persisting), the
// current classifier named `link sim08-sim11` instead of `node sim08` (N 12, seed
// 24000092, slow node 8). Issue 29 item 4 (round effects in the classifier) is to make it
// pass; run it with --gtest_also_run_disabled_tests.
class ReplayedAccuracy : public ::testing::TestWithParam<int> {};

TEST_P(ReplayedAccuracy, DISABLED_NoWrongNames) {
  const int nodes = GetParam();
  const std::string data = std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/locate/data/";
  static const std::shared_ptr<const RecordedNoise> recorded =
      LoadRecordedNoise({data + "bed-h4-quiet-none.jsonl", data + "bed-h4-hog-none.jsonl",
                         data + "bed-h6-quiet-none.jsonl"});
  ASSERT_GE(recorded->rounds.size(), 40u);
  for (int s = 0; s < kSeeds; ++s) {
    const uint64_t seed = 2000003ULL * static_cast<uint64_t>(nodes) + static_cast<uint64_t>(s);
    for (const int slow : {s % nodes, -1}) {
      SimulatedClusterOptions sim;
      sim.nodes = nodes;
      sim.seed = seed;
      sim.recorded_noise = recorded;
      const LocateReport r = SimulateWith(sim, slow);
      for (const Suspect& x : r.suspects) {
        EXPECT_TRUE(slow >= 0 && x.kind == SuspectKind::kNode && x.nodes == std::vector<int>{slow})
            << "seed " << seed << " slow " << slow << " named " << NameOf(x.kind) << ": "
            << x.evidence;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Replayed, ReplayedAccuracy, ::testing::Range(4, 17));

// The replay is the bed's noise: the noise the classifier measures on a replayed healthy
// cluster of 4 is within a factor of two of what it measures on the recorded run itself.
TEST(Replay, ReplayedNoiseIsTheRecordedRunsNoise) {
  const std::string file =
      std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/locate/data/bed-h4-quiet-none.jsonl";
  const std::vector<locate::Record> records = locate::ReadFile(file);
  std::vector<PairSample> recorded;
  std::vector<std::string> names;
  auto index = [&](const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    names.push_back(name);
    return static_cast<int>(names.size() - 1);
  };
  int rounds = -1;
  for (const locate::Record& r : records) {
    if (r.b.empty()) continue;
    rounds = std::max(rounds, r.round);
    if (r.collective == "sendrecv") {
      PairSample s;
      s.pair = {std::min(index(r.a), index(r.b)), std::max(index(r.a), index(r.b))};
      s.sendrecv_busbw = r.busbw_gbs;
      recorded.push_back(s);
    } else {
      recorded.back().all_reduce_busbw = r.busbw_gbs;
    }
  }
  ASSERT_EQ(names.size(), 4u);
  const std::shared_ptr<const RecordedNoise> noise = LoadRecordedNoise({file});
  EXPECT_EQ(noise->rounds.size(), static_cast<size_t>(rounds + 1)) << "one per recorded round";
  EXPECT_EQ(noise->pair_offsets.size(), 6u) << "one per recorded pair";
  LocateOptions options;
  options.stragglers = false;
  const double bed = locate::JudgeRail(recorded, 0, 4, options, 6.0 * 16).noise.sigma;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SimulatedClusterOptions sim;
    sim.nodes = 4;
    sim.seed = seed;
    sim.recorded_noise = noise;
    SimulatedCluster cluster(sim);
    const LocateReport r = Locate(options, cluster.Layout(), cluster);
    ASSERT_EQ(r.baselines.size(), 1u);
    EXPECT_GT(r.baselines[0].sigma, bed / 2) << "seed " << seed;
    EXPECT_LT(r.baselines[0].sigma, bed * 2) << "seed " << seed;
    EXPECT_TRUE(r.suspects.empty()) << "seed " << seed << ": " << r.suspects[0].evidence;
  }
  // The same cluster twice: the same measurements (seeded).
  SimulatedClusterOptions sim;
  sim.nodes = 6;
  sim.recorded_noise = noise;
  SimulatedCluster one(sim);
  SimulatedCluster two(sim);
  const Round round = RoundRobinSchedule(6)[0];
  const auto a = one.MeasureRound(round);
  const auto b = two.MeasureRound(round);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].sendrecv_busbw, b[i].sendrecv_busbw);
}

}  // namespace
}  // namespace fabricscope
