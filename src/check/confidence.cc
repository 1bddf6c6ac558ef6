#include "check/confidence.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "analyze/stats.h"

namespace fabricscope::check {
namespace {

double StandardError(const VerdictConfidence& c) {
  return c.samples > 0 ? c.stddev / std::sqrt(static_cast<double>(c.samples)) : 0;
}

}  // namespace

double StudentCdf(double t, double df) {
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  const double two_sided = analyze::StudentTwoSidedP(t, df);
  return t >= 0 ? 1.0 - two_sided / 2 : two_sided / 2;
}

double StudentQuantile(double level, double df) {
  // P(|T| >= t) falls from 1 at t = 0: bisect for the t where it reaches 1 - level. Sixty
  // halvings of [0, 1e6] leave an error far below the printed digits.
  const double tail = 1.0 - level;
  double lo = 0;
  double hi = 1e6;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (analyze::StudentTwoSidedP(mid, df) > tail) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

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
  c.mean = analyze::Mean(samples);
  c.stddev = std::sqrt(analyze::Variance(samples));
  const double n = static_cast<double>(samples.size());
  const double half = StudentQuantile(level, n - 1) * StandardError(c);
  c.low = std::max(0.0, c.mean - half);  // busbw is never negative
  c.high = c.mean + half;
  c.cv_percent = c.mean > 0 ? 100.0 * c.stddev / c.mean : 0;
  c.probability_healthy = ProbabilityBetween(c, healthy, std::numeric_limits<double>::infinity());
  return c;
}

}  // namespace fabricscope::check
