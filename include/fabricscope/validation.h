// Private: data patterns that are exact under any reduction order, and the check of results.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"

namespace fabricscope {

// One validated call, as one rank sees it.
struct ValidationCase {
  const CollectiveSpec* spec = nullptr;
  CollectiveCounts counts;
  DataType type = DataType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  int rank = 0;
  int nranks = 1;
  int root = 0;
  uint32_t seed = 0;  // a fresh pattern for each validation iteration
};

// Fills this rank's send buffer (counts.send_count elements) with its input.
void FillInput(const ValidationCase& c, void* send);

// Compares this rank's receive buffer (counts.recv_count elements) with the expected result
// and returns the number of wrong elements; ranks whose output is undefined (non-roots of
// reduce and gather) return 0.
int64_t CountWrong(const ValidationCase& c, const void* recv);

// True when this rank's receive buffer holds a defined result for the collective.
bool RankHasResult(const ValidationCase& c);

}  // namespace fabricscope
