// The --format registry and the fan-out reporter.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/find_format.h"
#include "fabricscope/report.h"
#include "report/reporters.h"

namespace fabricscope {

void MultiReporter::Begin(const RunResult& result) {
  for (auto& reporter : reporters_) reporter->Begin(result);
}

void MultiReporter::BeginTest(const RunResult& result, const std::string& collective) {
  for (auto& reporter : reporters_) reporter->BeginTest(result, collective);
}

void MultiReporter::Row(const RunResult& result, const ResultRow& row) {
  for (auto& reporter : reporters_) reporter->Row(result, row);
}

void MultiReporter::EndTest(const RunResult& result, const TestSummary& summary) {
  for (auto& reporter : reporters_) reporter->EndTest(result, summary);
}

void MultiReporter::End(const RunResult& result) {
  for (auto& reporter : reporters_) reporter->End(result);
}

const std::vector<ReporterEntry>& Reporters() {
  // Immutable after first use; the order is the order --help lists them in.
  static const std::vector<ReporterEntry> kEntries = {
      {"text", "nccl-tests table layout (default)", &report::MakeTextReporter},
      {"json", "nccl-tests -J document (version 3) plus fabricscope fields",
       &report::MakeJsonReporter},
      {"csv", "one line per size and placement", &report::MakeCsvReporter},
  };
  return kEntries;
}

std::unique_ptr<Reporter> MakeReporter(std::string_view format, std::ostream& out) {
  return FindFormat(Reporters(), format).make(out);
}

}  // namespace fabricscope
