// Which reader a file needs, and reading files and stdin: text logs streamed a chunk at a
// time, JSON and CSV whole.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <string>

#include "analyze/chunked_lines.h"
#include "analyze/readers.h"
#include "analyze/text_fields.h"
#include "fabricscope/inspector.h"
#include "fabricscope/parse.h"

namespace fabricscope {
namespace {

// JSON starts with '{', or with '[' and then '{' (a '[' alone starts many log lines:
// "[1,0]<stdout>:", "[2024-05-01 ...]"). CSV's first line names busbw among commas.
InputFormat Detect(std::string_view text) {
  const std::string_view body = analyze::TrimLeft(text);
  size_t i = 0;
  while (i < body.size() && (body[i] == '\n' || analyze::IsBlank(body[i]))) ++i;
  if (i < body.size() && body[i] == '{') return InputFormat::kJson;
  if (i < body.size() && body[i] == '[') {
    size_t j = i + 1;
    while (j < body.size() && (body[j] == '\n' || analyze::IsBlank(body[j]))) ++j;
    if (j == body.size() || body[j] == '{' || body[j] == ']') return InputFormat::kJson;
  }
  const std::string_view first = body.substr(i, body.find('\n', i) - i);
  if (std::count(first.begin(), first.end(), ',') >= 3 &&
      (analyze::Contains(first, "busbw") || analyze::Contains(first, "busBw"))) {
    return InputFormat::kCsv;
  }
  return InputFormat::kText;
}

std::string SystemReason(const std::string& path, int error) {
  return std::string("cannot read '") + path + "': " + std::strerror(error) +
         "; check the path and its permissions";
}

ParsedResults Unreadable(const std::string& source, std::string message) {
  ParsedResults out;
  out.source = source;
  out.diagnostics.push_back({Diagnostic::Severity::kError, source, 0, std::move(message)});
  return out;
}

// A text already split off its byte-order mark, by the reader its content needs.
ParsedResults ParseWhole(std::string_view text, const std::string& source,
                         const ParseOptions& options, InputFormat format) {
  if (format == InputFormat::kJson && LooksLikeInspectorJsonl(text)) {
    return analyze::ParseInspectorResults(text, source, options);
  }
  switch (format) {
    case InputFormat::kJson:
      return analyze::ParseJsonResults(text, source, options);
    case InputFormat::kCsv:
      return analyze::ParseCsvResults(text, source, options);
    default:
      return analyze::ParseTextResults(text, source, options);
  }
}

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

ParsedResults Gzipped(const std::string& source) {
  return Unreadable(
      source, "gzip-compressed: decompress it first (zcat " + source + " | fabricscope analyze)");
}

// Reads `fd` as ParseResults reads a text: text logs a chunk at a time (memory stays bounded
// whatever their size), JSON and CSV whole (their readers need all of it).
ParsedResults ReadStream(int fd, const std::string& source, const std::string& what,
                         const ParseOptions& options) {
  analyze::ChunkedLineReader reader(fd);
  const size_t bom = analyze::StartsWith(reader.Head(3), kByteOrderMark) ? 3 : 0;
  const std::string_view head = reader.DetectionHead().substr(bom);
  const auto failed = [&](ParsedResults out) {
    if (reader.error() != 0) {
      out.diagnostics.push_back({Diagnostic::Severity::kError, source, 0,
                                 "cannot read " + what + ": " + std::strerror(reader.error()) +
                                     "; what was read before is kept"});
    }
    return out;
  };
  if (analyze::StartsWith(head, "\x1f\x8b")) return Gzipped(source);
  const InputFormat format = options.format == InputFormat::kAuto ? Detect(head) : options.format;
  if (format == InputFormat::kJson || format == InputFormat::kCsv) {
    return failed(ParseWhole(reader.ReadToEnd().substr(bom), source, options, format));
  }
  return failed(analyze::ParseTextLines(reader, bom, source, options));
}

}  // namespace

ParsedResults ParseResults(std::string_view text, const std::string& source,
                           const ParseOptions& options) {
  // Windows editors start files with a byte-order mark; it is not part of the first line.
  if (analyze::StartsWith(text, kByteOrderMark)) text.remove_prefix(3);
  if (analyze::StartsWith(text, "\x1f\x8b")) return Gzipped(source);
  const InputFormat format = options.format == InputFormat::kAuto ? Detect(text) : options.format;
  return ParseWhole(text, source, options, format);
}

ParsedResults ReadResultsFile(const std::string& path, const ParseOptions& options) {
  if (path == "-") return ReadStream(STDIN_FILENO, "<stdin>", "standard input", options);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Unreadable(path, SystemReason(path, errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return Unreadable(path, SystemReason(path, error));
  }
  if (S_ISDIR(info.st_mode)) {
    ::close(fd);
    return Unreadable(path, "'" + path + "' is a directory: give the result files in it");
  }
  // The kernel reads ahead further for a file read front to back.
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  ParsedResults out = ReadStream(fd, path, "'" + path + "'", options);
  ::close(fd);
  return out;
}

size_t ResultsFiles::RunCount() const {
  size_t runs = 0;
  for (const ParsedResults& input : inputs) runs += input.runs.size();
  return runs;
}

std::vector<RunResult> ResultsFiles::TakeRuns() {
  std::vector<RunResult> runs;
  for (ParsedResults& input : inputs) {
    for (RunResult& run : input.runs) runs.push_back(std::move(run));
    input.runs.clear();
  }
  return runs;
}

ResultsFiles ReadResultsFiles(const std::vector<std::string>& paths, const ParseOptions& options,
                              std::ostream& diagnostics) {
  ResultsFiles files;
  for (const std::string& path : paths) {
    ParsedResults parsed = ReadResultsFile(path, options);
    for (const Diagnostic& d : parsed.diagnostics) diagnostics << d.ToString() << "\n";
    if (parsed.HasErrors()) files.errors = true;
    files.inputs.push_back(std::move(parsed));
  }
  return files;
}

}  // namespace fabricscope
