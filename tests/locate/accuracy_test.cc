// The acceptance of locate's verdicts on simulated clusters: N = 2..16 nodes; noise 0.1,
// 0.3 and 0.5 with transients (5% of measurements lose up to half); 100 seeds each, with
// one slow node (a quarter of the bandwidth) and without a fault. Zero wrong names; the
// slow node named in at least 99% of runs at noise 0.3 or less from 3 nodes on; at 2 nodes,
// the verdict says what stays ambiguous. bench/locate_accuracy.cc prints the whole table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fabricscope/locate.h"
#include "fabricscope/statistics.h"
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

std::string Data(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/locate/data/" + name + ".jsonl";
}

// A recorded run's pair measurements as the classifier takes them: the hosts sorted by
// name (their indices), one sample per pair and round, and the last round's number.
struct RecordedRun {
  std::vector<std::string> names;
  std::vector<PairSample> samples;
  int last_round = -1;
};

RecordedRun ReadRecordedRun(const std::string& file) {
  const std::vector<locate::Record> records = locate::ReadFile(file);
  RecordedRun run;
  for (const locate::Record& r : records) {
    for (const std::string& n : {r.a, r.b}) {
      if (!n.empty() && std::find(run.names.begin(), run.names.end(), n) == run.names.end()) {
        run.names.push_back(n);
      }
    }
  }
  std::sort(run.names.begin(), run.names.end());
  auto index = [&](const std::string& n) {
    return static_cast<int>(std::find(run.names.begin(), run.names.end(), n) - run.names.begin());
  };
  for (const locate::Record& r : records) {
    if (r.b.empty()) continue;
    run.last_round = std::max(run.last_round, r.round);
    if (r.collective == "sendrecv") {
      PairSample s;
      s.pair = {std::min(index(r.a), index(r.b)), std::max(index(r.a), index(r.b))};
      s.sendrecv_busbw = r.busbw_gbs;
      s.round = r.round;
      run.samples.push_back(s);
    } else {
      run.samples.back().all_reduce_busbw = r.busbw_gbs;
    }
  }
  return run;
}

// The healthy runs recorded on the namespace test bed at locate's defaults (-b 4M -n 5;
// tests/locate/data/bed4m-*, docs/locate.md "Traces"): Gloo on 4 hosts quiet and beside a
// CPU hog, on 6 hosts, and MPI on 4 hosts (whose rounds are slow or fast together).
std::shared_ptr<const RecordedNoise> DefaultsNoise() {
  static const std::shared_ptr<const RecordedNoise> recorded =
      LoadRecordedNoise({Data("bed4m-gloo-h4-quiet-none"), Data("bed4m-gloo-h4-hog-none"),
                         Data("bed4m-gloo-h6-quiet-none"), Data("bed4m-mpi-h4-quiet-none")});
  return recorded;
}

// The healthy runs recorded at -b 1M -n 2 (tests/locate/data/bed-*): a 1 MiB message fits
// the tc token bucket (10 ms at 1 Gbit/s), so a pair's fastest iteration is 0.15 or 1.2
// GB/s at random: noise 0.4-0.65, bimodal. Nobody is cleared on it, and nobody may be
// named wrongly either.
std::shared_ptr<const RecordedNoise> TokenBucketNoise() {
  static const std::shared_ptr<const RecordedNoise> recorded = LoadRecordedNoise(
      {Data("bed-h4-quiet-none"), Data("bed-h4-hog-none"), Data("bed-h6-quiet-none")});
  return recorded;
}

struct ReplayCounts {
  int found = 0;    // the slow node named alone
  int cleared = 0;  // a healthy cluster cleared
};

// 100 seeded clusters of `nodes` on `noise`, each with a slow node and without: no wrong
// name ever (each one a failure naming the seed).
ReplayCounts Replay(int nodes, const std::shared_ptr<const RecordedNoise>& noise) {
  ReplayCounts counts;
  for (int s = 0; s < kSeeds; ++s) {
    const uint64_t seed = 2000003ULL * static_cast<uint64_t>(nodes) + static_cast<uint64_t>(s);
    for (const int slow : {s % nodes, -1}) {
      SimulatedClusterOptions sim;
      sim.nodes = nodes;
      sim.seed = seed;
      sim.recorded_noise = noise;
      const LocateReport r = SimulateWith(sim, slow);
      for (const Suspect& x : r.suspects) {
        EXPECT_TRUE(slow >= 0 && x.kind == SuspectKind::kNode && x.nodes == std::vector<int>{slow})
            << "seed " << seed << " slow " << slow << " named " << NameOf(x.kind) << ": "
            << x.evidence;
      }
      if (slow >= 0 && r.suspects.size() == 1 && r.suspects[0].nodes == std::vector<int>{slow}) {
        ++counts.found;
      }
      if (slow < 0 && r.status == LocateStatus::kClear) ++counts.cleared;
    }
  }
  return counts;
}

// Issue 29's acceptance on replayed bed noise, N = 4..16, 100 seeds each: zero wrong names,
// healthy clusters cleared in at least 95%, a single slow node found in at least 99%.
class ReplayedAccuracy : public ::testing::TestWithParam<int> {};

TEST_P(ReplayedAccuracy, NoWrongNamesHealthyClearedSlowNodeFound) {
  const ReplayCounts c = Replay(GetParam(), DefaultsNoise());
  EXPECT_GE(c.cleared, 95) << "healthy clusters cleared, of " << kSeeds;
  EXPECT_GE(c.found, 99) << "slow nodes found, of " << kSeeds;
}

INSTANTIATE_TEST_SUITE_P(Replayed, ReplayedAccuracy, ::testing::Range(4, 17));

// The token-bucket noise: never a wrong name (how many are cleared or found is in
// docs/locate.md: on healthy clusters none, at that noise and 16 sweeps).
class ReplayedTokenBucket : public ::testing::TestWithParam<int> {};

TEST_P(ReplayedTokenBucket, NoWrongNames) { Replay(GetParam(), TokenBucketNoise()); }

INSTANTIATE_TEST_SUITE_P(Replayed, ReplayedTokenBucket, ::testing::Range(4, 17));

// Each recorded bed run judged whole, as locate judged it at its end: real measurements,
// not the simulator's. Healthy runs name nobody; host 4 at 300 Mbit/s is node 4 or
// undecided, never anyone else; the 2-4 link at 300 Mbit/s is that link or undecided. At
// locate's defaults every one of them is decided: cleared, the node, the link.
TEST(RecordedBed, EachRecordedRunIsJudgedAsTheBedWas) {
  struct Case {
    std::string file;
    std::string expected;  // "" nobody, "node 3", "link 1-3" (indices of the sorted hosts)
    bool decided;          // everything decided, the expected named
  };
  const std::vector<Case> cases = {
      {"bed-h4-quiet-none", "", false},
      {"bed-h4-hog-none", "", false},
      {"bed-h6-quiet-none", "", false},
      {"bed-h4-quiet-node", "node 3", false},
      {"bed-h4-hog-node", "node 3", false},
      {"bed-h6-quiet-node", "node 3", false},
      {"bed-h4-quiet-link", "link 1-3", false},
      {"bed-h4-hog-link", "link 1-3", false},
      {"bed-h6-quiet-link", "link 1-3", false},
      {"bed4m-gloo-h4-quiet-none", "", true},
      {"bed4m-gloo-h4-hog-none", "", true},
      {"bed4m-gloo-h6-quiet-none", "", true},
      {"bed4m-mpi-h4-quiet-none", "", true},
      {"bed4m-gloo-h4-quiet-node", "node 3", true},
      {"bed4m-gloo-h4-hog-node", "node 3", true},
      {"bed4m-gloo-h6-quiet-node", "node 3", true},
      {"bed4m-mpi-h4-quiet-node", "node 3", true},
      {"bed4m-gloo-h4-quiet-link", "link 1-3", true},
      {"bed4m-gloo-h6-quiet-link", "link 1-3", true},
      {"bed4m-mpi-h4-quiet-link", "link 1-3", true},
  };
  for (const Case& c : cases) {
    const RecordedRun run = ReadRecordedRun(Data(c.file));
    const int n = static_cast<int>(run.names.size());
    LocateOptions options;
    const locate::RailVerdict v =
        locate::JudgeRail(run.samples, 0, n, options, n * (n - 1) / 2.0 * 16);
    std::string named;
    for (int x : v.slow_nodes) named += (named.empty() ? "" : ", ") + ("node " + std::to_string(x));
    for (size_t i : v.slow_links) {
      const NodePair& p = v.levels.pairs[i].pair;
      named +=
          (named.empty() ? "" : ", ") + ("link " + std::to_string(p.a) + "-" + std::to_string(p.b));
    }
    EXPECT_TRUE(named.empty() || named == c.expected) << c.file << " named " << named;
    if (c.decided) {
      EXPECT_EQ(named, c.expected) << c.file;
      EXPECT_TRUE(v.undecided_nodes.empty()) << c.file << ": " << v.undecided_nodes.size();
    }
  }
}

// The replay is the bed's noise: the noise the classifier measures on a replayed healthy
// cluster of 4 is within a factor of two of what it measures on the recorded run itself.
TEST(Replay, ReplayedNoiseIsTheRecordedRunsNoise) {
  const std::string file =
      std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/locate/data/bed-h4-quiet-none.jsonl";
  const RecordedRun run = ReadRecordedRun(file);
  ASSERT_EQ(run.names.size(), 4u);
  const std::shared_ptr<const RecordedNoise> noise = LoadRecordedNoise({file});
  EXPECT_EQ(noise->rounds.size(), static_cast<size_t>(run.last_round + 1))
      << "one per recorded round";
  EXPECT_EQ(noise->pair_offsets.size(), 6u) << "one per recorded pair";
  LocateOptions options;
  options.stragglers = false;
  const double bed = locate::JudgeRail(run.samples, 0, 4, options, 6.0 * 16).noise.sigma;
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

// A recorded pair's offset is kept only as far as it persists (the medians of its odd and
// its even samples agree on it) and never beyond x0.82..1.22: on bimodal noise (0.15 or
// 1.2 GB/s at random, no pair different) the medians alone make healthy pairs 0.6x or
// 1.6x for good, which a replayed cluster would keep for a whole run.
TEST(RecordedNoise, OnlyTheOffsetsThatPersistAreKept) {
  auto records = [](double persistent) {
    std::vector<locate::Record> out;
    uint64_t state = 12345;
    for (int round = 0; round < 16; ++round) {
      for (int p = 0; p < 8; ++p) {
        for (const char* collective : {"sendrecv", "all_reduce"}) {
          state = state * 6364136223846793005ULL + 1442695040888963407ULL;
          const bool burst = (state >> 33) % 3 == 0;
          locate::Record r;
          r.round = round;
          r.phase = "again";
          r.a = "h" + std::to_string(2 * p);
          r.b = "h" + std::to_string(2 * p + 1);
          r.collective = collective;
          r.busbw_gbs = (burst ? 1.2 : 0.15) * (p == 0 ? persistent : 1.0);
          out.push_back(r);
        }
      }
    }
    return out;
  };
  // The medians alone: each pair's median log less the file's, per collective.
  auto mean_square = [](const std::vector<RecordedNoise::Deviation>& v) {
    double sum = 0;
    for (const auto& d : v) sum += d.sendrecv * d.sendrecv + d.all_reduce * d.all_reduce;
    return sum / static_cast<double>(2 * v.size());
  };
  std::vector<RecordedNoise::Deviation> medians;
  {
    std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> of;
    std::vector<double> all_sr;
    std::vector<double> all_ar;
    for (const locate::Record& r : records(1.0)) {
      auto& [sr, ar] = of[r.a];
      (r.collective == "sendrecv" ? sr : ar).push_back(std::log(r.busbw_gbs));
      (r.collective == "sendrecv" ? all_sr : all_ar).push_back(std::log(r.busbw_gbs));
    }
    for (auto& [name, logs] : of) {
      medians.push_back(
          {Median(logs.first) - Median(all_sr), Median(logs.second) - Median(all_ar)});
    }
  }
  RecordedNoise noise;
  noise.Add(records(1.0), "noise only");
  ASSERT_EQ(noise.pair_offsets.size(), 8u);
  for (const auto& o : noise.pair_offsets) {
    EXPECT_LE(std::abs(o.sendrecv), 0.2 + 1e-12);  // x0.82..1.22 at most
    EXPECT_LE(std::abs(o.all_reduce), 0.2 + 1e-12);
  }
  EXPECT_GT(mean_square(medians), 0.1) << "the medians alone: a healthy pair 0.6x for good";
  EXPECT_LT(mean_square(noise.pair_offsets), mean_square(medians) / 3);
}

}  // namespace
}  // namespace fabricscope
