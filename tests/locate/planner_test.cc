// The planner: round-robin covers every pair exactly once with every node busy; quick mode
// covers each node with distinct random peers; packing keeps rounds disjoint.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"

namespace fabricscope {
namespace {

// Every round disjoint; returns how many times each node appears over all rounds.
std::vector<int> CheckDisjoint(const std::vector<Round>& rounds, int nodes) {
  std::vector<int> appearances(static_cast<size_t>(nodes), 0);
  for (const Round& round : rounds) {
    std::vector<char> busy(static_cast<size_t>(nodes), 0);
    for (const NodePair& p : round.pairs) {
      EXPECT_LT(p.a, p.b);
      EXPECT_GE(p.a, 0);
      EXPECT_LT(p.b, nodes);
      EXPECT_FALSE(busy[static_cast<size_t>(p.a)]) << "node " << p.a << " twice in a round";
      EXPECT_FALSE(busy[static_cast<size_t>(p.b)]) << "node " << p.b << " twice in a round";
      busy[static_cast<size_t>(p.a)] = busy[static_cast<size_t>(p.b)] = 1;
      ++appearances[static_cast<size_t>(p.a)];
      ++appearances[static_cast<size_t>(p.b)];
    }
  }
  return appearances;
}

class RoundRobinTest : public ::testing::TestWithParam<int> {};

TEST_P(RoundRobinTest, EveryPairOnceEveryNodeBusy) {
  const int n = GetParam();
  const std::vector<Round> rounds = RoundRobinSchedule(n);
  const bool even = n % 2 == 0;
  ASSERT_EQ(rounds.size(), static_cast<size_t>(even ? n - 1 : n));
  for (const Round& round : rounds) EXPECT_EQ(round.pairs.size(), static_cast<size_t>(n / 2));
  const std::vector<int> appearances = CheckDisjoint(rounds, n);
  for (int x = 0; x < n; ++x) EXPECT_EQ(appearances[static_cast<size_t>(x)], n - 1) << x;
  // n(n-1)/2 distinct pairs: each exactly once.
  std::vector<char> seen(static_cast<size_t>(n) * static_cast<size_t>(n), 0);
  size_t count = 0;
  for (const Round& round : rounds) {
    for (const NodePair& p : round.pairs) {
      char& cell =
          seen[static_cast<size_t>(p.a) * static_cast<size_t>(n) + static_cast<size_t>(p.b)];
      EXPECT_FALSE(cell) << p.a << "-" << p.b << " twice";
      cell = 1;
      ++count;
    }
  }
  EXPECT_EQ(count, static_cast<size_t>(n) * static_cast<size_t>(n - 1) / 2);
  if (!even) {
    // The odd node out differs every round: each node sits out exactly once.
    std::vector<int> byes(static_cast<size_t>(n), 0);
    for (const Round& round : rounds) {
      std::vector<char> busy(static_cast<size_t>(n), 0);
      for (const NodePair& p : round.pairs)
        busy[static_cast<size_t>(p.a)] = busy[static_cast<size_t>(p.b)] = 1;
      for (int x = 0; x < n; ++x)
        byes[static_cast<size_t>(x)] += busy[static_cast<size_t>(x)] ? 0 : 1;
    }
    for (int x = 0; x < n; ++x) EXPECT_EQ(byes[static_cast<size_t>(x)], 1) << x;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, RoundRobinTest,
                         ::testing::Values(2, 3, 4, 5, 6, 7, 8, 9, 16, 33, 1000, 1001, 1024));

TEST(RoundRobin, RefusesFewerThanTwoNodes) {
  EXPECT_THROW(RoundRobinSchedule(1), UsageError);
  EXPECT_THROW(RoundRobinSchedule(0), UsageError);
}

TEST(QuickSchedule, EachNodeMeetsDistinctPeersCoverageTimes) {
  for (int n : {4, 7, 64, 1000, 4097}) {
    const int k = 3;
    const std::vector<Round> rounds = QuickSchedule(n, k, 42);
    ASSERT_EQ(rounds.size(), static_cast<size_t>(k));
    const std::vector<int> appearances = CheckDisjoint(rounds, n);
    int short_nodes = 0;
    for (int x = 0; x < n; ++x) {
      const int a = appearances[static_cast<size_t>(x)];
      EXPECT_TRUE(a == k || (n % 2 == 1 && a == k - 1)) << "node " << x << ": " << a;
      short_nodes += a < k ? 1 : 0;
    }
    // With an odd count, one node sits out each round.
    EXPECT_EQ(short_nodes, n % 2 == 1 ? k : 0) << n;
    std::set<NodePair> pairs;
    for (const Round& round : rounds) pairs.insert(round.pairs.begin(), round.pairs.end());
    size_t total = 0;
    for (const Round& round : rounds) total += round.pairs.size();
    EXPECT_EQ(pairs.size(), total) << "a pair repeated for " << n << " nodes";
  }
}

TEST(QuickSchedule, SameSeedSameScheduleOtherSeedOther) {
  const auto a = QuickSchedule(100, 3, 7);
  const auto b = QuickSchedule(100, 3, 7);
  const auto c = QuickSchedule(100, 3, 8);
  ASSERT_EQ(a.size(), b.size());
  for (size_t r = 0; r < a.size(); ++r) EXPECT_EQ(a[r].pairs, b[r].pairs);
  bool differs = false;
  for (size_t r = 0; r < a.size(); ++r) differs = differs || a[r].pairs != c[r].pairs;
  EXPECT_TRUE(differs);
}

TEST(QuickSchedule, RefusesCoverageBeyondTheFullSchedule) {
  EXPECT_THROW(QuickSchedule(4, 4, 1), UsageError);  // 3 rounds cover everything
  EXPECT_THROW(QuickSchedule(4, 0, 1), UsageError);
  EXPECT_NO_THROW(QuickSchedule(4, 3, 1));
  EXPECT_NO_THROW(QuickSchedule(5, 5, 1));
}

TEST(PackRounds, FirstFitKeepsRoundsDisjoint) {
  const std::vector<NodePair> pairs = {{0, 1}, {0, 2}, {1, 2}, {3, 4}, {2, 3}, {0, 5}};
  const std::vector<Round> rounds = PackRounds(pairs);
  CheckDisjoint(rounds, 6);
  ASSERT_EQ(rounds.size(), 4u);
  EXPECT_EQ(rounds[0].pairs, (std::vector<NodePair>{{0, 1}, {3, 4}}));
  EXPECT_EQ(rounds[1].pairs, (std::vector<NodePair>{{0, 2}}));
  EXPECT_EQ(rounds[2].pairs, (std::vector<NodePair>{{1, 2}, {0, 5}}));
  EXPECT_EQ(rounds[3].pairs, (std::vector<NodePair>{{2, 3}}));
  size_t total = 0;
  for (const Round& r : rounds) total += r.pairs.size();
  EXPECT_EQ(total, pairs.size());
  EXPECT_TRUE(PackRounds({}).empty());
}

}  // namespace
}  // namespace fabricscope
