// The arithmetic every overhead benchmark shares: bandwidth as nccl-tests counts it, and
// the statistics of repeated rounds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "fabricscope/collective.h"

namespace fabricscope::bench {

// all_reduce busbw in GB/s, with the engine's own factor (so the two can never disagree).
inline double AllReduceBusBw(size_t bytes, double seconds_per_op, int nranks) {
  const double algbw = static_cast<double>(bytes) / 1e9 / seconds_per_op;
  return algbw * SpecOf(Collective::kAllReduce).bus_factor(nranks);
}

inline double Sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

inline double Mean(const std::vector<double>& v) { return Sum(v) / static_cast<double>(v.size()); }

// The q-quantile (0..1) with linear interpolation between order statistics.
inline double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

inline double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

}  // namespace fabricscope::bench
