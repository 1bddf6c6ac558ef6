#include "analyze/stats.h"

#include <algorithm>
#include <cmath>

namespace fabricscope::analyze {

std::optional<double> WelchTTest(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const double na = static_cast<double>(a.size());
  const double nb = static_cast<double>(b.size());
  const double va = Variance(a) / na;
  const double vb = Variance(b) / nb;
  const double diff = Mean(a) - Mean(b);
  if (va + vb <= 0) return diff == 0 ? 1.0 : 0.0;
  const double t = diff / std::sqrt(va + vb);
  // Welch-Satterthwaite degrees of freedom.
  const double df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  const double p = StudentTwoSidedP(t, df);
  if (std::isnan(p)) return std::nullopt;  // NaN samples: no test, and Holm's sort stays sound
  return p;
}

std::vector<std::optional<double>> HolmAdjust(const std::vector<std::optional<double>>& p) {
  std::vector<size_t> order;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i].has_value()) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return *p[x] < *p[y]; });
  std::vector<std::optional<double>> adjusted(p.size());
  const double m = static_cast<double>(order.size());
  double running = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    // (m - k) * p, made monotone so a larger raw p never gets a smaller adjusted one.
    running = std::max(running, std::min(1.0, (m - static_cast<double>(k)) * *p[order[k]]));
    adjusted[order[k]] = running;
  }
  return adjusted;
}

}  // namespace fabricscope::analyze
