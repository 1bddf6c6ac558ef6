// The statistics compare needs: Welch's t-test and Holm's correction.
#pragma once

#include <optional>
#include <vector>

namespace fabricscope::analyze {

double Mean(const std::vector<double>& values);
// Sample variance (n - 1); 0 for fewer than two values.
double Variance(const std::vector<double>& values);

// Regularized incomplete beta function I_x(a, b), by its continued fraction.
double IncompleteBeta(double a, double b, double x);

// P(|T| >= |t|) for Student's t with `df` degrees of freedom.
double StudentTwoSidedP(double t, double df);

// Welch's two-sided t-test of equal means (unequal variances); empty with fewer than two
// samples on a side. Two constant samples give 0 when their means differ, 1 when not.
std::optional<double> WelchTTest(const std::vector<double>& a, const std::vector<double>& b);

// Holm-Bonferroni: adjusted p-values, in the input's order, that control the family-wise
// error rate when each is compared with alpha. Empty entries stay empty.
std::vector<std::optional<double>> HolmAdjust(const std::vector<std::optional<double>>& p);

}  // namespace fabricscope::analyze
