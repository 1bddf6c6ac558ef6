// `fabricscope model` as a user runs it: the real binary, its tables, JSON and every bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ModelCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fabricscope-model-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Outcome Run(const std::string& args) {
    const fs::path out = dir_ / "stdout";
    const fs::path err = dir_ / "stderr";
    const std::string cmd = std::string(FABRICSCOPE_BINARY) + " model " + args + " >" +
                            out.string() + " 2>" + err.string() + " </dev/null";
    const int status = std::system(cmd.c_str());
    Outcome o;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    o.out = Slurp(out);
    o.err = Slurp(err);
    return o;
  }

  void ExpectRefused(const std::string& args, int code, const std::string& needle) {
    const Outcome o = Run(args);
    EXPECT_EQ(o.exit_code, code) << args << "\n" << o.err;
    EXPECT_NE(o.err.find(needle), std::string::npos) << args << "\nstderr: " << o.err;
    EXPECT_NE(o.err.find("error"), std::string::npos) << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
  }

  fs::path dir_;
};

std::vector<std::string> DataRows(const std::string& text) {
  std::vector<std::string> rows;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (!line.empty() && line[0] != '#') rows.push_back(line);
  }
  return rows;
}

TEST_F(ModelCliTest, PrintsAnNcclTestsLikeTableForACatalogPlatform) {
  const Outcome o =
      Run("--platform a3-ultragpu-8g --nodes 2 --collective all_gather -b 1K -e 8G -f 2");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("2 x gcp-a3-ultragpu-8g (16 ranks"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("NCCL 2.25.1"), std::string::npos);
  EXPECT_NE(o.out.find("size        time    algbw    busbw  algo"), std::string::npos);
  const auto rows = DataRows(o.out);
  ASSERT_EQ(rows.size(), 24u);
  const std::regex row(
      R"(^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(Ring)\s+(LL|LL128|Simple)$)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(rows.front(), m, row)) << rows.front();
  EXPECT_EQ(m[1], "1024");
  EXPECT_EQ(m[6], "LL");
  ASSERT_TRUE(std::regex_match(rows.back(), m, row)) << rows.back();
  EXPECT_EQ(m[1], "8589934592");
  EXPECT_NEAR(std::stod(m[4]), 325.7, 0.02 * 325.7);  // the catalog's published band
  EXPECT_EQ(m[6], "Simple");
}

TEST_F(ModelCliTest, JsonRowsCarryTheColumnsOtherToolsRead) {
  const Outcome o =
      Run("--gpus-per-node 8 --intra-node-busbw 370 --nics 8 --nic-rate 400 --transport RoCE "
          "--nodes 4 --collective all_reduce,all_gather -b 1M -e 1G -f 4 --format json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc["mode"], "predict");
  EXPECT_EQ(doc["platform"], "generic");
  EXPECT_EQ(doc["nranks"], 32);
  ASSERT_EQ(doc["rows"].size(), 12u);
  for (const auto& row : doc["rows"]) {
    for (const char* key : {"size", "time_us", "algbw", "busbw", "algo", "proto", "collective"}) {
      EXPECT_TRUE(row.contains(key)) << key << " in " << row.dump();
    }
    EXPECT_GT(row["time_us"].get<double>(), 0);
    EXPECT_GT(row["busbw"].get<double>(), 0);
  }
  EXPECT_NEAR(doc["params"]["net_efficiency"].get<double>(), 0.9, 1e-9);
}

TEST_F(ModelCliTest, AGenericLatencyFloorSetsTheSmallMessageTime) {
  const Outcome o =
      Run("--gpus-per-node 8 --intra-node-busbw 370 --nics 8 --nic-rate 400 --transport RoCE "
          "--latency-floor 40 --nodes 2 --collective all_gather -b 1K -e 1K --format json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto doc = nlohmann::json::parse(o.out);
  EXPECT_NEAR(doc["rows"][0]["time_us"].get<double>(), 40.0, 0.2);
}

TEST_F(ModelCliTest, AlgoAndProtoForceTheChoice) {
  const Outcome o = Run("--platform dgx-h100 --nodes 8 --algo Ring --proto Simple -b 8 -e 1G -f 8");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (const auto& row : DataRows(o.out)) {
    EXPECT_NE(row.find("Ring          Simple"), std::string::npos) << row;
  }
}

TEST_F(ModelCliTest, SimulatesAFabricAndListsTheBusiestLinks) {
  const Outcome o =
      Run("--platform dgx-h100 --nodes 16 --simulate --design classic --seed 3 -b 1G -e 1G "
          "--top-links 3");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("2-tier classic fat-tree"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("leaf-up"), std::string::npos);
  EXPECT_NE(o.out.find("busiest links"), std::string::npos);
  EXPECT_EQ(DataRows(o.out).size(), 1u);

  const Outcome j =
      Run("--platform dgx-h100 --nodes 16 --simulate --design rail-optimized -b 1M -e 1G -f 32 "
          "--format json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["mode"], "simulate");
  EXPECT_EQ(doc["fabric"]["design"], "rail-optimized");
  const auto& result = doc["results"][0];
  EXPECT_EQ(result["stalled"], false);
  EXPECT_EQ(result["flows"], 16);
  ASSERT_EQ(result["rows"].size(), 3u);
  for (const auto& row : result["rows"]) {
    for (const char* key : {"size", "time_us", "algbw", "busbw", "algo", "proto"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
  }
  EXPECT_LE(result["links"].size(), 10u);
}

TEST_F(ModelCliTest, AFailedNicLinkStallsTheSimulationAndExitsOne) {
  const Outcome o = Run("--platform dgx-h100 --nodes 4 --simulate --fail-link n1.nic0-leaf0");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.out.find("STALLED"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("n1.nic0"), std::string::npos);
  EXPECT_NE(o.err.find("cannot complete"), std::string::npos);
}

TEST_F(ModelCliTest, HelpListsTheModelAndSimulatorFlags) {
  const Outcome o = Run("--help");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* flag : {"--platform", "--nodes", "--collective", "--algo", "--proto",
                           "--simulate", "--tiers", "--design", "--routing", "--fail-link",
                           "--degrade-link", "--slow-node", "--in-network", "--format"}) {
    EXPECT_NE(o.out.find(flag), std::string::npos) << flag;
  }
}

TEST_F(ModelCliTest, BadInputIsRefusedWithWhatAndHow) {
  ExpectRefused("--nodes 2", 2, "give --platform NAME");
  ExpectRefused("--platform nope", 2, "unknown platform 'nope'");
  ExpectRefused("--platform dgx-h100 --nics 4", 2, "already describes the node");
  ExpectRefused("--gpus-per-node 8 --nics 8 --nic-rate 400", 2, "--intra-node-busbw");
  ExpectRefused("--platform dgx-h100 --nodes 0", 2, "at least 1");
  ExpectRefused("--platform dgx-h100 --algo Ring2", 2, "unknown NCCL algorithm 'Ring2'");
  ExpectRefused("--platform dgx-h100 --proto LL64", 2, "unknown NCCL protocol");
  ExpectRefused("--platform dgx-h100 --collective allreduce", 2, "allreduce");
  ExpectRefused("--platform dgx-h100 --format xml", 2, "--format 'xml'");
  ExpectRefused("--platform dgx-h100 -b 2G -e 1G", 2, "-e");
  ExpectRefused("--platform dgx-h100 --gpu-arch pascal", 2, "unknown GPU architecture");
  ExpectRefused("--platform dgx-h100 --cpu arm", 2, "unknown CPU vendor");
  ExpectRefused("--platform dgx-h100 --net-efficiency 3", 2, "--net-efficiency");
  ExpectRefused("--platform dgx-h100 --tiers 3", 2, "--simulate");
  ExpectRefused("--platform dgx-h100 --fail-link leaf0-spine0", 2, "--simulate");
  ExpectRefused("--platform a3-ultragpu-8g --nodes 4 --in-network", 2, "InfiniBand");
  ExpectRefused("--platform dgx-h100 --simulate --tiers 4", 2, "--tiers must be 2");
  ExpectRefused("--platform dgx-h100 --simulate --design dragonfly", 2, "--design 'dragonfly'");
  ExpectRefused("--platform dgx-h100 --simulate --routing random", 2, "--routing 'random'");
  ExpectRefused("--platform dgx-h100 --simulate --fail-link leaf9-spine0", 2, "no link");
  ExpectRefused("--platform dgx-h100 --simulate --degrade-link leaf0-spine0", 2, "NAME=FACTOR");
  ExpectRefused("--platform dgx-h100 --simulate --degrade-link leaf0-spine0=x", 2, "not a number");
  ExpectRefused("--platform dgx-h100 --simulate --slow-node 7=0.5", 2, "not in the fabric");
  ExpectRefused("--platform dgx-h100 --simulate --oversubscription 0.5", 2, "oversubscription");
  ExpectRefused("--platform dgx-h100 --simulate --collective alltoall", 2, "sendrecv");
  ExpectRefused("--platform dgx-h100 --simulate --qps 0", 2, "--qps");
  ExpectRefused("--platform dgx-h100 --nodes two", 2, "--nodes");
}

}  // namespace
