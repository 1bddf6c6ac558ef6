// Private: the local wall-clock time as text, for timestamps in results.
#pragma once

#include <ctime>
#include <string>

namespace fabricscope {

// Now, formatted with strftime's `format` ("%Y-%m-%d %H:%M:%S", ISO 8601, ...).
inline std::string LocalTime(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

}  // namespace fabricscope
