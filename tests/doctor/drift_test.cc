// Drift across nodes, and the JSON form reports travel in.
#include <gtest/gtest.h>

#include "fabricscope/doctor.h"
#include "fabricscope/error.h"

namespace fabricscope::doctor {
namespace {

NodeReport Node(int rank, std::map<std::string, std::string> facts) {
  NodeReport n;
  n.rank = rank;
  n.host = "node-" + std::to_string(rank);
  n.root = "/";
  n.facts = std::move(facts);
  return n;
}

TEST(DriftTest, TheOddNodeOutIsNamed) {
  const std::vector<NodeReport> nodes = {
      Node(0, {{"mtu.eth0", "9000"}, {"driver.nvidia", "535.129.03"}}),
      Node(1, {{"mtu.eth0", "9000"}, {"driver.nvidia", "535.129.03"}}),
      Node(2, {{"mtu.eth0", "1500"}, {"driver.nvidia", "535.129.03"}}),
      Node(3, {{"mtu.eth0", "9000"}, {"driver.nvidia", "535.129.03"}}),
  };
  const auto drift = FindDrift(nodes);
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].key, "mtu.eth0");
  EXPECT_EQ(drift[0].majority, "9000");
  EXPECT_EQ(drift[0].majority_count, 3);
  EXPECT_EQ(drift[0].node_count, 4);
  EXPECT_EQ(drift[0].severity, Severity::kWarn);
  ASSERT_EQ(drift[0].outliers.size(), 1u);
  EXPECT_EQ(drift[0].outliers[0].rank, 2);
  EXPECT_EQ(drift[0].outliers[0].value, "1500");

  // The same as a finding: where the fact, one line of evidence per outlier.
  const Finding f = DriftFinding(drift[0]);
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_EQ(f.source, "drift");
  EXPECT_EQ(f.where, "mtu.eth0");
  EXPECT_EQ(f.what, "1 of 4 node(s) differ from the majority: 9000 on 3 of 4");
  EXPECT_EQ(f.evidence, std::vector<std::string>{"rank 2 (node-2): 1500"});
  EXPECT_EQ(f.figures.at("majority_count"), 3);
  EXPECT_EQ(f.figures.at("node_count"), 4);
  EXPECT_FALSE(f.fix.empty());
  EXPECT_TRUE(f.decided);
}

TEST(DriftTest, MissingFactsAndNcclVariablesAreCritical) {
  const std::vector<NodeReport> nodes = {
      Node(0, {{"env.NCCL_IB_HCA", "mlx5"}}),
      Node(1, {{"env.NCCL_IB_HCA", "mlx5"}}),
      Node(2, {}),
  };
  const auto drift = FindDrift(nodes);
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].severity, Severity::kCritical);
  EXPECT_EQ(drift[0].outliers[0].value, "(absent)");
  ClusterReport cluster{nodes, drift};
  EXPECT_EQ(cluster.severity(), Severity::kCritical);
}

TEST(DriftTest, NoMajorityListsEveryNode) {
  const auto two = FindDrift({Node(0, {{"k", "a"}}), Node(1, {{"k", "b"}})});
  ASSERT_EQ(two.size(), 1u);
  EXPECT_TRUE(two[0].majority.empty());
  EXPECT_EQ(two[0].outliers.size(), 2u);
  const auto tie = FindDrift(
      {Node(0, {{"k", "a"}}), Node(1, {{"k", "a"}}), Node(2, {{"k", "b"}}), Node(3, {{"k", "b"}})});
  EXPECT_TRUE(tie[0].majority.empty());
  EXPECT_EQ(tie[0].outliers.size(), 4u);
  const Finding f = DriftFinding(tie[0]);
  EXPECT_EQ(f.what, "no value is held by a majority of the 4 nodes");
  EXPECT_EQ(f.evidence.size(), 4u);
  EXPECT_TRUE(FindDrift({Node(0, {{"k", "a"}})}).empty());
}

TEST(ReportJsonTest, RoundTrip) {
  NodeReport n = Node(5, {{"gpus", "8"}});
  Finding small{Severity::kCritical, "shm",    "too small", "/dev/shm",
                {"/proc/mounts: x"}, "grow it"};
  small.figures["bytes"] = 64 << 20;
  n.checks.push_back({"shm", "size of /dev/shm", {small}});
  n.checks.push_back({"nccl_log", "log", {{Severity::kInfo, "nccl_log", "no log"}}});
  const NodeReport back = NodeReportFromJson(NodeReportToJson(n));
  EXPECT_EQ(back.rank, 5);
  EXPECT_EQ(back.host, "node-5");
  ASSERT_EQ(back.checks.size(), 2u);
  EXPECT_EQ(back.checks[0].findings[0].severity, Severity::kCritical);
  EXPECT_EQ(back.checks[0].findings[0].evidence[0], "/proc/mounts: x");
  EXPECT_EQ(back.checks[0].findings[0].fix, "grow it");
  EXPECT_EQ(back.checks[0].findings[0].source, "shm");
  EXPECT_EQ(back.checks[0].findings[0].where, "/dev/shm");
  EXPECT_EQ(back.checks[0].findings[0].figures.at("bytes"), 64 << 20);
  EXPECT_EQ(back.checks[1].severity(), Severity::kInfo);
  EXPECT_EQ(back.facts.at("gpus"), "8");
  EXPECT_EQ(back.severity(), Severity::kCritical);
  EXPECT_THROW(NodeReportFromJson("{\"rank\": 1}"), UsageError);
  EXPECT_THROW(NodeReportFromJson("not json"), UsageError);
}

}  // namespace
}  // namespace fabricscope::doctor
