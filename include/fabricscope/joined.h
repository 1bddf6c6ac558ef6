// Private: lists in help texts and messages ("a, b, c"), through fmt::join.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

namespace fabricscope {

// The items, comma-separated.
template <typename Range>
std::string Joined(const Range& items) {
  return fmt::format("{}", fmt::join(items, ", "));
}

// What `text_of` makes of each item, comma-separated.
template <typename Range, typename TextOf>
std::string Joined(const Range& items, TextOf text_of) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ", ";
    first = false;
    out += text_of(item);
  }
  return out;
}

// The names of a registry's entries (anything with a `name` member), comma-separated.
template <typename Range>
std::string NamesOf(const Range& entries) {
  return Joined(entries, [](const auto& entry) { return std::string(entry.name); });
}

}  // namespace fabricscope
