#include "fabricscope/statistics.h"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/special_functions/beta.hpp>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

namespace fabricscope {
namespace {

namespace policies = boost::math::policies;
// Bad arguments give NaN and an infinite quantile gives inf, instead of Boost's exceptions:
// the callers judge measurements, where "no answer" is a value to report, not a crash.
using Policy = policies::policy<policies::domain_error<policies::ignore_error>,
                                policies::overflow_error<policies::ignore_error>,
                                policies::evaluation_error<policies::ignore_error>>;
using StudentT = boost::math::students_t_distribution<double, Policy>;
using Normal = boost::math::normal_distribution<double, Policy>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool ValidDf(double df) { return df > 0; }  // false for NaN too

}  // namespace

double Median(std::vector<double> values) {
  if (values.empty()) return kNaN;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return kNaN;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

namespace {

double SumOfSquaredDeviations(const std::vector<double>& values) {
  const double mean = Mean(values);
  double sum = 0;
  for (double v : values) sum += (v - mean) * (v - mean);
  return sum;
}

}  // namespace

double Variance(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  return SumOfSquaredDeviations(values) / static_cast<double>(values.size() - 1);
}

double StdDev(const std::vector<double>& values) { return std::sqrt(Variance(values)); }

double PopulationStdDev(const std::vector<double>& values) {
  if (values.empty()) return kNaN;
  return std::sqrt(SumOfSquaredDeviations(values) / static_cast<double>(values.size()));
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty() || !(q >= 0 && q <= 1)) return kNaN;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty() || !(p >= 0 && p <= 1)) return kNaN;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

double MedianAbsoluteDeviation(const std::vector<double>& values) {
  const double center = Median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::abs(v - center));
  return Median(std::move(deviations));
}

double RobustSigma(const std::vector<double>& values) {
  // 1.4826 = 1 / Phi^-1(3/4): for normal noise the MAD times this is the standard deviation.
  return 1.4826 * MedianAbsoluteDeviation(values);
}

double StudentCdf(double t, double df) {
  if (!ValidDf(df) || std::isnan(t)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  return boost::math::cdf(StudentT(df), t);
}

double StudentQuantile(double p, double df) {
  if (!ValidDf(df) || !(p >= 0 && p <= 1)) return kNaN;
  return boost::math::quantile(StudentT(df), p);
}

double StudentUpperQuantile(double alpha, double df) {
  if (!ValidDf(df) || !(alpha >= 0 && alpha <= 1)) return kNaN;
  return boost::math::quantile(boost::math::complement(StudentT(df), alpha));
}

double StudentTwoSidedQuantile(double level, double df) {
  if (!(level >= 0 && level <= 1)) return kNaN;
  return StudentUpperQuantile((1.0 - level) / 2.0, df);
}

double StudentTwoSidedP(double t, double df) {
  if (std::isnan(t)) return kNaN;
  if (std::isinf(t)) return 0;
  if (!ValidDf(df)) return 1;
  return 2.0 * boost::math::cdf(boost::math::complement(StudentT(df), std::abs(t)));
}

double NormalUpperQuantile(double alpha) {
  if (!(alpha >= 0 && alpha <= 1)) return kNaN;
  return boost::math::quantile(boost::math::complement(Normal(), alpha));
}

double IncompleteBeta(double a, double b, double x) {
  return boost::math::ibeta(a, b, std::clamp(x, 0.0, 1.0), Policy());
}

}  // namespace fabricscope
