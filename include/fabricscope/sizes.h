// Size arguments and sweeps with nccl-tests' rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fabricscope {

// Parses "8", "64K", "1.5G" (binary units, case-insensitive, fractions allowed).
// `flag` names the option in the error message. Throws UsageError.
size_t ParseSize(std::string_view text, std::string_view flag);

// Sizes from min to max inclusive: times step_factor when it is > 1, else plus step_bytes.
// Throws UsageError when the sweep is empty or never advances.
std::vector<size_t> SizeSweep(size_t min_bytes, size_t max_bytes, size_t step_bytes,
                              uint64_t step_factor);

}  // namespace fabricscope
