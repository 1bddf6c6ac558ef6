// nccl-tests' fixed-width number rule, so table columns line up exactly as theirs do.
#include <cstdio>
#include <string>

#include "fabricscope/report.h"

namespace fabricscope {
namespace {

// snprintf into a std::string; the length is measured, never truncated.
std::string FormatWith(const char* format, int width, double value) {
  char buffer[64];
  const int length = std::snprintf(buffer, sizeof(buffer), format, width, value);
  if (length < 0) return {};
  if (static_cast<size_t>(length) < sizeof(buffer)) {
    return std::string(buffer, static_cast<size_t>(length));
  }
  // Only huge widths or values (1e300 with %f) get here.
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::snprintf(text.data(), text.size(), format, width, value);
  text.resize(static_cast<size_t>(length));
  return text;
}

}  // namespace

std::string FormatNumber(double value, int width) {
  // Most precision first; the first rendering that fits the column wins.
  for (const char* format : {"%*.2f", "%*.1f", "%*.0f"}) {
    std::string text = FormatWith(format, width, value);
    if (text.size() <= static_cast<size_t>(width)) return text;
  }
  // nccl-tests cuts this last form to the width with snprintf, which can print a wrong
  // number (-1.0e+12 becomes -1.0e+1); a wider cell that is right is better.
  return FormatWith(width >= 7 ? "%*.1e" : "%*.0e", width, value);
}

}  // namespace fabricscope
