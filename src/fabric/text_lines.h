// Line iteration with line numbers, and evidence strings, for the tool-output parsers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/strings.h"

namespace fabricscope::fabric {

// Calls fn(line, number) for every line of `text` (number from 1, no '\n' or '\r').
template <typename Fn>
void ForEachLine(const std::string& text, Fn&& fn) {
  size_t start = 0;
  size_t number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    fn(line, ++number);
    start = end + 1;
  }
}

// "origin:line: text", the text trimmed: where a finding's evidence came from.
inline std::string Evidence(const std::string& origin, size_t number, const std::string& line) {
  return origin + ":" + std::to_string(number) + ": " + std::string(Trim(line));
}

// A number of a tool's output line, read with std::from_chars (ToNumber): one that does not
// fit its type, or is not a number, throws std::out_of_range, which ForEachLineSafe turns
// into a problem of that line.
template <typename T>
T NumberIn(const std::string& text, int base = 10) {
  if (const std::optional<T> value = ToNumber<T>(text, base)) return *value;
  throw std::out_of_range("'" + text.substr(0, 40) + "' is not a number that fits");
}
inline int Int(const std::string& text, int base = 10) { return NumberIn<int>(text, base); }
inline uint64_t U64(const std::string& text) { return NumberIn<uint64_t>(text); }
inline double Real(const std::string& text) { return NumberIn<double>(text); }

// As ForEachLine, but a number that does not fit (Int's out_of_range)
// makes the line a problem instead of an exception: bad input never ends the parse.
template <typename Fn>
void ForEachLineSafe(const std::string& text, const std::string& origin,
                     std::vector<std::string>& problems, Fn&& fn) {
  ForEachLine(text, [&](const std::string& line, size_t number) {
    try {
      fn(line, number);
    } catch (const std::logic_error&) {
      problems.push_back(Evidence(origin, number, line) + " (a number out of range)");
    }
  });
}

}  // namespace fabricscope::fabric
