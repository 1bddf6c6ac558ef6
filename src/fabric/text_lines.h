// Line iteration with line numbers, and evidence strings, for the tool-output parsers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "analyze/text_fields.h"

namespace fabricscope::fabric {

inline std::string Trim(std::string_view s) { return std::string(analyze::Trim(s)); }

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
  return origin + ":" + std::to_string(number) + ": " + Trim(line);
}

}  // namespace fabricscope::fabric
