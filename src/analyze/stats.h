// The statistics compare needs on top of fabricscope/statistics.h: Welch's t-test and
// Holm's correction.
#pragma once

#include <optional>
#include <vector>

#include "fabricscope/statistics.h"

namespace fabricscope::analyze {

// The shared definitions, under the names compare's callers and tests know.
using fabricscope::IncompleteBeta;
using fabricscope::StudentTwoSidedP;

// Welch's two-sided t-test of equal means (unequal variances); empty with fewer than two
// samples on a side or a NaN among them. Two constant samples give 0 when their means
// differ, 1 when not.
std::optional<double> WelchTTest(const std::vector<double>& a, const std::vector<double>& b);

// Holm-Bonferroni: adjusted p-values, in the input's order, that control the family-wise
// error rate when each is compared with alpha. Empty entries stay empty.
std::vector<std::optional<double>> HolmAdjust(const std::vector<std::optional<double>>& p);

}  // namespace fabricscope::analyze
