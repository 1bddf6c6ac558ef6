#include "fabricscope/collective.h"

#include <gtest/gtest.h>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

TEST(CollectiveTest, CountsFollowNcclTests) {
  // all_reduce: the whole buffer.
  auto c = FindCollective("all_reduce").counts(1024, 4, 8);
  EXPECT_EQ(c.param_count, 256u);
  EXPECT_EQ(c.send_count, 256u);
  // all_gather: per-rank count rounded down to 16 bytes; recv holds every rank's chunk.
  c = FindCollective("all_gather").counts(1000, 4, 3);
  EXPECT_EQ(c.param_count, 80u);  // 250/3 = 83 -> multiple of 4 floats = 80
  EXPECT_EQ(c.recv_count, 240u);
  EXPECT_EQ(c.send_inplace_offset, 80u);
  // reduce_scatter mirrors it.
  c = FindCollective("reduce_scatter").counts(1000, 4, 3);
  EXPECT_EQ(c.send_count, 240u);
  EXPECT_EQ(c.recv_count, 80u);
  EXPECT_EQ(c.recv_inplace_offset, 80u);
  // alltoall: per-peer count.
  c = FindCollective("alltoall").counts(1 << 20, 8, 4);
  EXPECT_EQ(c.param_count, 32768u);
  EXPECT_EQ(c.send_count, 131072u);
  // Tiny sizes round down to zero elements, and so print count 0.
  c = FindCollective("all_gather").counts(8, 4, 2);
  EXPECT_EQ(c.param_count, 0u);
  // int8: alignment is 16 elements.
  c = FindCollective("scatter").counts(100, 1, 2);
  EXPECT_EQ(c.param_count, 48u);
}

TEST(CollectiveTest, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(FindCollective("all_reduce").bus_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(FindCollective("all_reduce").bus_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(FindCollective("all_gather").bus_factor(4), 0.75);
  EXPECT_DOUBLE_EQ(FindCollective("reduce_scatter").bus_factor(2), 0.5);
  EXPECT_DOUBLE_EQ(FindCollective("broadcast").bus_factor(16), 1.0);
  EXPECT_DOUBLE_EQ(FindCollective("reduce").bus_factor(16), 1.0);
  EXPECT_DOUBLE_EQ(FindCollective("sendrecv").bus_factor(16), 1.0);
  EXPECT_DOUBLE_EQ(FindCollective("alltoall").bus_factor(4), 0.75);
  EXPECT_DOUBLE_EQ(FindCollective("gather").bus_factor(4), 0.75);
}

TEST(CollectiveTest, AlgbwNumeratorIsTheSizeColumn) {
  // all_gather's algbw divides the total (per-rank count x ranks) by the time.
  EXPECT_EQ(FindCollective("all_gather").alg_bytes(80, 4, 3), 960u);
  EXPECT_EQ(FindCollective("all_reduce").alg_bytes(256, 4, 8), 1024u);
}

TEST(CollectiveTest, ParsesNamesListsAndAll) {
  EXPECT_EQ(ParseCollectives("all").size(), 9u);
  EXPECT_EQ(ParseCollectives("all_reduce,sendrecv"),
            (std::vector<Collective>{Collective::kAllReduce, Collective::kSendRecv}));
  EXPECT_EQ(FindCollective("broadcast_perf").id, Collective::kBroadcast);
  EXPECT_THROW(ParseCollectives("allreduce"), UsageError);
  EXPECT_THROW(ParseCollectives("all_reduce,"), UsageError);
  EXPECT_TRUE(FindCollective("reduce").has_root);
  EXPECT_FALSE(FindCollective("all_gather").has_op);
}

}  // namespace
}  // namespace fabricscope
