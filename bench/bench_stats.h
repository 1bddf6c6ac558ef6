// The arithmetic every overhead benchmark shares: bandwidth as nccl-tests counts it, and
// the statistics of repeated rounds.
#pragma once

#include <cstddef>
#include <numeric>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/statistics.h"

namespace fabricscope::bench {

// all_reduce busbw in GB/s, with the engine's own factor (so the two can never disagree).
inline double AllReduceBusBw(size_t bytes, double seconds_per_op, int nranks) {
  const double algbw = static_cast<double>(bytes) / 1e9 / seconds_per_op;
  return algbw * SpecOf(Collective::kAllReduce).bus_factor(nranks);
}

inline double Sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// Mean, Median and the interpolated Quantile (0..1) are the program's own definitions.
using fabricscope::Mean;
using fabricscope::Median;
using fabricscope::Quantile;

}  // namespace fabricscope::bench
