// Private: an output format looked up by its --format name, the same way in every registry
// of the library and the command line, with the same error for a name it does not know.
#pragma once

#include <string>
#include <string_view>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"

namespace fabricscope {

// The entry of `formats` (a registry: entries with a `name`) called `name`. Throws
// UsageError "unknown --format 'NAME': choose one of A, B, C" otherwise.
template <typename Range>
const auto& FindFormat(const Range& formats, std::string_view name) {
  for (const auto& format : formats) {
    if (std::string_view(format.name) == name) return format;
  }
  throw UsageError("unknown --format '" + std::string(name) + "': choose one of " +
                   NamesOf(formats));
}

// --help's list of a registry's formats (entries with `name` and `description`), one per
// line after `lead`: "LEAD:\n  text: for people\n  json: for programs".
template <typename Range>
std::string FormatList(std::string_view lead, const Range& formats) {
  std::string list(lead);
  list += ":";
  for (const auto& format : formats) {
    list += "\n  " + std::string(format.name) + ": " + std::string(format.description);
  }
  return list;
}

}  // namespace fabricscope
