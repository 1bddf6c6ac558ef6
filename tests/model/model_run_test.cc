// The library behind `fabricscope model`, called directly: measured runs and their errors,
// node counts, the simulated fabric and its latency, RunModel's records and each reporter.
#include "fabricscope/model_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "published_runs.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kData = std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/analyze/data/";
const std::string kGkeLog = kData + "gke_h200_all_gather.log";  // 2 x 8 H200, hosts named

const Platform& H200() { return testing::BuiltinCatalog().Get("gcp-a3-ultragpu-8g"); }

// A file under the test's temporary directory, removed with the fixture.
class ModelRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("m18-model-run-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // The GKE log with its lines passed through `keep`.
  template <typename Keep>
  std::string GkeLogWith(const std::string& name, Keep keep) {
    std::ifstream in(kGkeLog);
    std::string out;
    for (std::string line; std::getline(in, line);) {
      if (keep(line)) out += line + "\n";
    }
    return Write(name, out);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

ModelRequest H200Request() {
  ModelRequest r;
  r.platform = "gcp-a3-ultragpu-8g";
  return r;
}

std::string UsageMessage(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

// ---- measured runs ----

TEST_F(ModelRunTest, ReadMeasuredMergesTheRunAndCountsItsNodesFromTheHostNames) {
  std::ostringstream warnings;
  const MeasuredRun m = ReadMeasured("--compare", kGkeLog, H200Request(), H200(), warnings);
  EXPECT_EQ(m.flag, "--compare");
  EXPECT_EQ(m.path, kGkeLog);
  EXPECT_EQ(m.nodes, 2);
  EXPECT_EQ(m.run.nranks, 16);
  EXPECT_EQ(m.collectives, std::vector<Collective>{Collective::kAllGather});
  EXPECT_EQ(m.run.rows.size(), 24u);
  // The log does not name its collective: the reader's warning reaches the stream.
  EXPECT_NE(warnings.str().find("does not name the collective"), std::string::npos)
      << warnings.str();
}

TEST_F(ModelRunTest, OneCollectiveNamesTheCollectiveOfALogThatDoesNotSay) {
  ModelRequest r = H200Request();
  r.collective = "all_gather";
  r.collective_given = true;
  std::ostringstream warnings;
  const MeasuredRun m = ReadMeasured("--calibrate", kGkeLog, r, H200(), warnings);
  EXPECT_EQ(m.collectives, std::vector<Collective>{Collective::kAllGather});
  EXPECT_EQ(warnings.str().find("does not name the collective"), std::string::npos)
      << warnings.str();
}

TEST_F(ModelRunTest, ReadMeasuredRefusesAFileWithoutRowsNamingFlagAndPath) {
  const std::string prose = Write("prose.log", "hello\nworld\n");
  std::ostringstream warnings;
  const std::string message =
      UsageMessage([&] { ReadMeasured("--calibrate", prose, H200Request(), H200(), warnings); });
  EXPECT_NE(message.find("--calibrate " + prose + ": no result rows could be read"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("expected an nccl-tests or rccl-tests log"), std::string::npos);
  EXPECT_NE(warnings.str().find(prose), std::string::npos) << warnings.str();

  const std::string missing = Path("missing.log");
  EXPECT_NE(UsageMessage([&] {
              ReadMeasured("--compare", missing, H200Request(), H200(), warnings);
            }).find("--compare " + missing + ": no result rows"),
            std::string::npos);
  EXPECT_NE(warnings.str().find("cannot read"), std::string::npos) << warnings.str();
}

TEST_F(ModelRunTest, CompareKeepsOnlyTheCollectivesAsked) {
  // A log that names its collective (the GKE log does not: one --collective would name it).
  std::ifstream in(kGkeLog);
  const std::string log = Write("named.log", "# Collective test starting: all_gather_perf\n" +
                                                 std::string(std::istreambuf_iterator<char>(in),
                                                             std::istreambuf_iterator<char>()));
  ModelRequest r = H200Request();
  r.collective = "all_reduce";
  r.collective_given = true;
  std::ostringstream warnings;
  const std::string message =
      UsageMessage([&] { ReadMeasured("--compare", log, r, H200(), warnings); });
  EXPECT_NE(message.find("it has no rows of --collective all_reduce (it has all_gather)"),
            std::string::npos)
      << message;
}

TEST_F(ModelRunTest, RowsOfACollectiveTheModelDoesNotCoverAreRefusedWhenNothingElseIsLeft) {
  // fabricscope's CSV with a collective name the model does not know.
  const std::string csv = Write("other.csv",
                                "collective,size,count,type,redop,root,oop_time_us,oop_algbw,"
                                "oop_busbw,oop_wrong,ip_time_us,ip_algbw,ip_busbw,ip_wrong\n"
                                "hypercube,1024,256,float,sum,-1,10,0.1,0.1,0,10,0.1,0.1,0\n");
  std::ostringstream warnings;
  const std::string message =
      UsageMessage([&] { ReadMeasured("--compare", csv, H200Request(), H200(), warnings); });
  // Either the reader refuses the unknown name or the model does: both name the file.
  EXPECT_NE(message.find("--compare " + csv + ": "), std::string::npos) << message;
}

TEST_F(ModelRunTest, NodeCountComesFromHostNamesElseTheFlag) {
  std::ostringstream warnings;
  MeasuredRun m = ReadMeasured("--compare", kGkeLog, H200Request(), H200(), warnings);
  EXPECT_EQ(NodeCountOf(m, 0, H200()), 2);
  EXPECT_EQ(NodeCountOf(m, 2, H200()), 2);
  EXPECT_NE(UsageMessage([&] {
              NodeCountOf(m, 3, H200());
            }).find("the run names 2 hosts, but --measured-nodes says 3: drop --measured-nodes"),
            std::string::npos);
  EXPECT_EQ(UsageMessage([&] { NodeCountOf(m, -1, H200()); }),
            "--measured-nodes must be at least 1");

  for (auto& rank : m.run.ranks) rank.hostname.clear();
  const std::string unknown = UsageMessage([&] { NodeCountOf(m, 0, H200()); });
  EXPECT_NE(unknown.find("does not say how many nodes it ran on"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("(its 16 ranks on full nodes of 8 GPUs: --measured-nodes 2)"),
            std::string::npos)
      << unknown;
  EXPECT_EQ(NodeCountOf(m, 2, H200()), 2);
  const std::string wrong = UsageMessage([&] { NodeCountOf(m, 4, H200()); });
  EXPECT_NE(wrong.find("the run has 16 ranks, but 4 nodes of gcp-a3-ultragpu-8g (8 GPUs each) "
                       "make 32"),
            std::string::npos)
      << wrong;
}

TEST_F(ModelRunTest, ALogWithoutHostsNeedsMeasuredNodes) {
  const std::string log = GkeLogWith(
      "nohosts.log", [](const std::string& line) { return line.find(" on nccl-") == line.npos; });
  ModelRequest r = H200Request();
  std::ostringstream warnings;
  EXPECT_NE(UsageMessage([&] {
              ReadMeasured("--compare", log, r, H200(), warnings);
            }).find("give --measured-nodes N"),
            std::string::npos);
  r.measured_nodes = 2;
  EXPECT_EQ(ReadMeasured("--compare", log, r, H200(), warnings).nodes, 2);
}

TEST_F(ModelRunTest, PlacementsAreTheWantedHalvesWithTimedRows) {
  EXPECT_EQ(WantedPlacements("both"),
            (std::vector<Placement>{Placement::kOutOfPlace, Placement::kInPlace}));
  EXPECT_EQ(WantedPlacements("in"), std::vector<Placement>{Placement::kInPlace});
  EXPECT_EQ(UsageMessage([] { WantedPlacements("up"); }),
            "--placement 'up': choose both, out or in");
  EXPECT_EQ(PlacementName(Placement::kInPlace), "in-place");

  std::ostringstream warnings;
  ModelRequest r = H200Request();
  const MeasuredRun m = ReadMeasured("--compare", kGkeLog, r, H200(), warnings);
  EXPECT_EQ(PlacementsOf(r, m, 0).size(), 2u);
  r.placement = "out";
  r.min_size = "100G";
  EXPECT_EQ(UsageMessage([&] { PlacementsOf(r, m, size_t{100} << 30); }),
            "--compare " + kGkeLog +
                ": no --placement out row with a time at or above --min-size 100G to read");
}

// ---- the simulated fabric ----

TEST_F(ModelRunTest, TheSimulatedFabricHasThePlatformsNicsAtTheModelsEfficiency) {
  const Platform& platform = testing::BuiltinCatalog().Get("dgx-h100");
  ModelOptions options;
  options.nodes = 16;
  const CollectiveModel model(platform, options);
  ModelRequest r;
  r.tiers = 3;
  r.leaves_per_pod = 4;
  r.design = "classic";
  const sim::FabricOptions fo = FabricFor(r, platform, model);
  EXPECT_EQ(fo.nodes, 16);
  EXPECT_EQ(fo.gpus_per_node, platform.gpus_per_node);
  EXPECT_EQ(fo.nics_per_node, platform.nics);
  EXPECT_DOUBLE_EQ(fo.nic_gbs, platform.nic_rate_gbps / 8.0 * model.params().net_efficiency);
  EXPECT_DOUBLE_EQ(fo.uplink_gbs, fo.nic_gbs);
  EXPECT_DOUBLE_EQ(fo.nvlink_gbs, model.intra_busbw());
  EXPECT_EQ(fo.tiers, 3);
  EXPECT_EQ(fo.leaves_per_pod, 4);
  EXPECT_EQ(fo.design, sim::FabricDesign::kClassic);

  r.design = "mesh";
  EXPECT_NE(UsageMessage([&] { FabricFor(r, platform, model); }).find("mesh"), std::string::npos);
  Platform single = platform;
  single.nics = 0;
  ModelOptions one;
  one.nodes = 1;
  EXPECT_EQ(UsageMessage([&] { FabricFor(ModelRequest{}, single, CollectiveModel(single, one)); }),
            "--simulate needs NICs: the platform has none");
}

TEST_F(ModelRunTest, TheLatencyIsThatOfTheAlgorithmTheSimulatorRuns) {
  const Platform& platform = testing::BuiltinCatalog().Get("dgx-h100");
  ModelOptions options;
  options.nodes = 4;
  options.in_network_reduction = true;
  const CollectiveModel model(platform, options);
  auto latency_of = [&](Collective c, NcclAlgorithm a) {
    for (const AlgoTime& t : model.Predict(c, 1 << 20).candidates) {
      if (t.algorithm == a) return t.latency_us;
    }
    return -1.0;
  };
  const double ring = latency_of(Collective::kAllReduce, NcclAlgorithm::kRing);
  const double collnet = latency_of(Collective::kAllReduce, NcclAlgorithm::kCollNetDirect);
  ASSERT_GT(ring, 0);
  ASSERT_GT(collnet, 0);
  EXPECT_NE(ring, collnet);
  EXPECT_DOUBLE_EQ(LatencyFor(model, Collective::kAllReduce, 1 << 20, false), ring);
  EXPECT_DOUBLE_EQ(LatencyFor(model, Collective::kAllReduce, 1 << 20, true), collnet);
  EXPECT_DOUBLE_EQ(LatencyFor(model, Collective::kSendRecv, 1 << 20, false),
                   latency_of(Collective::kSendRecv, NcclAlgorithm::kP2p));
  // NCCL_ALGO without the ring: the fastest one left.
  ModelOptions tree_only = options;
  tree_only.algorithms = {NcclAlgorithm::kTree};
  const CollectiveModel tree(platform, tree_only);
  EXPECT_DOUBLE_EQ(LatencyFor(tree, Collective::kAllReduce, 1 << 20, false),
                   tree.Predict(Collective::kAllReduce, 1 << 20).candidates.front().latency_us);
}

// ---- records and reporters ----

std::string Render(std::string_view format, const ModelRecord& record) {
  std::ostringstream out;
  FindModelReporter(format).render(record, out);
  return out.str();
}

std::vector<std::string> DataRows(const std::string& text) {
  std::vector<std::string> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') rows.push_back(line);
  }
  return rows;
}

TEST_F(ModelRunTest, TheRegistryListsTextAndJsonAndRefusesOthers) {
  std::vector<std::string> names;
  for (const ModelReporter& r : ModelReporters()) {
    names.emplace_back(r.name);
    EXPECT_FALSE(r.description.empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"text", "json"}));
  EXPECT_EQ(UsageMessage([] { FindModelReporter("xml"); }),
            "unknown --format 'xml': choose one of text, json");
}

TEST_F(ModelRunTest, APredictionRendersOneTablePerCollectiveAndOneJsonRowPerSize) {
  ModelRequest r;
  r.platform = "dgx-h100";
  r.nodes = 4;
  r.collective = "all_reduce,all_gather";
  r.min_bytes = "1K";
  r.max_bytes = "1M";
  std::ostringstream warnings;
  const ModelRecord record = RunModel(r, warnings);
  ASSERT_TRUE(std::holds_alternative<PredictionRecord>(record));
  const auto& prediction = std::get<PredictionRecord>(record);
  ASSERT_EQ(prediction.sweeps.size(), 2u);
  EXPECT_EQ(prediction.sweeps[0].rows.size(), 11u);  // 1K to 1M by 2
  EXPECT_FALSE(Stalled(record));

  const std::string text = Render("text", record);
  EXPECT_EQ(text.rfind("# fabricscope model: predicted on 4 x dgx-h100 (32 ranks", 0), 0u) << text;
  EXPECT_NE(text.find("#\n# all_reduce\n#       size        time"), std::string::npos);
  EXPECT_NE(text.find("#\n# all_gather\n"), std::string::npos);
  const std::vector<std::string> rows = DataRows(text);
  ASSERT_EQ(rows.size(), 22u);
  EXPECT_EQ(rows.front().substr(0, 12), "        1024");

  const json doc = json::parse(Render("json", record));
  EXPECT_EQ(doc["mode"], "predict");
  EXPECT_EQ(doc["nranks"], 32);
  ASSERT_EQ(doc["rows"].size(), 22u);
  EXPECT_EQ(doc["rows"][0]["collective"], "all_reduce");
  EXPECT_EQ(doc["rows"][0]["size"], 1024);
  EXPECT_DOUBLE_EQ(doc["rows"][0]["time_us"].get<double>(), prediction.sweeps[0].rows[0].time_us);
  EXPECT_FALSE(doc.contains("calibration"));
}

TEST_F(ModelRunTest, ASimulationRendersItsFabricTiersAndBusiestLinks) {
  ModelRequest r;
  r.platform = "dgx-h100";
  r.nodes = 16;
  r.simulate = true;
  r.collective = "all_reduce,alltoall";
  r.max_bytes = "1G";
  r.top_links = 3;
  std::ostringstream warnings;
  const ModelRecord record = RunModel(r, warnings);
  ASSERT_TRUE(std::holds_alternative<SimulationRecord>(record));
  const auto& simulation = std::get<SimulationRecord>(record);
  EXPECT_EQ(simulation.skipped, std::vector<std::string>{"alltoall"});
  ASSERT_EQ(simulation.collectives.size(), 1u);
  EXPECT_EQ(simulation.simulated_bytes, size_t{1} << 30);
  EXPECT_FALSE(Stalled(record));

  const std::string text = Render("text", record);
  EXPECT_EQ(text.rfind("# fabricscope model --simulate: 16 x dgx-h100", 0), 0u) << text;
  EXPECT_NE(text.find("# 2-tier rail-optimized fat-tree"), std::string::npos) << text;
  EXPECT_NE(text.find("# skipped alltoall: the simulator does not break them into flows"),
            std::string::npos);
  EXPECT_NE(text.find("#  busiest links (utilization at peak, connections):"), std::string::npos);
  EXPECT_EQ(DataRows(text).size(), simulation.collectives[0].rows.size());

  const json doc = json::parse(Render("json", record));
  EXPECT_EQ(doc["mode"], "simulate");
  EXPECT_EQ(doc["fabric"]["switches"], simulation.switches);
  ASSERT_EQ(doc["results"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["links"].size(), 3u);
  EXPECT_EQ(doc["results"][0]["simulated_size"], size_t{1} << 30);
}

TEST_F(ModelRunTest, AFailedNicLinkStallsTheSimulationAndTheReportsSaySo) {
  ModelRequest r;
  r.platform = "dgx-h100";
  r.nodes = 4;
  r.simulate = true;
  r.max_bytes = "1M";
  r.fail_links = {"n1.nic0-leaf0"};
  std::ostringstream warnings;
  const ModelRecord record = RunModel(r, warnings);
  EXPECT_TRUE(Stalled(record));
  EXPECT_NE(Render("text", record).find("# STALLED: "), std::string::npos);
  const json doc = json::parse(Render("json", record));
  EXPECT_TRUE(doc["results"][0]["stalled"].get<bool>());
  EXPECT_EQ(doc["results"][0]["rows"][0]["time_us"], -1);
}

TEST_F(ModelRunTest, AComparisonRendersEveryRowAndItsErrorAndWritesTheOverlay) {
  ModelRequest r = H200Request();
  r.compare = kGkeLog;
  r.svg = Path("overlay.svg");
  std::ostringstream warnings;
  const ModelRecord record = RunModel(r, warnings);
  ASSERT_TRUE(std::holds_alternative<ComparisonRecord>(record));
  const auto& comparison = std::get<ComparisonRecord>(record);
  EXPECT_EQ(comparison.points.size(), 48u);  // 24 sizes, both halves
  EXPECT_EQ(comparison.error.points, 48u);
  EXPECT_EQ(comparison.svg, r.svg);
  std::ifstream svg(r.svg);
  std::string head(4, '\0');
  svg.read(head.data(), 4);
  EXPECT_EQ(head, "<svg");

  const std::string text = Render("text", record);
  EXPECT_EQ(text.rfind("# fabricscope model --compare " + kGkeLog + ": measured on 2 x", 0), 0u)
      << text;
  EXPECT_EQ(DataRows(text).size(), 48u);
  EXPECT_NE(text.find("# plot: " + r.svg + "\n"), std::string::npos);

  const json doc = json::parse(Render("json", record));
  EXPECT_EQ(doc["mode"], "compare");
  EXPECT_EQ(doc["rows"].size(), 48u);
  EXPECT_EQ(doc["error"]["points"], 48);
  EXPECT_EQ(doc["svg"], r.svg);
}

TEST_F(ModelRunTest, ACalibratedPredictionCarriesWhatTheFitMoved) {
  ModelRequest r = H200Request();
  r.calibrate = kGkeLog;
  r.nodes = 8;
  r.nodes_given = true;
  std::ostringstream warnings;
  const ModelRecord record = RunModel(r, warnings);
  ASSERT_TRUE(std::holds_alternative<PredictionRecord>(record));
  const auto& prediction = std::get<PredictionRecord>(record);
  ASSERT_TRUE(prediction.calibration.has_value());
  EXPECT_EQ(prediction.model.nodes(), 8);
  EXPECT_EQ(prediction.calibration->calibration.nodes, 2);
  EXPECT_EQ(prediction.sweeps.size(), 1u);  // the run's all_gather

  const std::string text = Render("text", record);
  EXPECT_NE(text.find("# calibrated on " + kGkeLog +
                      ": 2 x gcp-a3-ultragpu-8g, 48 rows "
                      "(out-of-place, in-place)\n# fitted "),
            std::string::npos)
      << text;
  const json doc = json::parse(Render("json", record));
  EXPECT_EQ(doc["calibration"]["nodes"], 2);
  EXPECT_EQ(doc["calibration"]["placements"], json({"out-of-place", "in-place"}));
  EXPECT_EQ(doc["calibration"]["points"].size(), 48u);
}

TEST_F(ModelRunTest, MeasuredRunFlagsWithoutAMeasuredRunAreRefused) {
  ModelRequest r;
  r.platform = "dgx-h100";
  r.placement = "in";
  std::ostringstream warnings;
  EXPECT_NE(UsageMessage([&] {
              RunModel(r, warnings);
            }).find("--placement, --min-size and --measured-nodes read a measured run"),
            std::string::npos);
  r.placement = "both";
  r.compare = kGkeLog;
  r.simulate = true;
  EXPECT_NE(UsageMessage([&] {
              RunModel(r, warnings);
            }).find("--compare sets the analytic model against a run; --simulate does not"),
            std::string::npos);
}

}  // namespace
}  // namespace fabricscope
