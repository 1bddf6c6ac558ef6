// Robust statistics and node groups.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"

namespace fabricscope {
namespace {

TEST(Statistics, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({5}), 5);
  EXPECT_TRUE(std::isnan(Median({})));
}

TEST(Statistics, MadIgnoresOneOutlierThatWouldSwampTheStandardDeviation) {
  // Nine pairs at 10 GB/s +- 0.1 and one at 1 GB/s: the MAD stays at the noise.
  const std::vector<double> bw = {10.0, 10.1, 9.9, 10.0, 10.1, 9.9, 10.0, 10.1, 9.9, 1.0};
  EXPECT_DOUBLE_EQ(Median(bw), 10.0);
  EXPECT_NEAR(MedianAbsoluteDeviation(bw), 0.1, 1e-12);
  EXPECT_NEAR(RobustSigma(bw), 0.14826, 1e-9);
  EXPECT_TRUE(std::isnan(MedianAbsoluteDeviation({})));
}

RankInfo Rank(int rank, const std::string& host, int pid) {
  RankInfo r;
  r.rank = rank;
  r.hostname = host;
  r.pid = pid;
  return r;
}

TEST(GroupRanks, HostsProcessesAndRanks) {
  // Two processes on h1 (2 threads each), one on h2 with 2 threads, ranks out of order.
  const std::vector<RankInfo> ranks = {Rank(4, "h2", 30), Rank(0, "h1", 10), Rank(1, "h1", 10),
                                       Rank(2, "h1", 20), Rank(3, "h1", 20), Rank(5, "h2", 30)};
  const ClusterLayout hosts = GroupRanks(ranks, NodeGrouping::kHost);
  EXPECT_EQ(hosts.names, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(hosts.ranks, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5}}));
  EXPECT_EQ(hosts.rails, 2);
  ASSERT_EQ(hosts.notes.size(), 1u);
  EXPECT_NE(hosts.notes[0].find("2 to 4 ranks"), std::string::npos) << hosts.notes[0];

  const ClusterLayout procs = GroupRanks(ranks, NodeGrouping::kProcess);
  EXPECT_EQ(procs.names, (std::vector<std::string>{"h1:10", "h1:20", "h2:30"}));
  EXPECT_EQ(procs.ranks, (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}}));
  EXPECT_EQ(procs.rails, 2);
  EXPECT_TRUE(procs.notes.empty());

  const ClusterLayout each = GroupRanks(ranks, NodeGrouping::kRank);
  EXPECT_EQ(each.names.size(), 6u);
  EXPECT_EQ(each.names[4], "h2#4");
  EXPECT_EQ(each.rails, 1);
}

TEST(GroupRanks, ParsesTheGroupingNames) {
  EXPECT_EQ(ParseNodeGrouping("host"), NodeGrouping::kHost);
  EXPECT_EQ(ParseNodeGrouping("process"), NodeGrouping::kProcess);
  EXPECT_EQ(ParseNodeGrouping("rank"), NodeGrouping::kRank);
  EXPECT_THROW(ParseNodeGrouping("rack"), UsageError);
}

}  // namespace
}  // namespace fabricscope
