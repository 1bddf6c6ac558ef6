// Collects a reader's diagnostics, keeping a bounded number of each kind so that a log with
// a million bad lines gives a readable report, not a million lines.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/parse.h"

namespace fabricscope::analyze {

// One reader's diagnostics for one file.
class DiagnosticSink {
 public:
  DiagnosticSink(std::string file, size_t max_per_kind)
      : file_(std::move(file)), max_(max_per_kind) {}

  // `kind` groups diagnostics for the bound ("malformed row", "device line", ...).
  void Add(Diagnostic::Severity severity, std::string_view kind, size_t line, std::string message);
  void Warn(std::string_view kind, size_t line, std::string message) {
    Add(Diagnostic::Severity::kWarning, kind, line, std::move(message));
  }
  void Error(std::string_view kind, size_t line, std::string message) {
    Add(Diagnostic::Severity::kError, kind, line, std::move(message));
  }
  bool HasErrors() const { return errors_ > 0; }
  const std::string& file() const { return file_; }

  // The diagnostics kept, in line order, plus one "N more" line per kind that overflowed.
  std::vector<Diagnostic> Take();

 private:
  struct Overflow {
    Diagnostic::Severity severity;
    size_t count = 0;
    size_t first_line = 0;
  };
  std::string file_;
  size_t max_;
  size_t errors_ = 0;
  std::vector<Diagnostic> kept_;
  std::map<std::string, size_t, std::less<>> per_kind_;
  std::map<std::string, Overflow, std::less<>> overflow_;
};

}  // namespace fabricscope::analyze
