// Private: the string helpers every part shares (case, white space, lists) and the table
// that maps an enum's names to its values, so that each has one definition and one rule.
// ASCII only and locale-free: the inputs are option values, file fields and log lines.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"

namespace fabricscope {

// ASCII white space: space, \t, \n, \v, \f, \r.
inline bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// `s` without white space at either end: a view into `s`, so `s` must outlive it. Inline and
// allocation-free, since the log readers call it for every field.
inline std::string_view Trim(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size() && IsSpace(s[begin])) ++begin;
  size_t end = s.size();
  while (end > begin && IsSpace(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

// ASCII case conversion; other bytes are kept.
std::string Lower(std::string_view s);
std::string Upper(std::string_view s);
// Equal but for ASCII case.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// `text` split at `separator`, each part trimmed, empty parts dropped: "a, b,,c " gives
// {"a", "b", "c"}; "" gives {}.
std::vector<std::string> Split(std::string_view text, char separator);

// RFC 4180: a field is quoted only when it holds a comma, a quote or a line break; a line is
// the fields joined by commas, ending in "\n".
std::string CsvField(std::string_view text);
std::string CsvLine(const std::vector<std::string>& fields);

// `text`, all of it, as a number of type T (an integer in `base`, or a double), or nullopt
// when it is not one: empty, other characters, or out of T's range (a long digit string).
// std::from_chars: no locale, no errno, no exception, no overflow.
template <typename T>
std::optional<T> ToNumber(std::string_view text, int base = 10) {
  T value{};
  const char* end = text.data() + text.size();
  std::from_chars_result r{};
  if constexpr (std::is_floating_point_v<T>) {
    (void)base;
    r = std::from_chars(text.data(), end, value);
  } else {
    r = std::from_chars(text.data(), end, value, base);
  }
  if (r.ec != std::errc() || r.ptr != end || text.empty()) return std::nullopt;
  return value;
}

// ToNumber, or a UsageError naming `what`, the text and the range T holds.
template <typename T>
T ParseNumber(std::string_view text, std::string_view what, int base = 10) {
  if (const std::optional<T> value = ToNumber<T>(text, base)) return *value;
  throw UsageError(std::string(what) + ": '" + std::string(text.substr(0, 40)) +
                   (text.size() > 40 ? "...'" : "'") + " is not a number from " +
                   std::to_string(std::numeric_limits<T>::lowest()) + " to " +
                   std::to_string(std::numeric_limits<T>::max()));
}

// An enum's names, indexed by its value (0, 1, ...), and the one rule to look them up: names
// match regardless of ASCII case ("ring" is Ring), and an unknown name is a UsageError that
// lists the choices: "unknown <what> '<name>': use one of a, b, c".
template <typename Enum, size_t N>
Enum ParseName(std::string_view name, const std::array<std::string_view, N>& names,
               std::string_view what) {
  for (size_t i = 0; i < N; ++i) {
    if (EqualsIgnoreCase(names[i], name)) return static_cast<Enum>(i);
  }
  throw UsageError("unknown " + std::string(what) + " '" + std::string(name) + "': use one of " +
                   Joined(names));
}

// The name of `value` in the table ParseName reads.
template <typename Enum, size_t N>
std::string_view NameOf(Enum value, const std::array<std::string_view, N>& names) {
  return names.at(static_cast<size_t>(value));
}

}  // namespace fabricscope
