// CSV, the machine-readable form nccl-tests users keep asking for (NVIDIA/nccl-tests#120):
// one line per (size, placement), streamed as rows complete.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "fabricscope/report.h"
#include "fabricscope/result.h"
#include "report/reporters.h"

namespace fabricscope::report {
namespace {

constexpr std::string_view kHeader =
    "collective,size,count,type,redop,root,placement,time_us,algbw_gbps,busbw_gbps,wrong,"
    "time_min_us,time_max_us,slowest_rank,timestamp";

// RFC 4180: quote a field only when it holds a separator, a quote or a line break.
std::string Field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

// Shortest text that reads back to the same double: full precision without noise digits.
std::string Num(double value) { return fmt::format("{}", value); }

class CsvReporter final : public Reporter {
 public:
  explicit CsvReporter(std::ostream& out) : out_(out) {}

  void Begin(const RunResult& result) override {
    (void)result;
    out_ << kHeader << '\n';
    out_.flush();
  }

  void Row(const RunResult& result, const ResultRow& row) override {
    (void)result;
    WriteHalf(row, "out_of_place", row.out_of_place);
    WriteHalf(row, "in_place", row.in_place);
    out_.flush();  // Each line is complete on disk if the run dies later.
  }

  // A run that ended early says so after its rows, so the file does not read as a whole run;
  // fabricscope's CSV reader takes the line back as the run's error.
  void End(const RunResult& result) override {
    for (const std::string& error : result.errors) out_ << "# incomplete: " << error << '\n';
    out_.flush();
  }

 private:
  void WriteHalf(const ResultRow& row, std::string_view placement,
                 const std::optional<PlacementResult>& half) {
    if (!half.has_value()) return;
    const RankTimes& ranks = half->ranks;
    // An engine that gathered no per-rank times leaves RankTimes zeroed; empty cells say
    // "unknown" where zeros would claim a measurement.
    const bool have_ranks = !ranks.per_rank_us.empty() || ranks.max_us > 0;
    std::string line;
    line += Field(row.collective) + ',';
    line += std::to_string(row.size) + ',';
    line += std::to_string(row.count) + ',';
    line += Field(row.type) + ',';
    line += Field(row.redop) + ',';
    line += std::to_string(row.root) + ',';
    line += std::string(placement) + ',';
    line += Num(half->time_us) + ',';
    line += Num(half->algbw) + ',';
    line += Num(half->busbw) + ',';
    line += (half->wrong.has_value() ? std::to_string(*half->wrong) : std::string()) + ',';
    line += (have_ranks ? Num(ranks.min_us) : std::string()) + ',';
    line += (have_ranks ? Num(ranks.max_us) : std::string()) + ',';
    line += (have_ranks ? std::to_string(ranks.max_rank) : std::string()) + ',';
    line += Field(row.timestamp);
    out_ << line << '\n';
  }

  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> MakeCsvReporter(std::ostream& out) {
  return std::make_unique<CsvReporter>(out);
}

}  // namespace fabricscope::report
