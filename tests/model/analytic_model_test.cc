// The analytic model against the bounds it must respect and the published curves it must
// reproduce (../shared/reference/platforms.md and the seeds).
#include <gtest/gtest.h>

#include <cmath>

#include "fabricscope/error.h"
#include "fabricscope/model.h"
#include "published_runs.h"

namespace fabricscope {
namespace {

using testing::kSkyPilotH200AllGather;

Platform Generic(int gpus, double intra, int nics, double rate, const std::string& transport,
                 double efficiency = 0.9) {
  GenericPlatformOptions o;
  o.gpus_per_node = gpus;
  o.intra_node_busbw = intra;
  o.nics = nics;
  o.nic_rate_gbps = rate;
  o.transport = transport;
  o.ring_efficiency = efficiency;
  return GenericPlatform(o);
}

ModelOptions Nodes(int nodes) {
  ModelOptions o;
  o.nodes = nodes;
  return o;
}

// The size at which a busbw curve first reaches `level`, interpolated in log size.
double SizeReaching(const std::vector<std::pair<double, double>>& curve, double level) {
  for (size_t i = 1; i < curve.size(); ++i) {
    if (curve[i].second >= level) {
      const auto [s0, b0] = curve[i - 1];
      const auto [s1, b1] = curve[i];
      const double t = (level - b0) / (b1 - b0);
      return std::exp(std::log(s0) + t * (std::log(s1) - std::log(s0)));
    }
  }
  return curve.back().first;
}

TEST(AnalyticModel, RingBusbwIsBoundedByIntraNodeAndNicTotal) {
  struct Case {
    Platform platform;
    int nodes;
  };
  const std::vector<Case> cases = {
      {Generic(8, 370, 8, 400, "IB", 0.96), 2},   // NIC-bound: 8 x 50 x 0.96 = 384 > 370
      {Generic(8, 200, 8, 400, "RoCE"), 4},       // intra-node bound
      {Generic(8, 370, 4, 100, "EFA"), 16},       // NIC-bound: 45
      {Generic(4, 150, 2, 200, "IB", 0.96), 64},  // NIC-bound: 48
  };
  for (const auto& c : cases) {
    ModelOptions o = Nodes(c.nodes);
    o.algorithms = {NcclAlgorithm::kRing};
    const CollectiveModel model(c.platform, o);
    const double bound = std::min(c.platform.intra_node_ring_busbw,
                                  c.platform.NicTotalGBs() * model.params().net_efficiency);
    for (Collective coll :
         {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
      for (size_t size = 1024; size <= (size_t{1} << 36); size *= 4) {
        EXPECT_LE(model.Predict(coll, size).busbw, bound * (1 + 1e-9))
            << c.platform.description << " " << SpecOf(coll).name << " " << size;
      }
      // Far above the latency, the ring reaches the bound.
      EXPECT_NEAR(model.Predict(coll, size_t{1} << 40).busbw, bound, 0.01 * bound)
          << c.platform.description << " " << SpecOf(coll).name;
    }
  }
}

TEST(AnalyticModel, NcclConstantsAloneReproduceTheSeedH200CurveShape) {
  // A 2-node 8 x 400G RoCE H200 node described by flags: no catalog floor, no published
  // band, only NCCL 2.25.1's constants and the generic 0.9 RoCE efficiency.
  const Platform platform = Generic(8, 370, 8, 400, "RoCE");
  ModelOptions o = Nodes(2);
  o.arch = GpuArch::kHopper;
  const CollectiveModel model(platform, o);

  std::vector<std::pair<double, double>> measured;
  std::vector<std::pair<double, double>> predicted;
  for (const auto& row : kSkyPilotH200AllGather) {
    measured.emplace_back(static_cast<double>(row.size), row.oop_busbw);
    predicted.emplace_back(static_cast<double>(row.size),
                           model.Predict(Collective::kAllGather, row.size).busbw);
  }
  const double measured_floor = kSkyPilotH200AllGather[0].oop_time_us;  // 28.39 us at 1 KB
  const double measured_plateau = measured.back().second;               // 325.72 at 8 GB
  const double measured_half = SizeReaching(measured, measured_plateau / 2);
  const double floor = model.Predict(Collective::kAllGather, 1024).time_us;
  const double plateau = predicted.back().second;
  const double half = SizeReaching(predicted, plateau / 2);

  // Tolerances: the floor within 35% (NCCL's per-step constants are InfiniBand-class);
  // half-peak size within a factor of 2 (one point of the -f 2 sweep); the plateau within
  // 15% (0.9 x line rate against the measured 0.81).
  EXPECT_NEAR(floor, measured_floor, 0.35 * measured_floor);
  EXPECT_GT(half, measured_half / 2);
  EXPECT_LT(half, measured_half * 2);
  EXPECT_NEAR(plateau, measured_plateau, 0.15 * measured_plateau);
  // And the shape between: monotone, flat under 64 KB, rising by orders of magnitude.
  for (size_t i = 1; i < predicted.size(); ++i) {
    EXPECT_GE(predicted[i].second, predicted[i - 1].second * 0.999) << predicted[i].first;
  }
  EXPECT_LT(model.Predict(Collective::kAllGather, 65536).time_us, 1.2 * floor);
}

TEST(AnalyticModel, CatalogPlatformMeetsItsPublishedFloorAndBand) {
  const Platform& platform = testing::BuiltinCatalog().Get("gcp-a3-ultragpu-8g");
  const CollectiveModel model(platform, Nodes(2));
  EXPECT_NEAR(model.Predict(Collective::kAllGather, 1024).time_us, *platform.latency_floor_us,
              0.005 * *platform.latency_floor_us);
  const double band = platform.ExpectationFor("all_gather", 2, size_t{8} << 30)->typical_busbw;
  EXPECT_NEAR(model.Predict(Collective::kAllGather, size_t{8} << 30).busbw, band, 0.02 * band);
}

TEST(AnalyticModel, ProtocolsGoFromLlToLl128ToSimpleAsSizeGrows) {
  const CollectiveModel model(testing::BuiltinCatalog().Get("gcp-a3-ultragpu-8g"), Nodes(2));
  EXPECT_EQ(model.Predict(Collective::kAllGather, 1024).protocol, NcclProtocol::kLL);
  EXPECT_EQ(model.Predict(Collective::kAllGather, size_t{4} << 20).protocol, NcclProtocol::kLL128);
  EXPECT_EQ(model.Predict(Collective::kAllGather, size_t{8} << 30).protocol, NcclProtocol::kSimple);
  // The choice is the fastest candidate, and every candidate is listed.
  const Prediction p = model.Predict(Collective::kAllReduce, size_t{1} << 20);
  ASSERT_GE(p.candidates.size(), 3u);
  for (const auto& c : p.candidates) EXPECT_GE(c.time_us, p.time_us);
}

TEST(AnalyticModel, NvlsReachesPublishedSingleNodeAndTwoNodeFigures) {
  // Azure ND H100 v5: 1-node all_reduce with NVLS 478.9 GB/s at 8 GB (platforms.md).
  const CollectiveModel h100(testing::BuiltinCatalog().Get("azure-nd-h100-v5"), Nodes(1));
  const Prediction one = h100.Predict(Collective::kAllReduce, size_t{8} << 30);
  EXPECT_EQ(one.algorithm, NcclAlgorithm::kNvls);
  EXPECT_NEAR(one.busbw, 478.9, 0.03 * 478.9);
  // GCP a4-highgpu: 2-node all_reduce 683.5 at 8 GB, above the 400 GB/s NIC total.
  const CollectiveModel b200(testing::BuiltinCatalog().Get("gcp-a4-highgpu-8g"), Nodes(2));
  const Prediction two = b200.Predict(Collective::kAllReduce, size_t{8} << 30);
  EXPECT_EQ(two.algorithm, NcclAlgorithm::kNvlsTree);
  EXPECT_NEAR(two.busbw, 683.5, 0.05 * 683.5);
}

TEST(AnalyticModel, PatWinsSmallAllGathersWithOneGpuPerNode) {
  const CollectiveModel model(Generic(1, 100, 1, 400, "IB"), Nodes(64));
  EXPECT_EQ(model.Predict(Collective::kAllGather, 1024).algorithm, NcclAlgorithm::kPat);
  EXPECT_EQ(model.Predict(Collective::kAllGather, size_t{1} << 30).algorithm, NcclAlgorithm::kRing);
}

TEST(AnalyticModel, InNetworkReductionEnablesCollNetAndMultiNodeNvls) {
  const Platform& platform = testing::BuiltinCatalog().Get("dgx-h100");
  const size_t size = size_t{16} << 30;
  ModelOptions o = Nodes(16);
  o.algorithms = {NcclAlgorithm::kRing};
  const double ring = CollectiveModel(platform, o).Predict(Collective::kAllReduce, size).busbw;
  o.algorithms = {NcclAlgorithm::kCollNetDirect, NcclAlgorithm::kCollNetChain};
  // Without in-network reduction CollNet is unavailable and NCCL falls back to the ring.
  EXPECT_EQ(CollectiveModel(platform, o).Predict(Collective::kAllReduce, size).algorithm,
            NcclAlgorithm::kRing);
  o.in_network_reduction = true;
  const Prediction collnet = CollectiveModel(platform, o).Predict(Collective::kAllReduce, size);
  EXPECT_TRUE(collnet.algorithm == NcclAlgorithm::kCollNetChain ||
              collnet.algorithm == NcclAlgorithm::kCollNetDirect);
  // The switches halve what crosses the NICs, but on H100 the node's own reduce-scatter and
  // all-gather over NVLink (2 x 7/8 of the data per GPU at 370 GB/s) bind first.
  const double nvlink_bound = 370.0 * 8 / 14 * 2 * 127 / 128;
  EXPECT_NEAR(collnet.busbw, nvlink_bound, 0.01 * nvlink_bound);
  EXPECT_GT(collnet.busbw, 1.2 * ring);
  // NVLS reduces inside the NVSwitch as well: with SHARP it is the fastest.
  o.algorithms.clear();
  const Prediction best = CollectiveModel(platform, o).Predict(Collective::kAllReduce, size);
  EXPECT_EQ(best.algorithm, NcclAlgorithm::kNvls);
  EXPECT_GT(best.busbw, 1.5 * ring);
}

TEST(AnalyticModel, AlgoAndProtoFiltersActLikeNcclAlgoAndNcclProto) {
  ModelOptions o = Nodes(4);
  o.algorithms = {NcclAlgorithm::kRing};
  o.protocols = {NcclProtocol::kSimple};
  const CollectiveModel model(testing::BuiltinCatalog().Get("dgx-h100"), o);
  for (size_t size = 8; size <= (size_t{1} << 30); size *= 8) {
    const Prediction p = model.Predict(Collective::kAllReduce, size);
    EXPECT_EQ(p.algorithm, NcclAlgorithm::kRing);
    EXPECT_EQ(p.protocol, NcclProtocol::kSimple);
    EXPECT_EQ(p.candidates.size(), 1u);
  }
  // NCCL_ALGO=Tree leaves all_gather nothing; NCCL falls back to the ring.
  ModelOptions tree = Nodes(2);
  tree.algorithms = {NcclAlgorithm::kTree};
  EXPECT_EQ(CollectiveModel(testing::BuiltinCatalog().Get("dgx-h100"), tree)
                .Predict(Collective::kAllGather, 1 << 20)
                .algorithm,
            NcclAlgorithm::kRing);
}

TEST(AnalyticModel, EveryCollectiveOnEveryCatalogPlatformIsFiniteAndPositive) {
  for (const Platform& platform : testing::BuiltinCatalog().platforms()) {
    for (int nodes : {1, 2, 8, 256}) {
      const CollectiveModel model(platform, Nodes(nodes));
      for (const auto& spec : Collectives()) {
        for (size_t size : {size_t{8}, size_t{1} << 20, size_t{1} << 33}) {
          const Prediction p = model.Predict(spec.id, size);
          EXPECT_TRUE(std::isfinite(p.time_us) && p.time_us > 0)
              << platform.name << " " << nodes << " " << spec.name << " " << size;
          EXPECT_TRUE(std::isfinite(p.busbw) && p.busbw > 0) << platform.name << spec.name;
        }
      }
    }
  }
}

TEST(AnalyticModel, SendRecvAcrossNodesIsBoundByOneNic) {
  const Platform& platform = testing::BuiltinCatalog().Get("dgx-h100");
  const CollectiveModel model(platform, Nodes(2));
  const Prediction p = model.Predict(Collective::kSendRecv, size_t{8} << 30);
  EXPECT_LE(p.busbw, platform.nic_rate_gbps / 8.0);
  EXPECT_EQ(p.algorithm, NcclAlgorithm::kP2p);
}

TEST(AnalyticModel, MoreNodesNeverMakeARingFaster) {
  const Platform& platform = testing::BuiltinCatalog().Get("dgx-h100");
  ModelOptions o;
  o.algorithms = {NcclAlgorithm::kRing};
  double previous = 0;
  for (int nodes : {2, 4, 16, 64, 256}) {
    o.nodes = nodes;
    const double t = CollectiveModel(platform, o).Predict(Collective::kAllReduce, 1 << 20).time_us;
    EXPECT_GT(t, previous) << nodes;
    previous = t;
  }
}

TEST(AnalyticModel, BadScalesAndNamesAreRefusedWithTheReason) {
  const Platform& platform = testing::BuiltinCatalog().Get("dgx-h100");
  EXPECT_THROW(CollectiveModel(platform, Nodes(0)), UsageError);
  ModelOptions sharp = Nodes(4);
  sharp.in_network_reduction = true;
  try {
    CollectiveModel(testing::BuiltinCatalog().Get("gcp-a3-ultragpu-8g"), sharp);
    FAIL() << "SHARP on RoCE was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("InfiniBand"), std::string::npos) << e.what();
  }
  try {
    CollectiveModel(Generic(1, 100, 1, 400, "IB"), Nodes(1));
    FAIL() << "a single rank was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("single rank"), std::string::npos) << e.what();
  }
  try {
    ParseAlgorithm("ring2");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("NVLSTree"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ParseAlgorithm("nvlstree"), NcclAlgorithm::kNvlsTree);
  EXPECT_EQ(ParseProtocol("ll128"), NcclProtocol::kLL128);
  EXPECT_THROW(ParseProtocol("LL64"), UsageError);
  EXPECT_THROW(ParseArch("pascal"), UsageError);
  EXPECT_EQ(ArchOfGpu("NVIDIA H200"), GpuArch::kHopper);
  EXPECT_EQ(ArchOfGpu("NVIDIA GB200"), GpuArch::kBlackwell);
  EXPECT_EQ(ArchOfGpu("NVIDIA A100-SXM4-80GB"), GpuArch::kAmpere);
  EXPECT_FALSE(ArchOfGpu("unspecified").has_value());
}

}  // namespace
}  // namespace fabricscope
