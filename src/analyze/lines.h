// Splitting a text into numbered lines, for the readers that take a whole log in memory.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

namespace fabricscope {

// Calls fn(line, line_no, last) for each '\n'-separated line of `text` (numbered from 1;
// `last` is true for a final line with no newline after it). memchr keeps this at memory
// speed on multi-gigabyte logs.
template <typename Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  size_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    const void* found = std::memchr(text.data() + start, '\n', text.size() - start);
    const size_t end = found == nullptr
                           ? text.size()
                           : static_cast<size_t>(static_cast<const char*>(found) - text.data());
    ++line_no;
    fn(text.substr(start, end - start), line_no, found == nullptr);
    start = end + 1;
  }
}

}  // namespace fabricscope
