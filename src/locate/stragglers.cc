// Stragglers from the per-rank times of one collective. Every rank waits inside the call
// for the slowest to arrive, so the rank that arrives late spends the least time in it: a
// straggler shows as the short time among long ones. A rank held up inside the call
// (its own path slow) shows as the long time among short ones.
#include <cmath>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope {

std::vector<Straggler> FindStragglers(const RankTimes& times, const std::vector<int>& node_of_rank,
                                      const LocateOptions& options) {
  std::vector<Straggler> out;
  const std::vector<double>& t = times.per_rank_us;
  if (t.size() < 3) return out;  // no majority to call normal
  const double median = Median(t);
  const double sigma = RobustSigma(t);
  if (!(median > 0)) return out;
  const double margin = options.min_robust_z * (std::isfinite(sigma) ? sigma : 0.0);
  for (size_t r = 0; r < t.size(); ++r) {
    const double ratio = t[r] / median;
    const bool late = ratio < options.threshold && median - t[r] > margin;
    const bool held_up = ratio > 1.0 / options.threshold && t[r] - median > margin;
    if (!late && !held_up) continue;
    Straggler s;
    s.rank = static_cast<int>(r);
    s.node = r < node_of_rank.size() ? node_of_rank[r] : -1;
    s.time_us = t[r];
    s.ratio = ratio;
    s.late = late;
    out.push_back(s);
  }
  return out;
}

}  // namespace fabricscope
