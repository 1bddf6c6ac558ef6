// The engine on the FakeCommunicator test double: which rank fails, at which call, with which
// error, and which result is wrong are chosen by the test, so each outcome is pinned exactly
// (the real-backend tests, where thread timing decides which peer notices first, cannot).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/fake_communicator.h"
#include "common/result_checks.h"
#include "fabricscope/engine.h"
#include "fabricscope/error.h"

namespace fabricscope {
namespace {

using test::FakeFault;
using test::FakeFaultKind;
using test::FakeWorld;

using test::kInPlaceBarrier;
using test::kInPlaceValidation;
using test::kOutOfPlaceBarrier;
using test::kOutOfPlaceValidation;
using test::kStepsPerSize;
using test::kThirdTimedIteration;
using test::OneSize;

struct RankOutcome {
  std::optional<ErrorCode> code;  // empty: RunBenchmark returned
  std::string message;
};

// Every rank of `world` runs the sweep on its own thread; rank 0's rows go to `result`.
std::vector<RankOutcome> RunRanks(FakeWorld& world, const RunOptions& o, RunResult& result) {
  const SweepPlan plan = PlanSweep(o, world.size());
  std::vector<RankOutcome> out(static_cast<size_t>(world.size()));
  std::vector<std::thread> threads;
  for (int r = 0; r < world.size(); ++r) {
    threads.emplace_back([&, r] {
      auto comm = world.Connect(r);
      RunResult scratch;
      try {
        RunBenchmark(o, plan, *comm, r == 0 ? result : scratch, nullptr);
      } catch (const Error& e) {
        out[static_cast<size_t>(r)] = {e.code(), e.what()};
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// The double computes the true result of every collective, placement, type and op: a clean
// script validates everywhere, as the real backends do.
class FakeCollectiveTest : public ::testing::TestWithParam<Collective> {};

TEST_P(FakeCollectiveTest, EveryPlacementTypeAndOpValidates) {
  RunOptions o = OneSize(GetParam());
  o.min_bytes = 64;
  o.max_bytes = 4096;
  o.step_factor = 4;
  o.types = {DataType::kFloat, DataType::kInt8, DataType::kHalf, DataType::kBfloat16};
  o.ops = AllCapabilities().ops;  // what the test double declares: not mulsum
  o.root = -1;
  for (int ranks : {1, 3, 4}) {
    FakeWorld world(ranks);
    RunResult result;
    result.nranks = ranks;
    for (const RankOutcome& r : RunRanks(world, o, result)) {
      EXPECT_FALSE(r.code.has_value()) << r.message;
    }
    test::ExpectAllValid(result);
  }
}

std::string CollectiveName(const ::testing::TestParamInfo<Collective>& info) {
  return std::string(SpecOf(info.param).name);
}

INSTANTIATE_TEST_SUITE_P(AllCollectives, FakeCollectiveTest,
                         ::testing::Values(Collective::kAllReduce, Collective::kAllGather,
                                           Collective::kReduceScatter, Collective::kBroadcast,
                                           Collective::kReduce, Collective::kAlltoAll,
                                           Collective::kSendRecv, Collective::kGather,
                                           Collective::kScatter),
                         CollectiveName);

TEST(EngineFakeTest, TheStepsOfOneSizeAreTheOnesTheScriptsName) {
  FakeWorld world(2);
  RunResult result;
  RunRanks(world, OneSize(), result);
  const std::vector<std::string> trace = world.Trace(1);
  ASSERT_EQ(trace.size(), static_cast<size_t>(kStepsPerSize));
  EXPECT_EQ(trace[0], "all_reduce 256 float");  // the one warm-up call
  EXPECT_EQ(trace[kOutOfPlaceBarrier], "barrier");
  EXPECT_EQ(trace[kThirdTimedIteration], "all_reduce 256 float");
  EXPECT_EQ(trace[kThirdTimedIteration + 1], "all_gather 1 double");
  EXPECT_EQ(trace[kOutOfPlaceValidation], "all_reduce 256 float");
  EXPECT_EQ(trace[kOutOfPlaceValidation + 1], "all_reduce 1 int64");
  EXPECT_EQ(trace[kInPlaceBarrier], "barrier");
  EXPECT_EQ(trace[kInPlaceValidation], "all_reduce 256 float");
  EXPECT_EQ(world.Trace(0), trace);
}

// The warm-up is nccl-tests v2.19.6's (TimeTest, src/common.cu:924-931): every size from -b
// by doubling up to -e, whatever -f says, -w calls each, smallest first.
TEST(EngineFakeTest, TheWarmUpDoublesFromTheSmallestSizeUpToTheLargest) {
  RunOptions o = OneSize();
  o.min_bytes = 1024;
  o.max_bytes = 5000;  // the sweep: 1024 and 4096; the warm-up: 1024, 2048 and 4096
  o.step_factor = 4;
  o.warmup_iters = 2;
  FakeWorld world(2);
  RunResult result;
  RunRanks(world, o, result);
  const std::vector<std::string> trace = world.Trace(0);
  ASSERT_GT(trace.size(), 7u);
  EXPECT_EQ(std::vector<std::string>(trace.begin(), trace.begin() + 7),
            (std::vector<std::string>{
                "all_reduce 256 float", "all_reduce 256 float", "all_reduce 512 float",
                "all_reduce 512 float", "all_reduce 1024 float", "all_reduce 1024 float",
                "all_reduce 256 float"}));  // then the first size's untimed call
  EXPECT_EQ(trace[7], "barrier");
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_EQ(result.rows[1].size, 4096u);
}

// A rank failing at the third timed iteration: that rank ends with its own error, typed, and
// where the sweep was; every peer ends with a backend error naming the rank that failed.
TEST(EngineFakeTest, ARankFailingAtTheThirdIterationEndsEveryRankNamingIt) {
  FakeWorld world(3, {FakeFault{.rank = 1,
                                .step = kThirdTimedIteration,
                                .kind = FakeFaultKind::kFail,
                                .code = ErrorCode::kSystem,
                                .message = "the NIC went away"}});
  RunResult result;
  const auto outcomes = RunRanks(world, OneSize(), result);
  const std::string where = "during all_reduce float sum size 1024 out-of-place (timing): ";
  EXPECT_EQ(outcomes[1].code, ErrorCode::kSystem);
  EXPECT_EQ(outcomes[1].message, where + "the NIC went away");
  for (int r : {0, 2}) {
    EXPECT_EQ(outcomes[static_cast<size_t>(r)].code, ErrorCode::kBackend);
    EXPECT_EQ(outcomes[static_cast<size_t>(r)].message,
              where + "fake: rank " + std::to_string(r) +
                  "'s all_reduce 256 float cannot complete: peer rank 1 failed");
    EXPECT_EQ(world.Trace(r).size(), static_cast<size_t>(kThirdTimedIteration + 1));
  }
  EXPECT_TRUE(result.rows.empty());  // the size never completed
}

TEST(EngineFakeTest, EachErrorCodeKeepsItsCodeThroughTheEngine) {
  for (ErrorCode code : {ErrorCode::kSystem, ErrorCode::kBackend, ErrorCode::kTimeout}) {
    FakeWorld world(2,
                    {FakeFault{.rank = 0, .step = kInPlaceBarrier, .code = code, .message = "x"}});
    RunResult result;
    const auto outcomes = RunRanks(world, OneSize(), result);
    EXPECT_EQ(outcomes[0].code, code);
    EXPECT_EQ(outcomes[0].message, "during all_reduce float sum size 1024 in-place (timing): x");
    EXPECT_EQ(outcomes[1].code, ErrorCode::kBackend);
  }
}

// One element of one rank's result flipped in the out-of-place validation: exactly that
// placement counts one wrong element, and the summary fails the test (the CLI's exit 1).
TEST(EngineFakeTest, ACorruptedResultIsOneWrongElementInThatPlacementOnly) {
  FakeWorld world(
      3, {FakeFault{.rank = 2, .step = kOutOfPlaceValidation, .kind = FakeFaultKind::kCorrupt}});
  RunResult result;
  result.nranks = 3;
  for (const RankOutcome& r : RunRanks(world, OneSize(), result)) {
    EXPECT_FALSE(r.code.has_value()) << r.message;
  }
  ASSERT_EQ(result.rows.size(), 1u);
  EXPECT_EQ(result.rows[0].out_of_place->wrong, 1);
  EXPECT_EQ(result.rows[0].in_place->wrong, 0);
  const TestSummary summary = SummarizeCollective(result, "all_reduce");
  EXPECT_EQ(summary.out_of_bounds, 1);
  EXPECT_FALSE(summary.okay);
}

// Corruption in a timed iteration is not a validation failure: the check runs its own calls
// on fresh data, so only a wrong result of those is counted.
TEST(EngineFakeTest, ACorruptedTimedIterationIsNotCountedAsWrong) {
  FakeWorld world(
      2, {FakeFault{.rank = 1, .step = kThirdTimedIteration, .kind = FakeFaultKind::kCorrupt}});
  RunResult result;
  result.nranks = 2;
  RunRanks(world, OneSize(), result);
  test::ExpectAllValid(result);
}

TEST(EngineFakeTest, ACorruptedInPlaceValidationOnEveryRankCountsEveryRank) {
  std::vector<FakeFault> script;
  for (int r = 0; r < 4; ++r) {
    script.push_back({.rank = r, .step = kInPlaceValidation, .kind = FakeFaultKind::kCorrupt});
  }
  FakeWorld world(4, script);
  RunResult result;
  result.nranks = 4;
  RunRanks(world, OneSize(), result);
  ASSERT_EQ(result.rows.size(), 1u);
  EXPECT_EQ(result.rows[0].out_of_place->wrong, 0);
  EXPECT_EQ(result.rows[0].in_place->wrong, 4);
}

}  // namespace
}  // namespace fabricscope
