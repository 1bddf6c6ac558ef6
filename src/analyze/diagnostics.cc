#include "analyze/diagnostics.h"

#include <algorithm>
#include <string>

#include "analyze/text_fields.h"

namespace fabricscope {

std::string Diagnostic::ToString() const {
  std::string text = file;
  if (line > 0) text += ":" + std::to_string(line);
  text += severity == Severity::kError ? ": error: " : ": warning: ";
  text += message;
  return text;
}

bool ParsedResults::HasErrors() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) {
    return d.severity == Diagnostic::Severity::kError;
  });
}

size_t ParsedResults::RowCount() const {
  size_t rows = 0;
  for (const RunResult& run : runs) rows += run.rows.size();
  return rows;
}

namespace analyze {

size_t LineOfOffset(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<size_t>(
                 std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

void DiagnosticSink::Add(Diagnostic::Severity severity, std::string_view kind, size_t line,
                         std::string message) {
  if (severity == Diagnostic::Severity::kError) ++errors_;
  auto it = per_kind_.find(kind);
  if (it == per_kind_.end()) it = per_kind_.emplace(std::string(kind), 0).first;
  if (it->second < max_) {
    ++it->second;
    kept_.push_back({severity, file_, line, std::move(message)});
    return;
  }
  auto over = overflow_.find(kind);
  if (over == overflow_.end()) {
    over = overflow_.emplace(std::string(kind), Overflow{severity, 0, line}).first;
  }
  ++over->second.count;
  if (severity == Diagnostic::Severity::kError) over->second.severity = severity;
}

std::vector<Diagnostic> DiagnosticSink::Take() {
  std::stable_sort(kept_.begin(), kept_.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  for (const auto& [kind, over] : overflow_) {
    kept_.push_back({over.severity, file_, over.first_line,
                     std::to_string(over.count) + " more " + kind +
                         " problems like the above, from "
                         "this line on"});
  }
  overflow_.clear();
  return std::move(kept_);
}

}  // namespace analyze
}  // namespace fabricscope
