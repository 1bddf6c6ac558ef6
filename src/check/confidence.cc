#include "check/confidence.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fabricscope/statistics.h"

namespace fabricscope::check {
namespace {

double StandardError(const VerdictConfidence& c) {
  return c.samples > 0 ? c.stddev / std::sqrt(static_cast<double>(c.samples)) : 0;
}

}  // namespace

double ProbabilityBetween(const VerdictConfidence& c, double lo, double hi) {
  const double se = StandardError(c);
  const double df = static_cast<double>(c.samples) - 1;
  if (!(se > 0)) return c.mean >= lo && c.mean < hi ? 1.0 : 0.0;
  // The true mean's distribution given the samples: mean + se * T.
  const double inf = std::numeric_limits<double>::infinity();
  const double upper = std::isinf(hi) ? inf : (hi - c.mean) / se;
  const double lower = std::isinf(lo) ? -inf : (lo - c.mean) / se;
  return StudentCdf(upper, df) - StudentCdf(lower, df);
}

std::optional<VerdictConfidence> MeanInterval(const std::vector<double>& samples, double level,
                                              double healthy) {
  if (samples.size() < 2) return std::nullopt;
  VerdictConfidence c;
  c.samples = samples.size();
  c.level = level;
  c.mean = Mean(samples);
  c.stddev = StdDev(samples);
  const double n = static_cast<double>(samples.size());
  const double half = StudentTwoSidedQuantile(level, n - 1) * StandardError(c);
  c.low = std::max(0.0, c.mean - half);  // busbw is never negative
  c.high = c.mean + half;
  c.cv_percent = c.mean > 0 ? 100.0 * c.stddev / c.mean : 0;
  c.probability_healthy = ProbabilityBetween(c, healthy, std::numeric_limits<double>::infinity());
  return c;
}

}  // namespace fabricscope::check
