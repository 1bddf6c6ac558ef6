// Two sets of runs, size by size. Each row of a side is one sample of its size's busbw, so
// repeats come from several runs or files, or from -N cycles within one run.
#include "fabricscope/compare.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "analyze/stats.h"
#include "fabricscope/error.h"
#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // collective, type, op

// One side: per test, per size, the samples; tests in order of first appearance.
struct Side {
  std::vector<Key> order;
  std::map<Key, std::map<size_t, std::vector<double>>> samples;
};

std::optional<double> Sample(const ResultRow& row, PlacementChoice placement) {
  const auto& out = row.out_of_place;
  const auto& in = row.in_place;
  switch (placement) {
    case PlacementChoice::kOutOfPlace:
      return out.has_value() ? std::optional<double>(out->busbw) : std::nullopt;
    case PlacementChoice::kInPlace:
      return in.has_value() ? std::optional<double>(in->busbw) : std::nullopt;
    case PlacementChoice::kBoth:
      if (out.has_value() && in.has_value()) return (out->busbw + in->busbw) / 2;
      if (out.has_value()) return out->busbw;
      if (in.has_value()) return in->busbw;
      return std::nullopt;
  }
  return std::nullopt;
}

Side Collect(const std::vector<RunResult>& runs, PlacementChoice placement) {
  Side side;
  for (const RunResult& run : runs) {
    for (const ResultRow& row : run.rows) {
      const std::optional<double> value = Sample(row, placement);
      if (!value.has_value() || !std::isfinite(*value)) continue;
      Key key{row.collective, row.type, row.redop};
      auto it = side.samples.find(key);
      if (it == side.samples.end()) {
        side.order.push_back(key);
        it = side.samples.emplace(key, std::map<size_t, std::vector<double>>()).first;
      }
      it->second[row.size].push_back(*value);
    }
  }
  return side;
}

std::string Name(const Key& key) {
  return std::get<0>(key) + " " + std::get<1>(key) + " " + std::get<2>(key);
}

TestComparison CompareTest(const Key& key, const std::map<size_t, std::vector<double>>& a,
                           const std::map<size_t, std::vector<double>>& b,
                           const CompareOptions& options) {
  TestComparison test;
  test.collective = std::get<0>(key);
  test.type = std::get<1>(key);
  test.op = std::get<2>(key);
  std::vector<std::optional<double>> raw_p;
  for (const auto& [size, samples_a] : a) {
    const auto found = b.find(size);
    if (found == b.end()) continue;
    SizeComparison s;
    s.size = size;
    s.a = samples_a;
    s.b = found->second;
    s.a_mean = Mean(s.a);
    s.b_mean = Mean(s.b);
    if (s.a_mean > 0) s.ratio = s.b_mean / s.a_mean;
    const bool judged = size >= options.min_size && s.a_mean > 0 && s.b_mean > 0;
    s.verdict = judged ? Verdict::kSame : Verdict::kNotJudged;
    raw_p.push_back(judged ? analyze::WelchTTest(s.a, s.b) : std::nullopt);
    test.sizes.push_back(std::move(s));
  }
  // Holm over the sizes of this test: a sweep of 30 sizes at 5% each would otherwise call
  // about one size a change by chance alone.
  const std::vector<std::optional<double>> p = analyze::HolmAdjust(raw_p);
  double log_sum = 0;
  int judged = 0;
  bool all_tested = true;
  for (size_t i = 0; i < test.sizes.size(); ++i) {
    SizeComparison& s = test.sizes[i];
    if (s.verdict == Verdict::kNotJudged) continue;
    s.p_value = p[i];
    ++judged;
    log_sum += std::log(*s.ratio);
    if (!s.p_value.has_value()) all_tested = false;
    const bool slower = *s.ratio < 1 - options.threshold;
    const bool faster = *s.ratio > 1 + options.threshold;
    if (!slower && !faster) continue;
    if (s.p_value.has_value() && !(*s.p_value < options.alpha)) {
      s.verdict = Verdict::kNoise;
    } else if (slower) {
      s.verdict = Verdict::kSlower;
      ++test.slower;
    } else {
      s.verdict = Verdict::kFaster;
      ++test.faster;
    }
  }
  if (judged > 0) test.geomean_ratio = std::exp(log_sum / judged);
  test.tested = judged > 0 && all_tested;
  return test;
}

}  // namespace

// Indexed by Verdict's value, in its declaration order.
constexpr std::array<std::string_view, 5> kVerdictNames = {"same", "faster", "SLOWER", "noise",
                                                           "-"};

std::string_view NameOf(Verdict verdict) { return NameOf(verdict, kVerdictNames); }

bool Comparison::Regressed() const {
  return std::any_of(tests.begin(), tests.end(),
                     [](const TestComparison& t) { return t.slower > 0; });
}

Comparison Compare(const std::vector<RunResult>& a, const std::vector<RunResult>& b,
                   const std::string& label_a, const std::string& label_b,
                   const CompareOptions& options) {
  if (!(options.threshold >= 0 && options.threshold < 1)) {
    throw UsageError("--threshold must be a fraction from 0 to 1 (0.05 = 5%)");
  }
  if (!(options.alpha > 0 && options.alpha < 1)) {
    throw UsageError("--alpha must be between 0 and 1 (0.05 is usual)");
  }
  Comparison comparison;
  comparison.label_a = label_a;
  comparison.label_b = label_b;
  comparison.options = options;
  const Side side_a = Collect(a, options.placement);
  const Side side_b = Collect(b, options.placement);
  for (const Key& key : side_a.order) {
    const auto found = side_b.samples.find(key);
    if (found == side_b.samples.end()) {
      comparison.notes.push_back("only in " + label_a + ": " + Name(key));
      continue;
    }
    TestComparison test = CompareTest(key, side_a.samples.at(key), found->second, options);
    if (test.sizes.empty()) {
      comparison.notes.push_back(Name(key) + ": no size measured on both sides");
      continue;
    }
    if (!test.tested) {
      comparison.notes.push_back(
          Name(key) +
          ": one sample per size on at least one side, so differences beyond the "
          "threshold are reported without a significance test; give repeats (several "
          "files, a directory of them, or a run with -N) to tell noise from change");
    }
    comparison.tests.push_back(std::move(test));
  }
  for (const Key& key : side_b.order) {
    if (side_a.samples.find(key) == side_a.samples.end()) {
      comparison.notes.push_back("only in " + label_b + ": " + Name(key));
    }
  }
  if (comparison.tests.empty()) {
    std::string what;
    for (const auto& note : comparison.notes) what += "\n  " + note;
    throw UsageError(
        "nothing to compare: the two sides share no test (same collective, type "
        "and op with a size in common)" +
        what);
  }
  return comparison;
}

}  // namespace fabricscope
