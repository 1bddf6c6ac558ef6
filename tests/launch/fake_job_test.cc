// The launcher and the -T watchdog on the FakeCommunicator test double: the test scripts
// which rank fails, hangs or is slow, and the watchdog reads the double's virtual clock, so
// each outcome (which rank the error names, which error, whether the watchdog fires and what
// it records) is pinned exactly. The real-process tests in multiprocess_test.cc keep the
// integration with real processes, sockets and mpirun.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/fake_communicator.h"
#include "common/result_checks.h"
#include "fabricscope/engine.h"
#include "fabricscope/error.h"
#include "fabricscope/launch.h"
#include "launch/watchdog.h"

namespace fabricscope {
namespace {

using test::FakeFault;
using test::FakeFaultKind;
using test::FakeWorld;

using test::kOutOfPlaceBarrier;
using test::kOutOfPlaceValidation;
using test::kThirdTimedIteration;

// all_reduce of 1024 bytes on `ranks` thread ranks, one size: each rank's steps as
// test::OneSize lists them (4-6 the timed out-of-place iterations, 8 its validation).
RunOptions OneSize(int ranks) { return test::OneSize(Collective::kAllReduce, ranks); }

std::string Host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// Keeps the record the launcher ends the report with.
class RecordingReporter : public Reporter {
 public:
  void End(const RunResult& result) override { ended = result; }
  std::optional<RunResult> ended;
};

struct JobOutcome {
  std::optional<ErrorCode> code;
  std::string message;
  RunResult ended;
};

JobOutcome RunFakeJob(int ranks, std::vector<FakeFault> script) {
  FakeWorld world(ranks, std::move(script));
  test::FakeBackend backend(world);
  RecordingReporter sink;
  JobOutcome out;
  try {
    RunThreads(OneSize(ranks), backend, &sink);
  } catch (const Error& e) {
    out.code = e.code();
    out.message = e.what();
  }
  EXPECT_TRUE(sink.ended.has_value());
  if (sink.ended) out.ended = *sink.ended;
  return out;
}

// Rank 2 fails at the third timed iteration, and ranks 0 and 1 fail a moment later because
// of it. The job reports the lowest failing rank's error, whichever thread caught its error
// first (that used to be a race): the error and the record name rank 0, its phase, and the
// rank whose failure it could not get past.
TEST(FakeJobTest, ARankFailingMidSweepIsReportedTheSameWayEveryTime) {
  const std::string expected =
      "rank 0 on " + Host() +
      ": during all_reduce float sum size 1024 out-of-place (timing): fake: rank 0's "
      "all_reduce 256 float cannot complete: peer rank 2 failed";
  for (int attempt = 0; attempt < 20; ++attempt) {
    const JobOutcome o = RunFakeJob(3, {FakeFault{.rank = 2,
                                                  .step = kThirdTimedIteration,
                                                  .kind = FakeFaultKind::kFail,
                                                  .code = ErrorCode::kTimeout,
                                                  .message = "peer went quiet"}});
    EXPECT_EQ(o.code, ErrorCode::kBackend) << "attempt " << attempt;  // the CLI's exit 3
    EXPECT_EQ(o.message, expected) << "attempt " << attempt;
    EXPECT_EQ(o.ended.errors, std::vector<std::string>{expected}) << "attempt " << attempt;
    EXPECT_TRUE(o.ended.rows.empty());
  }
}

// The failing rank is the lowest: its own error, with its own type, is the job's.
TEST(FakeJobTest, TheFailingRanksOwnErrorKeepsItsCode) {
  const std::string expected = "rank 0 on " + Host() +
                               ": during all_reduce float sum size 1024 out-of-place (timing): "
                               "peer went quiet";
  for (int attempt = 0; attempt < 20; ++attempt) {
    const JobOutcome o = RunFakeJob(2, {FakeFault{.rank = 0,
                                                  .step = kThirdTimedIteration,
                                                  .kind = FakeFaultKind::kFail,
                                                  .code = ErrorCode::kTimeout,
                                                  .message = "peer went quiet"}});
    EXPECT_EQ(o.code, ErrorCode::kTimeout) << "attempt " << attempt;
    EXPECT_EQ(o.message, expected) << "attempt " << attempt;
    EXPECT_EQ(o.ended.errors, std::vector<std::string>{expected});
  }
}

// A wrong result is data, not an error: the job completes and the row counts it.
TEST(FakeJobTest, ACorruptedResultIsCountedInItsRowAndTheJobCompletes) {
  const JobOutcome o = RunFakeJob(
      3, {FakeFault{.rank = 1, .step = kOutOfPlaceValidation, .kind = FakeFaultKind::kCorrupt}});
  EXPECT_FALSE(o.code.has_value()) << o.message;
  EXPECT_TRUE(o.ended.errors.empty());
  ASSERT_EQ(o.ended.rows.size(), 1u);
  EXPECT_EQ(o.ended.rows[0].out_of_place->wrong, 1);
  EXPECT_EQ(o.ended.rows[0].in_place->wrong, 0);
  EXPECT_FALSE(SummarizeCollective(o.ended, "all_reduce").okay);  // the CLI's exit 1
}

// The -T watchdog over fake communicators, on the world's virtual clock.
class FakeWatchdogTest : public ::testing::Test {
 protected:
  static constexpr std::chrono::milliseconds kLimit{2000};

  void Start(int ranks, std::vector<FakeFault> script) {
    world_.emplace(ranks, std::move(script));
    watchdog_.emplace(
        kLimit, "hostA",
        [this](const std::string& message) {
          const std::lock_guard lock(mutex_);
          expiries_.push_back(message);
          expired_.notify_all();
        },
        [this] { return world_->clock().Now(); });
    // One after the other, so that each rank has its slot before any call runs.
    for (int r = 0; r < ranks; ++r) {
      comms_.push_back(watchdog_->Connect(r, "joining the fake communicator",
                                          [this, r] { return world_->Connect(r); }));
    }
  }

  // Every rank runs the sweep on its own thread.
  void Run() {
    outcomes_.resize(comms_.size());
    result_.nranks = static_cast<int>(comms_.size());
    const RunOptions o = OneSize(static_cast<int>(comms_.size()));
    const SweepPlan plan = PlanSweep(o, 1);
    for (size_t r = 0; r < comms_.size(); ++r) {
      threads_.emplace_back([this, r, o, plan] {
        RunResult scratch;
        try {
          RunBenchmark(o, plan, *comms_[r], r == 0 ? result_ : scratch, nullptr);
        } catch (const Error& e) {
          outcomes_[r] = e.code();
        }
      });
    }
  }

  void Join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  std::string AwaitExpiry() {
    std::unique_lock lock(mutex_);
    expired_.wait(lock, [this] { return !expiries_.empty(); });
    return expiries_.front();
  }

  // Declared first: on_expire uses them until the watchdog is gone.
  std::mutex mutex_;
  std::condition_variable expired_;
  std::vector<std::string> expiries_;
  std::optional<FakeWorld> world_;
  std::optional<Watchdog> watchdog_;
  std::vector<std::unique_ptr<Communicator>> comms_;  // reference watchdog_ and world_
  std::vector<std::thread> threads_;
  std::vector<std::optional<ErrorCode>> outcomes_;
  RunResult result_;
};

// Rank 1 hangs in the third timed iteration while rank 0 waits for it. Nothing happens until
// the clock passes the limit; then the watchdog records exactly one expiry, naming the
// lowest rank in the stuck call and the call.
TEST_F(FakeWatchdogTest, AHangIsCaughtOnlyOnceTheLimitHasPassed) {
  Start(2, {FakeFault{.rank = 1, .step = kThirdTimedIteration, .kind = FakeFaultKind::kHang}});
  Run();
  world_->AwaitHang();
  world_->clock().Advance(kLimit - std::chrono::milliseconds(1));
  EXPECT_FALSE(watchdog_->Scan());
  world_->clock().Advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(watchdog_->Scan());
  EXPECT_EQ(AwaitExpiry(),
            "rank 0 on hostA: all_reduce of 256 float elements did not complete within 2.0 s "
            "(the -T timeout and its grace); a peer is stuck or dead");
  world_->Release();  // the caller's policy; the launcher's would end the process here
  Join();
  EXPECT_EQ(outcomes_[0], ErrorCode::kBackend);
  EXPECT_EQ(outcomes_[1], ErrorCode::kBackend);
  const std::lock_guard lock(mutex_);
  EXPECT_EQ(expiries_.size(), 1u);
}

// A slow call that stays within the limit is never taken for a stuck one: the run completes
// and validates, whenever the watchdog's own thread looks.
TEST_F(FakeWatchdogTest, ASlowCallWithinTheLimitIsNotAnExpiry) {
  Start(3, {FakeFault{.rank = 2,
                      .step = kThirdTimedIteration,
                      .kind = FakeFaultKind::kDelay,
                      .duration = kLimit - std::chrono::milliseconds(1)}});
  std::optional<bool> scanned;
  world_->OnDelay([&] { scanned = watchdog_->Scan(); });
  Run();
  Join();
  EXPECT_EQ(scanned, false);
  for (const auto& o : outcomes_) EXPECT_FALSE(o.has_value());
  test::ExpectAllValid(result_);
  const std::lock_guard lock(mutex_);
  EXPECT_TRUE(expiries_.empty());
}

// A call that takes the limit is caught while it is still in flight, with the same record.
TEST_F(FakeWatchdogTest, ASlowCallOverTheLimitIsTheWatchdogsRecord) {
  Start(2, {FakeFault{.rank = 1,
                      .step = kOutOfPlaceBarrier,
                      .kind = FakeFaultKind::kDelay,
                      .duration = kLimit}});
  std::optional<bool> scanned;
  world_->OnDelay([&] { scanned = watchdog_->Scan(); });
  Run();
  EXPECT_EQ(AwaitExpiry(),
            "rank 0 on hostA: barrier did not complete within 2.0 s (the -T timeout and its "
            "grace); a peer is stuck or dead");
  Join();
  EXPECT_EQ(scanned, true);
  const std::lock_guard lock(mutex_);
  EXPECT_EQ(expiries_.size(), 1u);
}

// A call that fails has ended: however long the caller then takes (under the env launcher,
// process 0 waits up to -T for its peers' reports), the watchdog does not report it as
// stuck. It did before, and ended the killed-rank job in place of Gloo's named error.
TEST_F(FakeWatchdogTest, AFailedCallIsNotTakenForAStuckOne) {
  Start(2, {FakeFault{.rank = 1, .step = kThirdTimedIteration, .message = "peer is gone"}});
  Run();
  Join();
  EXPECT_EQ(outcomes_[0], ErrorCode::kBackend);
  EXPECT_EQ(outcomes_[1], ErrorCode::kBackend);
  world_->clock().Advance(10 * kLimit);
  EXPECT_FALSE(watchdog_->Scan());
  const std::lock_guard lock(mutex_);
  EXPECT_TRUE(expiries_.empty());
}

// A connect that fails has ended too.
TEST(WatchdogConnectTest, AFailedConnectIsNotTakenForAStuckOne) {
  FakeWorld world(1);
  bool expired = false;
  Watchdog watchdog(
      std::chrono::milliseconds(1000), "hostA", [&](const std::string&) { expired = true; },
      [&] { return world.clock().Now(); });
  EXPECT_THROW(
      watchdog.Connect(0, "joining",
                       []() -> std::unique_ptr<Communicator> { throw TimeoutError("no peer"); }),
      TimeoutError);
  world.clock().Advance(std::chrono::seconds(10));
  EXPECT_FALSE(watchdog.Scan());
  EXPECT_FALSE(expired);
}

}  // namespace
}  // namespace fabricscope
