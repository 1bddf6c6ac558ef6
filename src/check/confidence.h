// Private: how sure a verdict from repeated runs is.
#pragma once

#include <optional>
#include <vector>

#include "fabricscope/check.h"
#include "fabricscope/statistics.h"

namespace fabricscope::check {

// The two-sided critical value, the t with P(|T| <= t) = level for `df` degrees of freedom:
// fabricscope::StudentTwoSidedQuantile under the name verdict_test's table check knows.
inline double StudentQuantile(double level, double df) {
  return StudentTwoSidedQuantile(level, df);
}

// A t-interval of the mean of `samples` at `level`, and the probability that the true mean is
// at or above `healthy`. Empty with fewer than two samples.
std::optional<VerdictConfidence> MeanInterval(const std::vector<double>& samples, double level,
                                              double healthy);

// How likely the true mean lies in [lo, hi) given the interval's samples (hi may be infinite).
double ProbabilityBetween(const VerdictConfidence& c, double lo, double hi);

}  // namespace fabricscope::check
