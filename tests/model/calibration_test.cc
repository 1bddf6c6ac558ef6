// Calibration on one published run, then predictions checked against the other published
// runs of the same platform (the cases where ../shared/reference has more than one).
#include <gtest/gtest.h>

#include <cmath>

#include "fabricscope/error.h"
#include "fabricscope/model.h"
#include "published_runs.h"

namespace fabricscope {
namespace {

using testing::BusbwRow;
using testing::BusbwRun;
using testing::kGcpH200AllGather;
using testing::kSkyPilotH200AllGather;
using testing::kTcpxAllReduce;
using testing::PublishedRow;
using testing::PublishedRun;

constexpr size_t kMiB = size_t{1} << 20;

// Every row at or above `min_size`, both placements, within `percent` of the model.
void ExpectWithin(const CollectiveModel& model, const RunResult& run, double percent,
                  size_t min_size) {
  for (Placement placement : {Placement::kOutOfPlace, Placement::kInPlace}) {
    for (const FitPoint& p : CompareWithMeasured(model, run, placement, min_size)) {
      EXPECT_LT(std::abs(p.error_percent), percent)
          << p.collective << " " << p.size << ": measured " << p.measured_us << " us, predicted "
          << p.predicted_us << " us (" << p.algorithm << "/" << p.protocol << ")";
    }
  }
}

// How far the model is from one published busbw figure, on time as everywhere else here
// (CompareWithMeasured): the time nccl-tests printed for that busbw against the prediction.
double TimeError(const CollectiveModel& model, const PublishedPoint& point) {
  const double predicted = model.Predict(FindCollective(point.collective).id, point.size).busbw;
  return point.busbw / predicted - 1;
}

const PublishedPoint& Point(const Platform& platform, const std::string& collective, size_t size) {
  for (const auto& p : platform.published) {
    if (p.collective == collective && p.size == size) return p;
  }
  throw std::runtime_error("no published point " + collective + " " + std::to_string(size));
}

TEST(Calibration, SkyPilotH200RunPredictsGcpsOwnRunWithinTenPercentFromOneMegabyte) {
  const Platform& platform = testing::BuiltinCatalog().Get("gcp-a3-ultragpu-8g");
  const RunResult skypilot = PublishedRun("all_gather", kSkyPilotH200AllGather, 2, 8);
  CalibrationOptions both;  // the whole run: its out-of-place and in-place halves
  both.placements = {Placement::kOutOfPlace, Placement::kInPlace};
  const Calibration cal = Calibrate(platform, ModelOptions{}, skypilot, both);
  EXPECT_EQ(cal.nodes, 2);
  EXPECT_EQ(cal.fitted,
            (std::vector<std::string>{"latency_scale", "net_latency_us", "net_efficiency"}));
  EXPECT_EQ(cal.error.points, 48u);
  EXPECT_LT(cal.error.mean_abs_percent, 6.0);
  // The fitted efficiency is the run's plateau over line rate (325.7 / 400, about 0.81).
  EXPECT_NEAR(cal.params.net_efficiency, 0.81, 0.03);

  const CollectiveModel model(platform, cal.options);
  // The other full table of the seed (GCP's raw pods), both placements, >= 1 MB.
  ExpectWithin(model, PublishedRun("all_gather", kGcpH200AllGather, 2, 8), 10.0, kMiB);
  // GCP cluster-toolkit's figures for the same machine: 254 at 128 MB and 128 at 16 MB.
  // Its 12.3 GB/s at 1 MB is left out: both full seed tables show 16.8-18.5 there, 30% away
  // from it, so no model fitted to one source can meet the other at that size.
  EXPECT_LT(std::abs(TimeError(model, Point(platform, "all_gather", 128 * kMiB))), 0.10);
  EXPECT_LT(std::abs(TimeError(model, Point(platform, "all_gather", 16 * kMiB))), 0.10);
}

TEST(Calibration, ExtrapolatesToOtherNodeCountsWithTheFittedTerms) {
  const Platform& platform = testing::BuiltinCatalog().Get("gcp-a3-ultragpu-8g");
  const Calibration cal =
      Calibrate(platform, ModelOptions{}, PublishedRun("all_gather", kSkyPilotH200AllGather, 2, 8),
                CalibrationOptions{});
  ModelOptions at8 = cal.options;
  at8.nodes = 8;
  at8.algorithms = {NcclAlgorithm::kRing};
  const CollectiveModel model(platform, at8);
  EXPECT_DOUBLE_EQ(model.params().net_efficiency, cal.params.net_efficiency);
  // A flat ring stays NIC-bound at 8 nodes: the plateau is the calibrated efficiency.
  EXPECT_NEAR(model.Predict(Collective::kAllGather, size_t{64} << 30).busbw,
              platform.NicTotalGBs() * cal.params.net_efficiency, 2.0);
  // More ring steps cost more latency at small sizes.
  const CollectiveModel at2(platform, cal.options);
  EXPECT_GT(model.Predict(Collective::kAllGather, 1024).time_us,
            at2.Predict(Collective::kAllGather, 1024).time_us);
}

TEST(Calibration, TcpxAllReduceTablePredictsTheClusterToolkitAllGather) {
  // a3-highgpu-8g: calibrate on the seed's TCPX all_reduce busbw column (rows of at least
  // 0.1 GB/s, where two decimals still carry the figure), predict GCP cluster-toolkit's
  // all_gather 71 GB/s at 512 MB: another collective, another source.
  const Platform& platform = testing::BuiltinCatalog().Get("gcp-a3-highgpu-8g");
  // The table never exceeds the NIC total, as Tree or NVLSTree on 2 nodes would: a ring.
  const RunResult run = BusbwRun("all_reduce", kTcpxAllReduce, 2, 8, 2.0 * 15 / 16, 0.1);
  ModelOptions ring;
  ring.algorithms = {NcclAlgorithm::kRing};
  const Calibration cal = Calibrate(platform, ring, run, CalibrationOptions{});
  EXPECT_LT(cal.error.mean_abs_percent, 25.0);  // the TCPX curve is ragged below 16 MB
  const CollectiveModel model(platform, cal.options);
  EXPECT_LT(std::abs(TimeError(model, Point(platform, "all_gather", 512 * kMiB))), 0.10);
}

TEST(Calibration, MegaToolkitPointsPredictDstacksEightGigabyteFigure) {
  // a3-megagpu-8g: GCP cluster-toolkit's run gives 16 MB and 128 MB; dstack's 8 GB figure
  // is another run of the same machine.
  const Platform& platform = testing::BuiltinCatalog().Get("gcp-a3-megagpu-8g");
  const BusbwRow toolkit[] = {{16 * kMiB, 79.5}, {128 * kMiB, 156}};
  const RunResult run = BusbwRun("all_gather", toolkit, 2, 8, 15.0 / 16, 0);
  const Calibration cal = Calibrate(platform, ModelOptions{}, run, CalibrationOptions{});
  EXPECT_LT(cal.error.max_abs_percent, 5.0);
  const CollectiveModel model(platform, cal.options);
  EXPECT_LT(std::abs(TimeError(model, Point(platform, "all_gather", size_t{8} << 30))), 0.10);
}

TEST(Calibration, OnePointFitsTheEfficiencyOnlyAndPredictsTheOtherCollective) {
  // DGX H100, 4 nodes (Voltage Park): all_gather 324 -> all_reduce 331.
  const Platform& platform = testing::BuiltinCatalog().Get("dgx-h100");
  const BusbwRow gather[] = {{size_t{8} << 30, 324}};
  const Calibration cal =
      Calibrate(platform, ModelOptions{}, BusbwRun("all_gather", gather, 4, 8, 31.0 / 32, 0),
                CalibrationOptions{});
  EXPECT_EQ(cal.fitted, std::vector<std::string>{"net_efficiency"});
  ASSERT_FALSE(cal.notes.empty());
  EXPECT_NE(cal.notes[0].find("latency kept"), std::string::npos) << cal.notes[0];
  EXPECT_LT(cal.error.max_abs_percent, 0.5);
  ModelOptions ring = cal.options;
  ring.nodes = 4;
  ring.algorithms = {NcclAlgorithm::kRing};
  EXPECT_LT(std::abs(TimeError(CollectiveModel(platform, ring),
                               Point(platform, "all_reduce", size_t{8} << 30))),
            0.10);
}

TEST(Calibration, SingleNodeRunFitsTheIntraNodeEfficiency) {
  const Platform& platform = testing::BuiltinCatalog().Get("aws-p6-b200");
  const BusbwRow one[] = {{size_t{16} << 30, 845.7}};
  const Calibration cal =
      Calibrate(platform, ModelOptions{}, BusbwRun("all_reduce", one, 1, 8, 14.0 / 8, 0),
                CalibrationOptions{});
  EXPECT_EQ(cal.fitted, std::vector<std::string>{"intra_efficiency"});
  EXPECT_LT(cal.error.max_abs_percent, 0.5);
}

TEST(Calibration, RunsThatCannotBeFittedAreRefusedWithTheReason) {
  const Platform& platform = testing::BuiltinCatalog().Get("gcp-a3-ultragpu-8g");
  RunResult empty = PublishedRun("all_gather", kSkyPilotH200AllGather, 2, 8);
  empty.rows.clear();
  EXPECT_THROW(Calibrate(platform, ModelOptions{}, empty, CalibrationOptions{}), UsageError);

  RunResult mismatch = PublishedRun("all_gather", kSkyPilotH200AllGather, 2, 8);
  CalibrationOptions three;
  three.nodes = 3;
  try {
    Calibrate(platform, ModelOptions{}, mismatch, three);
    FAIL() << "16 ranks on 3 nodes of 8 GPUs was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("16 ranks"), std::string::npos) << e.what();
  }

  RunResult anonymous = PublishedRun("all_gather", kSkyPilotH200AllGather, 2, 8);
  anonymous.ranks.clear();
  anonymous.nranks = 12;  // not a multiple of 8 GPUs: the node count cannot be inferred
  EXPECT_THROW(Calibrate(platform, ModelOptions{}, anonymous, CalibrationOptions{}), UsageError);
  anonymous.nranks = 16;
  const Calibration inferred = Calibrate(platform, ModelOptions{}, anonymous, CalibrationOptions{});
  EXPECT_EQ(inferred.nodes, 2);
  ASSERT_FALSE(inferred.notes.empty());
  EXPECT_NE(inferred.notes[0].find("inferred"), std::string::npos);

  RunResult unknown = PublishedRun("all_gather", kSkyPilotH200AllGather, 2, 8);
  for (auto& row : unknown.rows) row.collective = "hypercube";
  EXPECT_THROW(Calibrate(platform, ModelOptions{}, unknown, CalibrationOptions{}), UsageError);
}

TEST(Calibration, NodesComeFromDistinctHostNames) {
  EXPECT_EQ(NodesOf(PublishedRun("all_gather", kSkyPilotH200AllGather, 2, 8)), 2);
  EXPECT_EQ(NodesOf(PublishedRun("all_gather", kSkyPilotH200AllGather, 4, 4)), 4);
  RunResult none;
  EXPECT_EQ(NodesOf(none), 0);
}

TEST(Calibration, FitErrorSummarizesAbsolutePercentages) {
  std::vector<FitPoint> points(3);
  points[0].error_percent = -4;
  points[1].error_percent = 2;
  points[2].error_percent = 0;
  const FitError e = SummarizeFit(points);
  EXPECT_EQ(e.points, 3u);
  EXPECT_DOUBLE_EQ(e.mean_abs_percent, 2.0);
  EXPECT_DOUBLE_EQ(e.max_abs_percent, 4.0);
}

}  // namespace
}  // namespace fabricscope
