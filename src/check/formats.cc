// The registry of check output formats.
#include <string>

#include "check/reporters.h"
#include "fabricscope/check.h"
#include "fabricscope/error.h"
#include "fabricscope/find_format.h"
#include "fabricscope/joined.h"

namespace fabricscope {

const std::vector<CheckFormat>& CheckFormats() {
  static const std::vector<CheckFormat> formats = {
      {"text", "a verdict per test and a line per finding, for people", check::RenderCheckText},
      {"json", "the same as one JSON document, for programs", check::RenderCheckJson},
  };
  return formats;
}

const CheckFormat& FindCheckFormat(std::string_view name) {
  return FindFormat(CheckFormats(), name);
}

}  // namespace fabricscope
