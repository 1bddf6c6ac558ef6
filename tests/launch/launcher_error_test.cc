// The launcher keeps a rank's error type (it adds the rank and host to the message), reads
// the job's variables from the Env it is given, and the CLI exits by the error's kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "common/binary_test.h"
#include "fabricscope/backend.h"
#include "fabricscope/error.h"
#include "fabricscope/launch.h"
#include "fabricscope/locate.h"

namespace fabricscope {
namespace {

RunOptions Threads(int n) {
  RunOptions o;
  o.nthreads = n;
  o.min_bytes = o.max_bytes = 1024;
  o.iters = 1;
  o.warmup_iters = 1;
  return o;
}

// Runs a one-rank job whose body throws `error`; returns what RunJob threw, caught as E.
template <typename E>
std::string ThrownBy(const E& error) {
  auto backend = MakeBackend("gloo");
  try {
    RunJob(Threads(1), *backend, nullptr, LaunchInfo{}, Env(), [&](RankContext&) { throw error; });
  } catch (const E& e) {
    return e.what();
  } catch (const Error& e) {
    ADD_FAILURE() << "sliced to Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "nothing thrown";
  return "";
}

TEST(LauncherErrors, ARanksErrorKeepsItsClassAndNamesTheRank) {
  for (const std::string& what :
       {ThrownBy(TimeoutError("peer silent")), ThrownBy(BackendError("connection reset")),
        ThrownBy(SystemError("disk full"))}) {
    EXPECT_TRUE(what.starts_with("rank 0 on ")) << what;
  }
  EXPECT_NE(ThrownBy(SystemError("disk full")).find(": disk full"), std::string::npos);
  // A usage error is the same on every rank: it comes out as it was thrown.
  EXPECT_EQ(ThrownBy(UsageError("bad flag")), "bad flag");
  EXPECT_EQ(ThrownBy(UnsupportedError("no graphs")), "no graphs");
}

// A real timeout: rank 1 joins a group with a short timeout and never calls, so rank 0's
// reduce_scatter times out in Gloo. The job's error is a TimeoutError naming rank 0.
TEST(LauncherErrors, ARealTimeoutOfARankComesOutAsTimeoutError) {
  auto backend = MakeBackend("gloo");
  std::atomic<bool> rank0_done{false};
  try {
    RunJob(Threads(2), *backend, nullptr, LaunchInfo{}, Env(), [&](RankContext& context) {
      ConnectOptions quick = context.connect;
      quick.prefix = "e18/quick";
      quick.timeout = std::chrono::milliseconds(500);
      auto comm = context.join(quick);
      if (context.self.rank == 1) {
        while (!rank0_done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return;
      }
      std::vector<float> data(512, 1.0f);
      CollectiveCall call;
      call.collective = Collective::kReduceScatter;
      call.send = data.data();
      call.recv = data.data() + 256;
      call.count = 256;
      try {
        comm->Run(call);
      } catch (...) {
        rank0_done = true;
        throw;
      }
      rank0_done = true;
    });
    FAIL() << "the job completed although rank 1 never called";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.starts_with("rank 0 on ")) << what;
    EXPECT_NE(what.find("gloo reduce_scatter (rank 0 of 2"), std::string::npos) << what;
  }
}

// locate refuses NCCL_TESTS_SPLIT on every rank: the rank's UsageError is what RunLocateJob
// throws, from a fake environment (no setenv).
TEST(LauncherErrors, LocateUnderNcclTestsSplitIsAUsageErrorFromTheRanks) {
  auto backend = MakeBackend("gloo");
  LocateJobOptions job;
  job.measure = Threads(2);
  job.measure.timeout_s = 60;
  try {
    RunLocateJob(job, *backend, LaunchInfo{}, Env(Env::Variables{{"NCCL_TESTS_SPLIT", "MOD 2"}}));
    FAIL() << "locate ran with NCCL_TESTS_SPLIT";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unset NCCL_TESTS_SPLIT"), std::string::npos) << e.what();
  }
}

// The job's variables come from the Env given: the split, NCCL_TESTS_MIN_BW and the
// recorded families, none of them from the process environment.
TEST(LauncherEnv, TheJobReadsItsVariablesFromTheEnvItIsGiven) {
  auto backend = MakeBackend("gloo");
  RunOptions o = Threads(4);
  o.collectives = {Collective::kAllReduce};
  const RunResult r = RunThreads(o, *backend, nullptr,
                                 Env(Env::Variables{{"NCCL_TESTS_SPLIT", "MOD 2"},
                                                    {"NCCL_TESTS_MIN_BW", "0.5"},
                                                    {"NCCL_ALGO", "Ring"},
                                                    {"GLOO_DEVICE_TRANSPORT", "TCP"},
                                                    {"HOME", "/nowhere"}}));
  EXPECT_DOUBLE_EQ(r.config.min_bw, 0.5);
  EXPECT_EQ(r.env,
            (std::vector<std::string>{"NCCL_ALGO=Ring", "NCCL_TESTS_MIN_BW=0.5",
                                      "NCCL_TESTS_SPLIT=MOD 2", "GLOO_DEVICE_TRANSPORT=TCP"}));
  ASSERT_FALSE(r.rows.empty());
  // Two communicators of two ranks: rank 0's rows are those of a 2-rank all_reduce, whose bus
  // bandwidth factor is 2 x (2-1)/2 = 1.
  for (const ResultRow& row : r.rows) {
    ASSERT_TRUE(row.out_of_place.has_value());
    EXPECT_DOUBLE_EQ(row.out_of_place->busbw, row.out_of_place->algbw);
  }
  const RunResult plain = RunThreads(o, *backend, nullptr);
  EXPECT_TRUE(plain.env.empty());
  EXPECT_EQ(plain.config.min_bw, 0);
}

TEST(LauncherEnv, ABadMinimumBandwidthIsAUsageError) {
  auto backend = MakeBackend("gloo");
  for (const char* bad : {"fast", "-1", "12GB"}) {
    try {
      RunThreads(Threads(1), *backend, nullptr, Env(Env::Variables{{"NCCL_TESTS_MIN_BW", bad}}));
      ADD_FAILURE() << "NCCL_TESTS_MIN_BW=" << bad << " was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("NCCL_TESTS_MIN_BW='" + std::string(bad) +
                                           "' is not a bandwidth"),
                std::string::npos)
          << e.what();
    }
  }
}

// The binary: a rank's usage error exits 2 with its message, a bad variable too.
class LauncherCliTest : public test::BinaryTest {};

TEST_F(LauncherCliTest, ARanksUsageErrorExits2) {
  const test::Outcome o =
      RunProgram(FABRICSCOPE_BINARY, "locate -t 2 --group-by process -b 64K -n 2 -T 60",
                 "NCCL_TESTS_SPLIT='MOD 2'");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("error: locate splits the job into groups itself: unset NCCL_TESTS_SPLIT"),
            std::string::npos)
      << o.err;
}

TEST_F(LauncherCliTest, ABadMinimumBandwidthExits2) {
  const test::Outcome o =
      RunProgram(FABRICSCOPE_BINARY, "run -t 1 -b 8 -e 8 -n 1", "NCCL_TESTS_MIN_BW=fast");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("NCCL_TESTS_MIN_BW='fast' is not a bandwidth"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace fabricscope
