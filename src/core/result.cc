// Trailer arithmetic shared by every reporter, so text, JSON and the exit code agree.
#include "fabricscope/result.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace fabricscope {
namespace {

// Running sums for one trailer; kept apart from TestSummary so the mean is taken once, at
// the end, over full-precision values (nccl-tests averages the unrounded busbw).
struct Accumulator {
  size_t rows = 0;
  int64_t out_of_bounds = 0;
  double busbw_sum = 0;
  size_t busbw_count = 0;

  void Add(const ResultRow& row) {
    ++rows;
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (!half->has_value()) continue;
      const PlacementResult& placement = **half;
      if (placement.wrong.has_value() && *placement.wrong > 0) ++out_of_bounds;
      busbw_sum += placement.busbw;
      ++busbw_count;
    }
  }

  TestSummary Finish(const std::string& collective, const RunConfig& config) const {
    TestSummary summary;
    summary.collective = collective;
    summary.rows = rows;
    summary.out_of_bounds = out_of_bounds;
    // nccl-tests divides by zero here and prints nan; an empty test has no bandwidth at all.
    summary.avg_busbw = busbw_count > 0 ? busbw_sum / static_cast<double>(busbw_count) : 0.0;
    summary.okay = out_of_bounds == 0;
    // NCCL_TESTS_MIN_BW semantics: fail only below 90% of the requested minimum.
    if (config.min_bw > 0 && !(summary.avg_busbw >= 0.9 * config.min_bw)) summary.okay = false;
    return summary;
  }
};

}  // namespace

std::vector<TestSummary> Summarize(const RunResult& result) {
  std::vector<std::string> order;
  std::vector<Accumulator> sums;
  for (const ResultRow& row : result.rows) {
    size_t index = 0;
    while (index < order.size() && order[index] != row.collective) ++index;
    if (index == order.size()) {
      order.push_back(row.collective);
      sums.emplace_back();
    }
    sums[index].Add(row);
  }
  std::vector<TestSummary> summaries;
  summaries.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    summaries.push_back(sums[i].Finish(order[i], result.config));
  }
  return summaries;
}

TestSummary SummarizeCollective(const RunResult& result, const std::string& collective) {
  Accumulator sum;
  for (const ResultRow& row : result.rows) {
    if (row.collective == collective) sum.Add(row);
  }
  return sum.Finish(collective, result.config);
}

TestSummary SummarizeAll(const RunResult& result) {
  Accumulator sum;
  for (const ResultRow& row : result.rows) sum.Add(row);
  return sum.Finish("", result.config);
}

}  // namespace fabricscope
