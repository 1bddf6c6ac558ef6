// The concrete reporters behind the registry; private to src/report.
#pragma once

#include <memory>
#include <ostream>

#include "fabricscope/report.h"
#include "fabricscope/result.h"

namespace fabricscope::report {

// nccl-tests' text layout: header, table rows as they come, trailer per test.
std::unique_ptr<Reporter> MakeTextReporter(std::ostream& out);
// The nccl-tests -J document plus fabricscope fields, written once at End().
std::unique_ptr<Reporter> MakeJsonReporter(std::ostream& out);
// One CSV line per (size, placement), streamed.
std::unique_ptr<Reporter> MakeCsvReporter(std::ostream& out);

// The trailer verdicts the way nccl-tests prints them, from one summary.
inline bool OutOfBoundsOkay(const TestSummary& summary) { return summary.out_of_bounds == 0; }
// True when no minimum is set (NCCL_TESTS_MIN_BW unset).
inline bool BandwidthOkay(const TestSummary& summary, const RunConfig& config) {
  return config.min_bw <= 0 || summary.avg_busbw >= 0.9 * config.min_bw;
}

}  // namespace fabricscope::report
