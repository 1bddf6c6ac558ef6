// The per-test summary of a run: what matters in a table of busbw numbers, from any source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/parse.h"
#include "fabricscope/result.h"

namespace fabricscope {

// One test (one collective's block of rows in a run) reduced to the figures people quote.
struct TestAnalysis {
  std::string source;      // the run's "file:line", empty for a run measured here
  std::string tool;        // "nccl-tests", "rccl-tests", "fabricscope"
  std::string collective;  // "all_reduce"
  std::string type;        // "float"; several joined with "," when the test mixes them (-d all)
  std::string op;          // "sum", "none"; likewise
  int ranks = 0;           // 0 when the log tells neither device lines nor a rank count
  int nodes = 0;           // distinct hostnames of the device lines; 0 without them
  // What `nodes` was read from: "host names", or, when the device list was cut short,
  // "ranks / GPUs per node" (GPUs per node from the highest device index); empty when 0.
  std::string nodes_from;
  size_t rows = 0;
  // nccl-tests' rule: the mean of every busbw value, out-of-place and in-place, all rows.
  double avg_busbw = 0;
  std::optional<double> avg_busbw_printed;  // the trailer's figure, when the log had one
  // The printed average is the recomputed one, within the rounding of the printed columns:
  // false means rows are missing or were edited.
  bool avg_busbw_consistent = true;
  double peak_busbw = 0;  // the highest busbw of any row and placement
  size_t peak_size = 0;   // the size it was reached at
  // The small-message latency floor: the lowest time of any row with a non-zero size.
  std::optional<double> latency_floor_us;
  // The smallest size whose busbw (either placement) reaches half of peak_busbw.
  std::optional<size_t> half_peak_size;
  std::optional<int64_t> wrong;         // wrong elements over every row; empty when not checked
  int64_t out_of_bounds = 0;            // (row, placement) tests with any wrong element
  std::vector<std::string> transports;  // NCCL's transport lines of the run
  std::vector<std::string> notes;       // what the reader should know: an average mismatch, ...
  // Why the test failed, each in the log's own words with its "file:line" (NCCL failure and
  // WARN lines, CUDA errors, "Test failure", a trailer's "Out of bounds values : 2 FAILED", a
  // run cut off before its first row), or the count of wrong elements; empty: it did not.
  std::vector<std::string> failures;
  bool failed() const { return !failures.empty(); }
  // "ok" or "FAILED", the summary's status column.
  std::string_view status() const { return failed() ? "FAILED" : "ok"; }
};

// One TestAnalysis per collective of the run, in order of first appearance.
std::vector<TestAnalysis> Analyze(const RunResult& run);

// What counts as failed, one rule for every command that reads or runs a benchmark
// (docs/output.md, exit 1): a test with a failure in its log, a wrong element, or an
// out-of-bounds (row, placement).
bool Failed(const TestAnalysis& test);
bool AnyFailed(const std::vector<TestAnalysis>& tests);
// A run this process just measured: a test whose trailer says FAILED (nccl-tests' "Out of
// bounds values" above 0, or its average busbw under 90% of the run's minimum).
bool RunFailed(const RunResult& run);

// A registry entry: an output format of the summary. Formats for programs (json) and for
// pasting into an issue (md) carry the readers' diagnostics too; text leaves them to stderr.
struct AnalysisFormat {
  std::string_view name;
  std::string_view description;
  std::string (*render)(const std::vector<TestAnalysis>& tests,
                        const std::vector<Diagnostic>& diagnostics);
};

// text (aligned columns for people), md (a Markdown table), json, csv.
const std::vector<AnalysisFormat>& AnalysisFormats();
// Throws UsageError listing the formats.
const AnalysisFormat& FindAnalysisFormat(std::string_view name);

// "8 B", "1 KB", "1.5 MB", "8 GB" (binary units, as the published tables write them).
std::string FormatBytes(size_t bytes);

}  // namespace fabricscope
