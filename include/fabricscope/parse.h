// Readers of benchmark results from any source: nccl-tests and rccl-tests text logs (every
// layout, any launcher's prefixes), nccl-tests JSON (-J), rccl-tests JSON and CSV (-Z), and
// fabricscope's own JSON and CSV. Everything becomes the engine's results record.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/result.h"

namespace fabricscope {

// A problem found while reading: where it is and what to do about it.
struct Diagnostic {
  enum class Severity { kWarning, kError };
  Severity severity = Severity::kError;
  std::string file;  // as given ("-" reads as "<stdin>")
  size_t line = 0;   // 1-based; 0 when the problem is the whole file
  std::string message;

  // "file:line: error: message", the form compilers use, so editors can jump to it.
  std::string ToString() const;
};

// The layouts a file can hold; kAuto looks at the content.
enum class InputFormat {
  kAuto,
  kText,  // nccl-tests / rccl-tests / fabricscope text output, in any log
  kJson,  // nccl-tests -J, fabricscope JSON, rccl-tests -Z json
  kCsv,   // fabricscope CSV, rccl-tests -Z csv
};

// How to read. The defaults read anything.
// Sees the lines of a text log that are not table rows (launcher prefixes removed), for what
// else a log says: check's failure signatures read them in the same pass as the tables.
class LineObserver {
 public:
  virtual ~LineObserver() = default;
  // A text input starts: every Line until the next Begin is of `source`.
  virtual void Begin(const std::string& source) = 0;
  // `info_at`: where in `line` the reader found NCCL's "NCCL INFO" mark, which it looks for on
  // every line anyway (npos: not found, or not looked for), so that an observer need not search
  // the line for it again.
  virtual void Line(std::string_view line, size_t line_no, size_t info_at) = 0;
};

// Hands the lines a reader gives it to another observer on a thread of its own, in order, so
// that a second reader of the same text (check's failure signatures) works beside the first
// instead of after it on each line. The lines are copied into batches of 256 KiB; at most
// four batches wait, so memory stays bounded whatever the input. Finish (or the destructor)
// waits for the inner observer to see every line; an exception the inner observer throws is
// rethrown by Finish, and the lines after it are dropped, never waited on.
class BackgroundObserver : public LineObserver {
 public:
  explicit BackgroundObserver(LineObserver& inner);
  ~BackgroundObserver() override;
  BackgroundObserver(const BackgroundObserver&) = delete;
  BackgroundObserver& operator=(const BackgroundObserver&) = delete;
  void Begin(const std::string& source) override;
  void Line(std::string_view line, size_t line_no, size_t info_at) override;
  // Every line handed on and seen; rethrows what the inner observer threw. Idempotent.
  void Finish();

 private:
  struct Pipe;
  std::unique_ptr<Pipe> pipe_;
};

struct ParseOptions {
  InputFormat format = InputFormat::kAuto;
  // Names the collective of tests whose log does not say it (no "Collective test starting"
  // line, no binary name): "all_gather". Empty: inferred from the columns, with a warning
  // when the columns allow two (all_gather and alltoall look alike).
  std::string collective;
  // Diagnostics of one kind kept per file before they are summarized as "N more".
  size_t max_diagnostics_per_kind = 20;
  // Sees the text logs' other lines; nullptr: none. Not owned.
  LineObserver* observer = nullptr;
};

// What one input held: its runs in order, and what could not be read.
struct ParsedResults {
  std::string source;  // the path, or "<stdin>"
  std::string format;  // what was recognized: "nccl-tests text", "nccl-tests JSON", ...
  std::vector<RunResult> runs;
  std::vector<Diagnostic> diagnostics;

  bool HasErrors() const;
  size_t RowCount() const;
};

// Reads `text` (the content of `source`). Never throws for bad content: every problem is a
// diagnostic naming the line, and every row that could be read is kept. A file in which no
// result was found gets an error diagnostic saying what was expected.
ParsedResults ParseResults(std::string_view text, const std::string& source,
                           const ParseOptions& options = {});

// Reads a file ("-" = stdin) and parses it. A file that cannot be opened or read gives an
// error diagnostic (with the system's reason), not an exception.
ParsedResults ReadResultsFile(const std::string& path, const ParseOptions& options = {});

// What a command's inputs held, each read with ReadResultsFile, in order.
struct ResultsFiles {
  std::vector<ParsedResults> inputs;
  bool errors = false;  // an input had an error diagnostic

  size_t RunCount() const;
  // Every run of every input, in order (moved out of `inputs`).
  std::vector<RunResult> TakeRuns();
};

// Reads every path ("-" = stdin), writing each input's diagnostics to `diagnostics` as it is
// read, one per line in the "file:line: error: ..." form editors jump to. Never throws for
// bad content or unreadable files: those are diagnostics, and set `errors`.
ResultsFiles ReadResultsFiles(const std::vector<std::string>& paths, const ParseOptions& options,
                              std::ostream& diagnostics);

// The nccl-tests element types by name ("float", "bfloat16", "fp8_e4m3", ...): bytes per
// element, or 0 for a name it does not know.
size_t ElementSizeOf(std::string_view type);

}  // namespace fabricscope
