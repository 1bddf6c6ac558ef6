// What every command shares to write its report: the registry of its output formats
// (--format), and where the report goes (--output FILE or the command's out stream).
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/find_format.h"

namespace fabricscope::cli {

// One output format of a command: its --format name, what --help says of it, and how it
// writes the command's record (the one thing the command computed) to a stream.
template <typename Record>
struct OutputFormat {
  std::string_view name;
  std::string_view description;
  std::function<void(const Record& record, std::ostream& out)> render;
};

// A command's formats, in the order --help lists them. Looked up with FindFormat, which
// throws UsageError "unknown --format 'X': choose one of ..." for a name not in it.
template <typename Record>
using OutputFormats = std::vector<OutputFormat<Record>>;

// A command's formats made from a library registry (entries with name and description):
// `render(entry, record, out)` writes `record` in the entry's format. The library's entries
// must outlive the result (they are static).
template <typename Record, typename Range, typename Render>
OutputFormats<Record> FormatsFrom(const Range& entries, Render render) {
  OutputFormats<Record> formats;
  for (const auto& entry : entries) {
    formats.push_back(
        {entry.name, entry.description, [&entry, render](const Record& record, std::ostream& out) {
           render(entry, record, out);
         }});
  }
  return formats;
}

// Declares --format on `app`, default `format`'s value, its help listing every entry of
// `formats` (any registry with name and description) after `lead`.
template <typename Range>
CLI::Option* AddFormatOption(CLI::App& app, std::string& format, const Range& formats,
                             std::string_view lead = "output format") {
  return app.add_option("--format", format, FormatList(lead, formats))->capture_default_str();
}

// Where a report goes: the file `path`, or `fallback` (the command's out stream) when the
// path is empty or "-". The file is written as `path`.partial, opened at construction (so a
// bad path is refused before it costs anything) and renamed to `path` when closed: a reader
// never takes a report still being written, or one whose writer was killed, for a whole one.
class Output {
 public:
  // Throws SystemError "cannot write WHAT to 'PATH': ..." when the file cannot be created.
  Output(std::ostream& fallback, const std::string& path, std::string_view what = "the report");
  // Closes (and renames) a file not closed yet, saying nothing of a failure.
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  std::ostream& stream() { return file_.is_open() ? file_ : fallback_; }
  // Flushes, then renames the file into place; throws SystemError when a write to the file
  // or the rename failed. Once closed, closing again repeats the first outcome.
  void Close();
  // Close without throwing: the error's message, empty when it succeeded.
  std::string TryClose() noexcept;

 private:
  std::ostream& fallback_;
  std::string path_;
  std::string what_;
  std::ofstream file_;
  bool direct_ = false;  // not a regular file: written in place, not renamed
  bool closed_ = false;
  std::string error_;  // of the first close
};

// `text` to the file `path`, or to `fallback` when the path is empty or "-".
void WriteOutput(std::ostream& fallback, const std::string& path, std::string_view text,
                 std::string_view what = "the report");

}  // namespace fabricscope::cli
