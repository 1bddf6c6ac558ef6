// The statistics every part of fabricscope shares: one definition of each figure, so a
// median or a t quantile is the same number in locate, check, analyze, watch and the engine.
// Distributions come from Boost.Math (students_t, normal); the rest is plain arithmetic.
//
// Contract for an empty input: every figure of the values themselves (Median, Mean,
// Quantile, Percentile, MedianAbsoluteDeviation, RobustSigma) is NaN, so that an absent
// figure can never pass for a measured 0. Callers that show 0 for "nothing measured" say so
// at the call site. Inputs are taken as given: NaN values are not filtered out.
#pragma once

#include <vector>

namespace fabricscope {

// The true median: the middle value, or the mean of the two middle values for an even count.
double Median(std::vector<double> values);
// The arithmetic mean.
double Mean(const std::vector<double>& values);
// The sample variance (divides by n - 1); 0 for fewer than two values.
double Variance(const std::vector<double>& values);
// The sample standard deviation, sqrt(Variance); 0 for fewer than two values.
double StdDev(const std::vector<double>& values);
// The population standard deviation (divides by n): the spread of exactly these values, as
// the engine's per-iteration cv reports it; 0 for one value.
double PopulationStdDev(const std::vector<double>& values);
// The q-quantile (q in 0..1) interpolated linearly between order statistics (Hyndman and
// Fan's type 7, numpy's default): Quantile(v, 0.5) == Median(v).
double Quantile(std::vector<double> values, double q);
// The nearest-rank p-percentile (p in 0..1): the smallest value with at least p of the values
// at or below it; always one of the values. p50 of an even count is the lower middle value
// (not the Median); p99 of fewer than 100 values is the maximum.
double Percentile(std::vector<double> values, double p);
// The median absolute deviation from the median.
double MedianAbsoluteDeviation(const std::vector<double>& values);
// 1.4826 x MAD: the standard deviation the MAD implies for normal noise.
double RobustSigma(const std::vector<double>& values);

// Student's t with `df` > 0 degrees of freedom (Boost.Math's students_t). Outside the domain
// (df <= 0 or NaN, a probability outside [0, 1]) the answer is NaN, never an exception;
// the quantile of probability 0 or 1 is -inf or +inf.
// P(T <= t); 0 and 1 at -inf and +inf.
double StudentCdf(double t, double df);
// The t with P(T <= t) = p, for p in (0, 1): StudentQuantile(0.975, 10) = 2.228139.
double StudentQuantile(double p, double df);
// The t with P(T > t) = alpha: StudentQuantile(1 - alpha, df), computed without the
// rounding of 1 - alpha, so it stays exact for the tiny alphas of a Bonferroni correction.
double StudentUpperQuantile(double alpha, double df);
// The two-sided critical value: the t with P(|T| <= t) = level (level in (0, 1)).
double StudentTwoSidedQuantile(double level, double df);
// P(|T| >= |t|): 0 for an infinite t, 1 when df <= 0 (no evidence either way).
double StudentTwoSidedP(double t, double df);
// The z with P(Z > z) = alpha for the standard normal (Student's t as df goes to infinity).
double NormalUpperQuantile(double alpha);
// The regularized incomplete beta function I_x(a, b); x is clamped to [0, 1].
double IncompleteBeta(double a, double b, double x);

}  // namespace fabricscope
