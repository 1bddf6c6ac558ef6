#include "analyze/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fabricscope::analyze {

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double Variance(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double mean = Mean(values);
  double sum = 0;
  for (double v : values) sum += (v - mean) * (v - mean);
  return sum / static_cast<double>(values.size() - 1);
}

namespace {

// Lentz's method for the continued fraction of I_x(a, b) (Numerical Recipes' betacf).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr int kMaxIterations = 300;
  constexpr double kEpsilon = 1e-15;
  constexpr double kTiny = 1e-300;
  const double qab = a + b;
  const double qap = a + 1;
  const double qam = a - 1;
  double c = 1;
  double d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < kEpsilon) break;
  }
  return h;
}

}  // namespace

double IncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  // The fraction converges fast only on one side of the mean; use the symmetry otherwise.
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

double StudentTwoSidedP(double t, double df) {
  if (!std::isfinite(t)) return 0;
  if (df <= 0) return 1;
  return IncompleteBeta(df / 2, 0.5, df / (df + t * t));
}

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
  return StudentTwoSidedP(t, df);
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
