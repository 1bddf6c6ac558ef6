// Two sets of runs side by side, size by size: busbw of each, the ratio, and whether the
// difference is more than noise.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/result.h"

namespace fabricscope {

// Which busbw of a row stands for its size.
enum class PlacementChoice { kBoth, kOutOfPlace, kInPlace };

// How to compare. Defaults: both placements, a 5% threshold, significance at 5%.
struct CompareOptions {
  PlacementChoice placement = PlacementChoice::kBoth;
  // A size is slower (a regression) when B / A < 1 - threshold, faster when > 1 + threshold,
  // and, with repeats on both sides, only when the difference is also significant.
  double threshold = 0.05;
  // Family-wise significance level of the per-size Welch t-tests (Holm-corrected over the
  // sizes of a test, so that one noisy size in a sweep of 30 is not a regression).
  double alpha = 0.05;
  size_t min_size = 0;  // sizes below this are shown but never judged (latency noise)
};

// What one size's comparison concluded.
enum class Verdict {
  kSame,       // within the threshold
  kFaster,     // B above A by more than the threshold (and significant, when testable)
  kSlower,     // B below A by more than the threshold (and significant, when testable)
  kNoise,      // beyond the threshold but not significant
  kNotJudged,  // below min_size, or a busbw of 0 on either side
};

std::string_view NameOf(Verdict verdict);

// One size of one test.
struct SizeComparison {
  size_t size = 0;
  std::vector<double> a;  // busbw samples of side A (one per run, or per -N cycle)
  std::vector<double> b;
  double a_mean = 0;
  double b_mean = 0;
  std::optional<double> ratio;    // b_mean / a_mean; empty when a_mean is 0
  std::optional<double> p_value;  // Welch's two-sided p, Holm-adjusted; needs 2+ samples a side
  Verdict verdict = Verdict::kSame;
};

// One collective (with its type and op) present on both sides.
struct TestComparison {
  std::string collective;
  std::string type;
  std::string op;
  std::vector<SizeComparison> sizes;    // sizes present on both sides, ascending
  std::optional<double> geomean_ratio;  // over the judged sizes
  int slower = 0;
  int faster = 0;
  bool tested = false;  // every judged size had repeats on both sides
};

// The whole comparison.
struct Comparison {
  std::string label_a;
  std::string label_b;
  CompareOptions options;
  std::vector<TestComparison> tests;
  std::vector<std::string> notes;  // tests on one side only, single-run caveats
  bool Regressed() const;          // any size judged slower
};

// Compares the rows of `a` against those of `b`, grouped by (collective, type, op, size).
// Throws UsageError when the two sides share no test.
Comparison Compare(const std::vector<RunResult>& a, const std::vector<RunResult>& b,
                   const std::string& label_a, const std::string& label_b,
                   const CompareOptions& options = {});

// A registry entry: an output format of a comparison.
struct ComparisonFormat {
  std::string_view name;
  std::string_view description;
  std::string (*render)(const Comparison& comparison);
};

// text and md (the published GPUDirect-TCPX table's shape), json, csv.
const std::vector<ComparisonFormat>& ComparisonFormats();
const ComparisonFormat& FindComparisonFormat(std::string_view name);

}  // namespace fabricscope
