// Doctor under a launcher: real processes of the real binary, started the torchrun way
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or by mpirun, each reading its own node
// tree; rank 0 gathers the reports and names the node that drifted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "doctor/fixture.h"
#include "doctor/process.h"

namespace fabricscope::doctor::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class MultiNodeTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TestDir("multi"); }
  void TearDown() override {
    for (Child& c : children_) {
      if (c.exit_code < 0) Wait(c, std::chrono::seconds(1));
    }
    trees_.clear();
    fs::remove_all(dir_);
  }
  // Starts rank `rank` of `world` on its own tree with extra environment.
  Child& Start(int rank, int world, const std::string& root, std::vector<std::string> flags,
               std::map<std::string, std::string> env = {}) {
    env["RANK"] = std::to_string(rank);
    env["WORLD_SIZE"] = std::to_string(world);
    env["LOCAL_RANK"] = "0";
    env["MASTER_ADDR"] = "127.0.0.1";
    // Process 0's store binds a port of its own and publishes it; the others read it.
    env["MASTER_PORT"] = "0";
    env["FABRICSCOPE_PORT_FILE"] = (dir_ / "port").string();
    std::vector<std::string> argv = {FABRICSCOPE_BINARY, "doctor", "--root", root};
    argv.insert(argv.end(), flags.begin(), flags.end());
    children_.push_back(Spawn(argv, env, dir_, "rank" + std::to_string(rank)));
    return children_.back();
  }
  std::string Tree(const std::string& name, const NodeSpec& spec) {
    trees_.push_back(std::make_unique<NodeTree>(dir_ / name, spec));
    return trees_.back()->root().string();
  }
  fs::path dir_;
  std::vector<Child> children_;
  std::vector<std::unique_ptr<NodeTree>> trees_;
};

TEST_F(MultiNodeTest, RankZeroNamesTheDriftedNode) {
  NodeSpec a, b, c;
  a.host = "node-a";
  b.host = "node-b";
  c.host = "node-c";
  c.rate[3] = "200 Gb/sec (2X NDR)";  // node-c's mlx5_3 trained down
  c.driver_version = "535.104.05";    // and it runs another driver
  const std::map<std::string, std::string> env = {{"NCCL_IB_HCA", "mlx5"}};
  std::map<std::string, std::string> drifted_env = env;
  drifted_env["NCCL_ALGO"] = "Tree";  // a variable only node-c sets
  Start(0, 3, Tree("a", a), {"--format", "json", "--timeout", "60"}, env);
  Start(1, 3, Tree("b", b), {"--format", "json", "--timeout", "60"}, env);
  Start(2, 3, Tree("c", c), {"--format", "json", "--timeout", "60"}, drifted_env);
  std::vector<Outcome> outcomes;
  for (Child& child : children_) outcomes.push_back(Wait(child));
  EXPECT_EQ(outcomes[0].exit_code, 1) << outcomes[0].err;  // the cluster has CRITICAL drift
  EXPECT_EQ(outcomes[1].exit_code, 0) << outcomes[1].err;  // node-b alone is healthy
  EXPECT_EQ(outcomes[2].exit_code, 1) << outcomes[2].err;  // node-c's own port is CRITICAL
  EXPECT_TRUE(outcomes[1].out.empty());
  EXPECT_TRUE(outcomes[2].out.empty());

  const json j = json::parse(outcomes[0].out);
  ASSERT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["nodes"][1]["host"], "node-b");
  EXPECT_EQ(j["nodes"][2]["rank"], 2);
  EXPECT_EQ(j["nodes"][2]["status"], "CRITICAL");
  std::map<std::string, json> drift;
  for (const json& d : j["drift"]) drift[d["where"]] = d;
  for (const char* key : {"ib.mlx5_3/1.rate", "driver.nvidia", "env.NCCL_ALGO"}) {
    ASSERT_TRUE(drift.count(key)) << key << "\n" << j["drift"].dump(2);
    const json& d = drift[key];
    EXPECT_EQ(d["source"], "drift") << key;
    EXPECT_EQ(d["figures"]["majority_count"], 2) << key;
    EXPECT_EQ(d["figures"]["node_count"], 3) << key;
    ASSERT_EQ(d["outliers"].size(), 1u) << key;
    EXPECT_EQ(d["outliers"][0]["rank"], 2) << key;
    EXPECT_EQ(d["outliers"][0]["host"], "node-c") << key;
    ASSERT_EQ(d["evidence"].size(), 1u) << key;
    EXPECT_EQ(d["evidence"][0].get<std::string>().rfind("rank 2 (node-c): ", 0), 0u) << key;
  }
  EXPECT_EQ(drift["ib.mlx5_3/1.rate"]["majority"], "400 Gb/sec (4X NDR)");
  EXPECT_EQ(drift["ib.mlx5_3/1.rate"]["outliers"][0]["value"], "200 Gb/sec (2X NDR)");
  EXPECT_EQ(drift["ib.mlx5_3/1.rate"]["what"],
            "1 of 3 node(s) differ from the majority: 400 Gb/sec (4X NDR) on 2 of 3");
  EXPECT_EQ(drift["env.NCCL_ALGO"]["severity"], "CRITICAL");
  EXPECT_EQ(drift["env.NCCL_ALGO"]["majority"], "(absent)");
  EXPECT_EQ(drift["driver.nvidia"]["severity"], "WARN");
  EXPECT_EQ(j["findings_version"], kFindingsVersion);
  // Only node-c differs: no fact names another node.
  for (const json& d : j["drift"]) {
    for (const json& o : d["outliers"]) EXPECT_EQ(o["rank"], 2) << d.dump();
  }
}

TEST_F(MultiNodeTest, TextReportOfTwoNodesWithoutMajority) {
  NodeSpec a, b;
  a.host = "node-a";
  b.host = "node-b";
  b.shm_option = "size=512m";
  Start(0, 2, Tree("a", a), {});
  Start(1, 2, Tree("b", b), {});
  const Outcome zero = Wait(children_[0]);
  const Outcome one = Wait(children_[1]);
  EXPECT_EQ(zero.exit_code, 0) << zero.err;  // WARN only
  EXPECT_EQ(one.exit_code, 0) << one.err;
  const std::string& out = zero.out;
  EXPECT_NE(out.find("# fabricscope doctor 0.1.0: 2 nodes"), std::string::npos) << out;
  EXPECT_NE(out.find("RANK  HOST    STATUS      OK  INFO  WARN  CRITICAL"), std::string::npos)
      << out;
  EXPECT_NE(out.find("1     node-b  WARN         7     3     1         0"), std::string::npos)
      << out;
  // The drift in the findings' text form, the source column as wide as the longest check.
  const std::string under(14 + 16 + 2, ' ');
  EXPECT_NE(out.find("WARN          drift             shm.size: no value is held by a majority "
                     "of the 2 nodes\n" +
                     under + "evidence: rank 0 (node-a): 64 GiB\n" + under +
                     "evidence: rank 1 (node-b): 512 MiB\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("# rank 1 (node-b, root"), std::string::npos) << out;
  EXPECT_EQ(out.find("# rank 0 (node-a"), std::string::npos) << out;  // nothing to show there
  EXPECT_NE(out.find("WARN          shm               /dev/shm is 512 MiB, below the 1 GiB"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("OK            shm"), std::string::npos) << out;  // problems only
  EXPECT_NE(out.find("# 2 nodes, 1 drifted fact(s): WARN"), std::string::npos) << out;
}

TEST_F(MultiNodeTest, MissingRankEndsWithItsNumber) {
  Start(0, 2, Tree("a", {}), {"--timeout", "1"});
  const Outcome o = Wait(children_[0]);
  EXPECT_EQ(o.exit_code, 3) << o.out << o.err;
  EXPECT_NE(o.err.find("no report from rank(s) 1 of 2"), std::string::npos) << o.err;
  EXPECT_TRUE(o.out.empty()) << o.out;
}

TEST_F(MultiNodeTest, MpirunGathersThroughMpi) {
  const std::string root = Tree("a", {});
  std::vector<std::string> argv = {FABRICSCOPE_MPIEXEC,
                                   "--allow-run-as-root",
                                   "--oversubscribe",
                                   "-np",
                                   "2",
                                   FABRICSCOPE_BINARY,
                                   "doctor",
                                   "--root",
                                   root,
                                   "--format",
                                   "json"};
  Child c = Spawn(argv,
                  {{"OMPI_MCA_btl", "self,vader"},
                   {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
                   {"OMPI_MCA_mpi_yield_when_idle", "1"},
                   // Sanitizer builds: Open MPI leaves its allocations to the OS at exit.
                   {"ASAN_OPTIONS", "detect_leaks=0"}},
                  dir_, "mpirun");
  const Outcome o = Wait(c, std::chrono::seconds(120));
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const json j = json::parse(o.out);
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][0]["rank"], 0);
  EXPECT_EQ(j["nodes"][1]["rank"], 1);
  EXPECT_TRUE(j["drift"].empty()) << j["drift"].dump(2);  // one tree, read twice
}

}  // namespace
}  // namespace fabricscope::doctor::testing
