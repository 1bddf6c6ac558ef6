// The real measurer: ranks as threads of this process over Gloo on loopback, joining the
// pair groups of each round through the launch layer's RankBody hook.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fabricscope/backend.h"
#include "fabricscope/engine.h"
#include "fabricscope/error.h"
#include "fabricscope/launch.h"
#include "fabricscope/locate.h"
#include "locate/pair_communicator.h"

namespace fabricscope {
namespace {

Env NoEnvironment() { return Env(); }

RunOptions Threads(int n) {
  RunOptions o;
  o.nthreads = n;
  o.min_bytes = o.max_bytes = 64 * 1024;
  o.iters = 2;
  o.timeout_s = 60;
  return o;
}

// The hook itself: every rank joins a group of two (0-1, 2-3), sums its rank there, and the
// world sees every group's result.
TEST(RankBody, RanksJoinGroupsOfTheirOwnAndStillShareTheWorld) {
  auto backend = MakeBackend("gloo");
  std::mutex mutex;
  std::vector<double> sums(4, -1);
  std::atomic<int> world_size{0};
  const RunResult header = RunJob(Threads(4), *backend, nullptr, LaunchInfo{}, NoEnvironment(),
                                  [&](RankContext& context) {
                                    world_size = context.world->size();
                                    ConnectOptions pair = context.connect;
                                    pair.color = context.self.rank / 2;
                                    pair.rank = context.self.rank % 2;
                                    pair.size = 2;
                                    pair.prefix = "test/pair" + std::to_string(pair.color);
                                    auto comm = context.join(pair);
                                    double mine = context.self.rank;
                                    double sum = 0;
                                    CollectiveCall call;
                                    call.collective = Collective::kAllReduce;
                                    call.send = &mine;
                                    call.recv = &sum;
                                    call.count = 1;
                                    call.type = DataType::kDouble;
                                    comm->Run(call);
                                    std::vector<double> all(4);
                                    call.collective = Collective::kAllGather;
                                    call.send = &sum;
                                    call.recv = all.data();
                                    context.world->Run(call);
                                    if (context.self.rank == 0) {
                                      const std::lock_guard lock(mutex);
                                      sums = all;
                                    }
                                  });
  EXPECT_EQ(world_size.load(), 4);
  EXPECT_EQ(sums, (std::vector<double>{1, 1, 5, 5}));  // 0+1, 0+1, 2+3, 2+3
  EXPECT_EQ(header.ranks.size(), 4u);                  // the header is still gathered
}

TEST(RankBody, AnErrorInTheBodyEndsTheJobWithIt) {
  auto backend = MakeBackend("gloo");
  EXPECT_THROW(RunJob(Threads(2), *backend, nullptr, LaunchInfo{}, NoEnvironment(),
                      [](RankContext&) { throw UsageError("from the body"); }),
               UsageError);
}

// Every measurement of the named suspects' pairs, in order: what a wrong name rested on.
std::string SamplesOf(const LocateReport& r) {
  std::string out;
  for (const Suspect& suspect : r.suspects) {
    auto in = [&](int x) { return std::count(suspect.nodes.begin(), suspect.nodes.end(), x) > 0; };
    for (const PairSample& s : r.samples) {
      const bool node = suspect.nodes.size() == 1;
      if (node ? !(in(s.pair.a) || in(s.pair.b)) : !(in(s.pair.a) && in(s.pair.b))) continue;
      out += "\n  " + std::to_string(s.pair.a) + "-" + std::to_string(s.pair.b) + " sendrecv " +
             std::to_string(s.sendrecv_busbw) + " all_reduce " + std::to_string(s.all_reduce_busbw);
    }
  }
  return out;
}

TEST(RunLocateJob, SixThreadRanksAsNodesOverGloo) {
  auto backend = MakeBackend("gloo");
  LocateJobOptions job;
  job.grouping = NodeGrouping::kRank;
  job.measure = Threads(6);
  // Six ranks share this machine's cores with whatever else runs: healthy pairs, all of
  // them; three passes at most keep the test short (the answer may be inconclusive, never
  // a name).
  job.locate.max_sweeps = 3;
  const LocateReport r = RunLocateJob(job, *backend, LaunchInfo{}, NoEnvironment());
  ASSERT_EQ(r.layout.names.size(), 6u);
  EXPECT_EQ(r.layout.rails, 1);
  EXPECT_EQ(r.rounds.pairs, 5);
  EXPECT_EQ(r.rounds.per_node, 0);
  EXPECT_EQ(r.rounds.world, 1);
  EXPECT_GE(r.samples.size(), 15u);  // every pair, then some again
  EXPECT_LE(r.sweeps, 3);
  EXPECT_EQ(r.judgements.size(), 15u);
  EXPECT_GT(r.baselines[0].noise_df, 0.0);  // the noise from the pairs measured again
  for (const PairSample& s : r.samples) {
    EXPECT_GT(s.sendrecv_busbw, 0) << s.pair.a << "-" << s.pair.b;
    EXPECT_GT(s.all_reduce_busbw, 0);
    EXPECT_EQ(s.wrong, 0);
  }
  EXPECT_TRUE(r.suspects.empty()) << r.suspects.front().evidence << SamplesOf(r);
  ASSERT_TRUE(r.world_times.has_value());
  EXPECT_EQ(r.world_times->per_rank_us.size(), 6u);
  EXPECT_EQ(r.ranks.size(), 6u);
  EXPECT_EQ(r.backend, "gloo");
  EXPECT_EQ(r.bytes, 64u * 1024u);
}

// Two ranks of a Gloo communicator of four, as a communicator of two: the engine's
// sendrecv and all_reduce on it validate (wrong = 0), as on a communicator of two.
TEST(PairCommunicator, TheEngineRunsAndValidatesOnTwoRanksOfTheJob) {
  auto backend = MakeBackend("gloo");
  std::mutex mutex;
  std::vector<int64_t> wrong;
  std::vector<int> ranks;
  RunJob(Threads(4), *backend, nullptr, LaunchInfo{}, NoEnvironment(), [&](RankContext& context) {
    const int peer = context.self.rank ^ 3;  // 0-3 and 1-2
    PairCommunicator pair(*context.world, peer, /*host_memory=*/true);
    RunOptions options = Threads(4);
    options.collectives = {Collective::kSendRecv, Collective::kAllReduce};
    options.ops = {ReduceOp::kSum, ReduceOp::kAvg};
    RunResult rows;
    RunBenchmark(options, PlanSweep(options, 1), pair, rows, nullptr);
    const std::lock_guard lock(mutex);
    ranks.push_back(pair.rank());
    for (const ResultRow& row : rows.rows) {
      for (const auto* half : {&row.out_of_place, &row.in_place}) {
        if (half->has_value()) wrong.push_back((*half)->wrong.value_or(-1));
      }
    }
  });
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(ranks, (std::vector<int>{0, 0, 1, 1}));  // the lower rank of each pair is 0
  ASSERT_FALSE(wrong.empty());
  for (int64_t w : wrong) EXPECT_EQ(w, 0);
}

// The first error of a job is the one it reports: each rank fails only after the barrier, when
// both are connected, so neither can see the other's sockets close while it still connects.
TEST(PairCommunicator, CollectivesOtherThanAPairsAreRefused) {
  auto backend = MakeBackend("gloo");
  EXPECT_THROW(RunJob(Threads(2), *backend, nullptr, LaunchInfo{}, NoEnvironment(),
                      [&](RankContext& context) {
                        context.world->Barrier();
                        PairCommunicator pair(*context.world, 1 - context.self.rank, true);
                        float x = 1;
                        CollectiveCall call;
                        call.collective = Collective::kBroadcast;
                        call.send = &x;
                        call.recv = &x;
                        call.count = 1;
                        pair.Run(call);
                      }),
               UnsupportedError);
  // A pair with itself, or with a rank the job does not have: one rank, no peer to race.
  for (const int peer : {0, 1, -1}) {
    EXPECT_THROW(
        RunJob(Threads(1), *backend, nullptr, LaunchInfo{}, NoEnvironment(),
               [&](RankContext& context) { PairCommunicator pair(*context.world, peer, true); }),
        UsageError)
        << peer;
  }
}

// The real Gloo backend, with every Connect counted: how many communicators a run creates.
class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(std::unique_ptr<Backend> real) : real_(std::move(real)) {}
  std::string_view name() const override { return real_->name(); }
  std::string version() const override { return real_->version(); }
  const BackendCapabilities& capabilities() const override { return real_->capabilities(); }
  std::unique_ptr<Communicator> Connect(const ConnectOptions& options) override {
    ++connects;
    return real_->Connect(options);
  }
  std::atomic<int> connects{0};

 private:
  std::unique_ptr<Backend> real_;
};

// Gloo has point-to-point on the job's context (its pairs, connected once): the rounds
// create no communicator, and the verdicts are those of the per-pair communicators.
TEST(RunLocateJob, GlooPairsRunOnTheJobsCommunicatorWithTheSameVerdicts) {
  LocateReport reports[2];
  int connects[2] = {0, 0};
  for (const bool p2p : {true, false}) {
    CountingBackend backend(MakeBackend("gloo"));
    ASSERT_TRUE(backend.capabilities().point_to_point);
    LocateJobOptions job;
    job.grouping = NodeGrouping::kRank;
    job.measure = Threads(6);
    job.locate.max_sweeps = 3;
    job.point_to_point = p2p;
    reports[p2p ? 0 : 1] = RunLocateJob(job, backend, LaunchInfo{}, NoEnvironment());
    connects[p2p ? 0 : 1] = backend.connects.load();
  }
  EXPECT_EQ(connects[0], 6);  // the job's communicator, one Connect per rank: nothing else
  // Before: besides it, two Connects for every pair measured (six nodes: no one sits out).
  EXPECT_EQ(connects[1], 6 + 2 * static_cast<int>(reports[1].samples.size()));
  for (const LocateReport& r : reports) {
    EXPECT_EQ(r.rounds.pairs, 5);
    EXPECT_EQ(r.judgements.size(), 15u);
    for (const PairSample& s : r.samples) {
      EXPECT_GT(s.sendrecv_busbw, 0) << s.pair.a << "-" << s.pair.b;
      EXPECT_GT(s.all_reduce_busbw, 0);  // host memory: the pair's all_reduce too
      EXPECT_EQ(s.wrong, 0);             // validated, as on a communicator of two
    }
    // Healthy thread ranks: nobody named either way (inconclusive at worst).
    EXPECT_TRUE(r.suspects.empty()) << r.suspects.front().evidence << SamplesOf(r);
  }
}

TEST(RunLocateJob, OneHostIsNotEnoughNodes) {
  auto backend = MakeBackend("gloo");
  LocateJobOptions job;
  job.measure = Threads(4);  // four ranks, but one host: one node
  try {
    RunLocateJob(job, *backend, LaunchInfo{}, NoEnvironment());
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("at least 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--group-by"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fabricscope
