// Assertions on a results record shared by the engine's and the backends' tests.
#pragma once

#include <gtest/gtest.h>

#include "fabricscope/result.h"

namespace fabricscope::test {

// Every row has both placements, validated with no wrong element, a time, and a time per rank.
inline void ExpectAllValid(const RunResult& result) {
  ASSERT_FALSE(result.rows.empty());
  for (const ResultRow& row : result.rows) {
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      ASSERT_TRUE(half->has_value());
      ASSERT_TRUE((*half)->wrong.has_value());
      EXPECT_EQ(*(*half)->wrong, 0)
          << row.collective << " " << row.type << " " << row.redop << " root " << row.root
          << " size " << row.size << (half == &row.in_place ? " in-place" : " out-of-place");
      EXPECT_GT((*half)->time_us, 0);
      EXPECT_EQ((*half)->ranks.per_rank_us.size(), static_cast<size_t>(result.nranks));
    }
  }
}

}  // namespace fabricscope::test
