// Field splitting and number reading on string_views: the readers' inner loop, written for
// speed (no allocation, no locale) because logs of a long sweep run to hundreds of MB.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <system_error>

#include "fabricscope/strings.h"

namespace fabricscope::analyze {

inline bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

inline std::string_view TrimLeft(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsBlank(s[i])) ++i;
  return s.substr(i);
}

inline std::string_view TrimRight(std::string_view s) {
  size_t n = s.size();
  while (n > 0 && IsBlank(s[n - 1])) --n;
  return s.substr(0, n);
}

using fabricscope::Trim;  // fabricscope/strings.h

// Splits `s` on runs of blanks into `out` (at most `max` fields). Returns the number of
// fields found, which is max + 1 when there were more than `max`.
inline size_t SplitFields(std::string_view s, std::string_view* out, size_t max) {
  size_t n = 0;
  size_t i = 0;
  const size_t end = s.size();
  while (true) {
    while (i < end && IsBlank(s[i])) ++i;
    if (i == end) return n;
    const size_t start = i;
    while (i < end && !IsBlank(s[i])) ++i;
    if (n == max) return max + 1;
    out[n++] = s.substr(start, i - start);
  }
}

// A whole field as an integer ("-1", "8589934592"); false for anything else.
inline bool ParseInt(std::string_view s, int64_t& value) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const char* end = s.data() + s.size();
  const auto result = std::from_chars(s.data(), end, value);
  return result.ec == std::errc() && result.ptr == end;
}

// A whole field as a double ("28.39", "1.2e+05", "nan", "inf"); false for anything else.
inline bool ParseDouble(std::string_view s, double& value) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const char* end = s.data() + s.size();
  const auto result = std::from_chars(s.data(), end, value);
  return result.ec == std::errc() && result.ptr == end;
}

inline bool IsNumber(std::string_view s) {
  double unused = 0;
  return ParseDouble(s, unused);
}

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

inline bool Contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

// Where `needle` first occurs in `s` (npos if nowhere), found by memchr on its byte at
// `anchor`: chosen rare in logs ('F' of "INFO", 'V' of "Version"), that makes one fast pass
// over a line where find() stops at every occurrence of the needle's first byte.
inline size_t FindAnchored(std::string_view s, std::string_view needle, size_t anchor) {
  if (s.size() < needle.size()) return std::string_view::npos;
  const char* base = s.data();
  const size_t last = s.size() - needle.size() + anchor;  // the anchor's last possible place
  size_t from = anchor;
  while (from <= last) {
    const void* hit = std::memchr(base + from, needle[anchor], last + 1 - from);
    if (hit == nullptr) return std::string_view::npos;
    const size_t at = static_cast<size_t>(static_cast<const char*>(hit) - base);
    // The first byte first: most hits of the anchor are not the needle, and this spares them
    // a call.
    if (base[at - anchor] == needle[0] &&
        std::memcmp(base + at - anchor, needle.data(), needle.size()) == 0) {
      return at - anchor;
    }
    from = at + 1;
  }
  return std::string_view::npos;
}

// Hashing a string key by view, so that sets of std::string are looked up without building
// one (C++20 heterogeneous lookup): no allocation per line for a value already seen.
struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// "2024-05-01" followed by "12:34:56": the -S timestamp columns.
inline bool IsDate(std::string_view s) {
  return s.size() == 10 && IsDigit(s[0]) && IsDigit(s[1]) && IsDigit(s[2]) && IsDigit(s[3]) &&
         s[4] == '-' && IsDigit(s[5]) && IsDigit(s[6]) && s[7] == '-' && IsDigit(s[8]) &&
         IsDigit(s[9]);
}
inline bool IsClock(std::string_view s) {
  return s.size() >= 8 && IsDigit(s[0]) && IsDigit(s[1]) && s[2] == ':' && IsDigit(s[3]) &&
         IsDigit(s[4]) && s[5] == ':' && IsDigit(s[6]) && IsDigit(s[7]);
}

// 1-based line number of byte `offset` of `text`.
size_t LineOfOffset(std::string_view text, size_t offset);

}  // namespace fabricscope::analyze
