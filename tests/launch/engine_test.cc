// The engine over the real Gloo backend with ranks as real threads: every collective, type,
// op and placement is validated, and the table's columns follow nccl-tests.
#include "fabricscope/engine.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/result_checks.h"
#include "fabricscope/backend.h"
#include "fabricscope/error.h"
#include "fabricscope/launch.h"

namespace fabricscope {
namespace {

RunOptions SmallSweep(Collective collective, int ranks) {
  RunOptions o;
  o.collectives = {collective};
  o.nthreads = ranks;
  o.min_bytes = 8;
  o.max_bytes = 4096;
  o.step_factor = 8;  // 8, 64, 512, 4096
  o.iters = 2;
  o.warmup_iters = 1;
  o.check = 2;
  o.timeout_s = 60;
  return o;
}

using test::ExpectAllValid;

class EngineCollectiveTest : public ::testing::TestWithParam<std::tuple<Collective, int>> {};

TEST_P(EngineCollectiveTest, EveryTypeOpAndPlacementValidates) {
  const auto [collective, ranks] = GetParam();
  const CollectiveSpec& spec = SpecOf(collective);
  RunOptions o = SmallSweep(collective, ranks);
  // The full type x op x root matrix up to 4 ranks; at 8 ranks a cross-section, so the
  // suite stays fast on a 2-core machine (every row costs ~10 collective calls).
  if (ranks <= 4) {
    o.types = {DataType::kFloat, DataType::kInt8, DataType::kHalf, DataType::kBfloat16,
               DataType::kUint64};
    o.ops = AllCapabilities().ops;  // mulsum is NCCL's alone
    o.root = spec.has_root ? -1 : 0;
  } else {
    o.types = {DataType::kFloat, DataType::kBfloat16};
    o.ops = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAvg};
    o.root = spec.has_root ? ranks - 1 : 0;
  }
  auto backend = MakeBackend("gloo");
  const RunResult result = RunThreads(o, *backend, nullptr);
  ExpectAllValid(result);
  const size_t roots = spec.has_root && o.root == -1 ? static_cast<size_t>(ranks) : 1;
  const size_t ops = spec.has_op ? o.ops.size() : 1;
  EXPECT_EQ(result.rows.size(), 4u * o.types.size() * ops * roots);
  for (const ResultRow& row : result.rows) {
    EXPECT_EQ(row.redop == "none", !spec.has_op);
    EXPECT_EQ(row.root == -1, !spec.has_root);
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::tuple<Collective, int>>& info) {
  return std::string(SpecOf(std::get<0>(info.param)).name) + "_" +
         std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(
    AllCollectives, EngineCollectiveTest,
    ::testing::Combine(::testing::Values(Collective::kAllReduce, Collective::kAllGather,
                                         Collective::kReduceScatter, Collective::kBroadcast,
                                         Collective::kReduce, Collective::kAlltoAll,
                                         Collective::kSendRecv, Collective::kGather,
                                         Collective::kScatter),
                       ::testing::Values(1, 2, 3, 4, 8)),
    CaseName);

TEST(EngineTest, EveryTypeOnAllReduce) {
  RunOptions o = SmallSweep(Collective::kAllReduce, 3);
  o.types = AllCapabilities().types;
  o.ops = AllCapabilities().ops;
  auto backend = MakeBackend("gloo");
  ExpectAllValid(RunThreads(o, *backend, nullptr));
}

TEST(EngineTest, SizeAndCountColumnsFollowNcclTests) {
  RunOptions o = SmallSweep(Collective::kAllGather, 4);
  o.min_bytes = o.max_bytes = 1000;
  auto backend = MakeBackend("gloo");
  const RunResult r = RunThreads(o, *backend, nullptr);
  ASSERT_EQ(r.rows.size(), 1u);
  // 1000 B / 4 ranks = 62 floats per rank -> 60 (16-byte multiple); size is the total.
  EXPECT_EQ(r.rows[0].count, 60u);
  EXPECT_EQ(r.rows[0].size, 960u);
  const auto& h = *r.rows[0].out_of_place;
  EXPECT_NEAR(h.algbw, 960.0 / 1e9 / (h.time_us * 1e-6), 1e-9);
  EXPECT_NEAR(h.busbw, h.algbw * 0.75, 1e-12);
}

TEST(EngineTest, AggregationPicksTheRequestedRankTime) {
  for (auto agg : {TimeAggregation::kRank0, TimeAggregation::kAverage, TimeAggregation::kMin,
                   TimeAggregation::kMax}) {
    RunOptions o = SmallSweep(Collective::kAllReduce, 3);
    o.min_bytes = o.max_bytes = 4096;
    o.average = agg;
    auto backend = MakeBackend("gloo");
    const RunResult r = RunThreads(o, *backend, nullptr);
    const PlacementResult& p = *r.rows[0].out_of_place;
    const double expected = agg == TimeAggregation::kRank0 ? p.ranks.per_rank_us[0]
                            : agg == TimeAggregation::kMin ? p.ranks.min_us
                            : agg == TimeAggregation::kMax ? p.ranks.max_us
                                                           : p.ranks.avg_us;
    EXPECT_DOUBLE_EQ(p.time_us, expected);
    EXPECT_LE(p.ranks.min_us, p.ranks.avg_us);
    EXPECT_LE(p.ranks.avg_us, p.ranks.max_us);
    EXPECT_DOUBLE_EQ(p.ranks.per_rank_us[static_cast<size_t>(p.ranks.max_rank)], p.ranks.max_us);
  }
}

TEST(EngineTest, InjectedFaultIsCountedAsWrong) {
  RunOptions o = SmallSweep(Collective::kAllReduce, 4);
  o.inject_fault_rank = 2;
  o.check = 1;
  auto backend = MakeBackend("gloo");
  const RunResult r = RunThreads(o, *backend, nullptr);
  for (const ResultRow& row : r.rows) {
    if (row.count == 0) continue;
    EXPECT_EQ(*row.out_of_place->wrong, 1) << row.size;
    EXPECT_EQ(*row.in_place->wrong, 1) << row.size;
  }
  const auto summaries = Summarize(r);
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_FALSE(summaries[0].okay);
  EXPECT_EQ(summaries[0].out_of_bounds, 8);
}

TEST(EngineTest, NoCheckLeavesWrongEmpty) {
  RunOptions o = SmallSweep(Collective::kBroadcast, 2);
  o.check = 0;
  auto backend = MakeBackend("gloo");
  for (const ResultRow& row : RunThreads(o, *backend, nullptr).rows) {
    EXPECT_FALSE(row.out_of_place->wrong.has_value());
    EXPECT_FALSE(row.in_place->wrong.has_value());
  }
}

TEST(EngineTest, PerIterationTimingAndTimestamps) {
  RunOptions o = SmallSweep(Collective::kAllReduce, 2);
  o.per_iter_timing = true;
  o.iters = 10;
  o.per_iter_skip = 2;
  o.report_timestamps = true;
  o.blocking = 3;
  auto backend = MakeBackend("gloo");
  for (const ResultRow& row : RunThreads(o, *backend, nullptr).rows) {
    ASSERT_TRUE(row.out_of_place->iterations.has_value());
    const IterationStats& s = *row.out_of_place->iterations;
    // nccl-tests' report: every iteration's time, the statistics of those after -K.
    ASSERT_EQ(s.times_us.size(), 10u);
    EXPECT_EQ(s.skipped_iterations, 2);
    EXPECT_LE(s.min_us, s.p50_us);
    EXPECT_LE(s.p50_us, s.p95_us);
    EXPECT_LE(s.p95_us, s.p99_us);
    EXPECT_LE(s.p99_us, s.max_us);
    EXPECT_GE(s.avg_us, s.min_us);
    EXPECT_LE(s.avg_us, s.max_us);
    const double kept_min = *std::min_element(s.times_us.begin() + 2, s.times_us.end());
    EXPECT_EQ(s.min_us, kept_min);
    EXPECT_GE(s.cv_percent, 0);
    EXPECT_NEAR(s.cv_percent, 100.0 * s.stdev_us / s.avg_us, 1e-9);
    // One process (two threads): no per-process rows.
    EXPECT_TRUE(s.per_process_max_times_us.empty());
    EXPECT_EQ(row.timestamp.size(), 19u);  // 2026-11-21 23:12:29
  }
}

TEST(EngineTest, RunCyclesRepeatTheSweep) {
  RunOptions o = SmallSweep(Collective::kSendRecv, 2);
  o.run_cycles = 3;
  auto backend = MakeBackend("gloo");
  const RunResult r = RunThreads(o, *backend, nullptr);
  EXPECT_EQ(r.rows.size(), 12u);
  EXPECT_EQ(CountRows(o, PlanSweep(o, 2), 2), 12u);
}

TEST(EngineTest, RootOutOfRangeIsAUsageError) {
  RunOptions o = SmallSweep(Collective::kBroadcast, 2);
  o.root = 5;
  auto backend = MakeBackend("gloo");
  try {
    RunThreads(o, *backend, nullptr);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("root 5 (-r) is out of range for 2 ranks"),
              std::string::npos)
        << e.what();
  }
}

TEST(EngineTest, MemoryCapReducesMaxBytesWithNcclTestsMessage) {
  RunOptions o = SmallSweep(Collective::kAllReduce, 2);
  o.max_bytes = size_t{1} << 40;
  o.memory_limit_bytes = 64 << 20;  // 64 MiB: headroom 32 MiB, 4 buffers x 2 ranks
  const SweepPlan plan = PlanSweep(o, 2);
  EXPECT_EQ(plan.max_bytes, (32u << 20) / 8);
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_EQ(plan.notes[0], "Reducing maxBytes to 4194304 due to memory limitation");
  EXPECT_EQ(plan.sizes.back(), 2097152u);  // 8 x 8^k up to the 4 MiB cap
  o.min_bytes = size_t{1} << 30;
  EXPECT_THROW(PlanSweep(o, 2), UsageError);
}

}  // namespace
}  // namespace fabricscope
