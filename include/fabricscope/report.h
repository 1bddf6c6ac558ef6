// Reporters turn the results record into text, JSON or CSV as rows complete.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/result.h"

namespace fabricscope {

// Receives a run as it happens. `result` always holds the header and every row so far.
class Reporter {
 public:
  virtual ~Reporter() = default;
  // The header is known (ranks, config); no rows yet.
  virtual void Begin(const RunResult& result) { (void)result; }
  // The first row of a collective is about to come.
  virtual void BeginTest(const RunResult& result, const std::string& collective) {
    (void)result;
    (void)collective;
  }
  // `row` is result.rows.back().
  virtual void Row(const RunResult& result, const ResultRow& row) {
    (void)result;
    (void)row;
  }
  // The last row of a collective came.
  virtual void EndTest(const RunResult& result, const TestSummary& summary) {
    (void)result;
    (void)summary;
  }
  // The run is over (also after an error: result.errors says what).
  virtual void End(const RunResult& result) { (void)result; }
};

// Sends every event to several reporters.
class MultiReporter : public Reporter {
 public:
  void Add(std::unique_ptr<Reporter> reporter) { reporters_.push_back(std::move(reporter)); }
  void Begin(const RunResult& result) override;
  void BeginTest(const RunResult& result, const std::string& collective) override;
  void Row(const RunResult& result, const ResultRow& row) override;
  void EndTest(const RunResult& result, const TestSummary& summary) override;
  void End(const RunResult& result) override;

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
};

// A registry entry: a --format name -> a reporter writing to a stream.
struct ReporterEntry {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<Reporter> (*make)(std::ostream& out);
};

// text (nccl-tests layout), json (nccl-tests -J version 3 plus fabricscope fields), csv.
const std::vector<ReporterEntry>& Reporters();
// Throws UsageError listing the formats.
std::unique_ptr<Reporter> MakeReporter(std::string_view format, std::ostream& out);

// Writes the JSON document to `path` after every row and at the end (replacing the file
// atomically), so the completed sizes survive a crash. Throws SystemError at construction
// when the path cannot be written.
std::unique_ptr<Reporter> MakeJsonFileReporter(const std::string& path);

// A one-line progress meter on a terminal (stderr); silent when `enabled` is false.
std::unique_ptr<Reporter> MakeProgressReporter(std::ostream& out, size_t total_rows);

// nccl-tests' rule: "%*.2f", then "%*.1f", then "%*.0f", then "%*.1e" (width 7) or
// "%*.0e" (width 6), the first that fits `width` characters.
std::string FormatNumber(double value, int width);

// The JSON document for a run (used by the JSON reporters and by tests).
std::string ToJson(const RunResult& result);

}  // namespace fabricscope
