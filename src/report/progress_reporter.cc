// A one-line progress meter for a terminal: long sweeps otherwise look hung.
#include <fmt/format.h>

#include <memory>
#include <ostream>
#include <string>

#include "fabricscope/report.h"
#include "fabricscope/result.h"

namespace fabricscope {
namespace {

class ProgressReporter final : public Reporter {
 public:
  ProgressReporter(std::ostream& out, size_t total_rows) : out_(out), total_rows_(total_rows) {}

  void Row(const RunResult& result, const ResultRow& row) override {
    (void)result;
    ++rows_done_;
    // The later half is the fresher number; fall back to the other when it was not run.
    const auto& half = row.in_place.has_value() ? row.in_place : row.out_of_place;
    std::string line = fmt::format("[fabricscope] {} {}", row.collective, rows_done_);
    if (total_rows_ > 0) line += fmt::format("/{}", total_rows_);
    line += fmt::format(" rows  size {}", row.size);
    if (half.has_value()) line += fmt::format("  busbw {:.2f} GB/s", half->busbw);
    Draw(line);
  }

  void End(const RunResult& result) override {
    (void)result;
    if (shown_ == 0) return;
    // Blank the line so whatever prints next starts on a clean one.
    Draw("");
    shown_ = 0;
  }

 private:
  // Rewrites the line in place. Padding with spaces over the previous text, rather than an
  // ANSI erase, works on any terminal.
  void Draw(const std::string& line) {
    std::string text = "\r" + line;
    if (line.size() < shown_) text.append(shown_ - line.size(), ' ');
    if (line.empty()) text += '\r';
    out_ << text;
    out_.flush();
    shown_ = line.size();
  }

  std::ostream& out_;
  size_t total_rows_;
  size_t rows_done_ = 0;
  size_t shown_ = 0;  // characters of the line now on screen
};

}  // namespace

std::unique_ptr<Reporter> MakeProgressReporter(std::ostream& out, size_t total_rows) {
  return std::make_unique<ProgressReporter>(out, total_rows);
}

}  // namespace fabricscope
