#include "fabricscope/sizes.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

std::string SizeHelp(std::string_view flag, std::string_view text, std::string_view why) {
  return "invalid size '" + std::string(text) + "' for " + std::string(flag) + ": " +
         std::string(why) +
         " (expected a number with an optional K, M or G suffix, e.g. 8, 64K, 1.5G)";
}

}  // namespace

size_t ParseSize(std::string_view text, std::string_view flag) {
  if (text.empty()) throw UsageError(SizeHelp(flag, text, "empty value"));
  std::string_view digits = text;
  double multiplier = 1.0;
  switch (std::tolower(static_cast<unsigned char>(text.back()))) {
    case 'k':
      multiplier = 1024.0;
      break;
    case 'm':
      multiplier = 1024.0 * 1024.0;
      break;
    case 'g':
      multiplier = 1024.0 * 1024.0 * 1024.0;
      break;
    case 't':
      multiplier = 1024.0 * 1024.0 * 1024.0 * 1024.0;
      break;
    default:
      break;
  }
  if (multiplier != 1.0) digits.remove_suffix(1);
  if (digits.empty()) throw UsageError(SizeHelp(flag, text, "no number before the suffix"));
  double value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    throw UsageError(SizeHelp(flag, text, "not a number"));
  }
  if (!std::isfinite(value) || value < 0) {
    throw UsageError(SizeHelp(flag, text, "must be zero or positive"));
  }
  const double bytes = std::floor(value * multiplier);
  if (bytes > static_cast<double>(std::numeric_limits<int64_t>::max())) {
    throw UsageError(SizeHelp(flag, text, "too large"));
  }
  return static_cast<size_t>(bytes);
}

std::vector<size_t> SizeSweep(size_t min_bytes, size_t max_bytes, size_t step_bytes,
                              uint64_t step_factor) {
  if (min_bytes > max_bytes) {
    throw UsageError("minimum size " + std::to_string(min_bytes) +
                     " (-b) is larger than maximum size " + std::to_string(max_bytes) +
                     " (-e); give -b <= -e");
  }
  if (step_factor > 1 && min_bytes == 0) {
    throw UsageError("-b 0 with a step factor (-f " + std::to_string(step_factor) +
                     ") never grows; start at -b 1 or more, or use -i");
  }
  if (step_factor <= 1 && step_bytes == 0 && min_bytes != max_bytes) {
    throw UsageError("a step of 0 bytes (-i 0) never reaches -e; give -i > 0 or -f > 1");
  }
  std::vector<size_t> sizes;
  for (size_t size = min_bytes; size <= max_bytes;) {
    sizes.push_back(size);
    if (min_bytes == max_bytes) break;
    if (step_factor > 1 && size > max_bytes / step_factor) break;  // the next step passes -e
    const size_t next = step_factor > 1 ? size * step_factor : size + step_bytes;
    if (next <= size) break;  // overflow
    size = next;
  }
  return sizes;
}

}  // namespace fabricscope
