// Robust statistics: the median and the median absolute deviation, which one slow node or
// one burst of traffic cannot drag the way it drags a mean and a standard deviation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope {

double Median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
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

}  // namespace fabricscope
