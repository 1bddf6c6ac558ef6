// Which reader a file needs, and reading files and stdin whole.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

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

}  // namespace

ParsedResults ParseResults(std::string_view text, const std::string& source,
                           const ParseOptions& options) {
  // Windows editors start files with a byte-order mark; it is not part of the first line.
  if (analyze::StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);
  if (analyze::StartsWith(text, "\x1f\x8b")) {
    return Unreadable(
        source, "gzip-compressed: decompress it first (zcat " + source + " | fabricscope analyze)");
  }
  const InputFormat format = options.format == InputFormat::kAuto ? Detect(text) : options.format;
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

ParsedResults ReadResultsFile(const std::string& path, const ParseOptions& options) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (std::cin.bad()) return Unreadable("<stdin>", "cannot read standard input");
    return ParseResults(text, "<stdin>", options);
  }
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
  // One read of the whole file into a buffer that is not zero-filled first (for a log of
  // hundreds of MB that fill costs a fifth of the parse); the parsers then work on views
  // into it. One byte more than the file's size lets the read that finds its end need no
  // growing; pipes and other streams grow it as they go.
  size_t capacity = S_ISREG(info.st_mode) ? static_cast<size_t>(info.st_size) + 1 : 65536;
  std::unique_ptr<char[]> buffer(new char[capacity]);
  size_t have = 0;
  while (true) {
    if (have == capacity) {
      std::unique_ptr<char[]> bigger(new char[capacity * 2]);
      std::memcpy(bigger.get(), buffer.get(), have);
      buffer = std::move(bigger);
      capacity *= 2;
    }
    const ssize_t n = ::read(fd, buffer.get() + have, capacity - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return Unreadable(path, SystemReason(path, error));
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  return ParseResults(std::string_view(buffer.get(), have), path, options);
}

}  // namespace fabricscope
