// What NCCL's names mean for sizes and bus bandwidth, shared by the plugin (which computes
// them per record) and `fabricscope watch` (which buckets them): header-only, as the plugin
// links nothing of the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fabricscope::profiler {

// Bytes per element of NCCL's datatype names ("ncclFloat32"), 0 when unknown.
inline size_t NcclTypeSize(std::string_view type) {
  if (type.substr(0, 4) == "nccl") type.remove_prefix(4);
  if (type == "Int8" || type == "Uint8" || type == "Char" || type == "Float8e4m3" ||
      type == "Float8e5m2") {
    return 1;
  }
  if (type == "Float16" || type == "Half" || type == "Bfloat16") return 2;
  if (type == "Int32" || type == "Uint32" || type == "Int" || type == "Float32" ||
      type == "Float") {
    return 4;
  }
  if (type == "Int64" || type == "Uint64" || type == "Float64" || type == "Double") return 8;
  return 0;
}

inline bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = (a[i] >= 'A' && a[i] <= 'Z') ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    const char y = (b[i] >= 'A' && b[i] <= 'Z') ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

// The collective's size as nccl-tests and Inspector count it: the whole gathered buffer for
// AllGather and ReduceScatter (count is per rank there), the buffer otherwise.
inline uint64_t MessageBytes(std::string_view func, uint64_t count, size_t type_size, int nranks) {
  const uint64_t bytes = count * type_size;
  if (SameName(func, "AllGather") || SameName(func, "ReduceScatter")) {
    return bytes * static_cast<uint64_t>(nranks > 0 ? nranks : 1);
  }
  return bytes;
}

// busbw / algbw, nccl-tests' factors (doc/PERFORMANCE.md).
inline double BusFactor(std::string_view func, int nranks) {
  if (nranks <= 1) return 1.0;
  const double n = nranks;
  if (SameName(func, "AllReduce")) return 2.0 * (n - 1) / n;
  if (SameName(func, "AllGather") || SameName(func, "ReduceScatter") ||
      SameName(func, "AllToAll") || SameName(func, "Gather") || SameName(func, "Scatter")) {
    return (n - 1) / n;
  }
  return 1.0;
}

// The power-of-two size bucket a message falls in, named by its upper bound ("<=1MiB"), so
// that a label has few values: 64 buckets at most.
inline std::string SizeBucket(uint64_t bytes) {
  uint64_t upper = 1;
  while (upper < bytes && upper < (uint64_t{1} << 62)) upper <<= 1;
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (upper >= 1024 && upper % 1024 == 0) {
    upper /= 1024;
    ++unit;
  }
  return "<=" + std::to_string(upper) + kUnits[unit];
}

}  // namespace fabricscope::profiler
