// One completed collective of one rank, as the profiler plugin records it: a fixed-size,
// trivially copyable record, so that the hot path copies it into a ring without allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace fabricscope::profiler {

// NCCL's names are short ("ReduceScatter", "ncclBfloat16", "SIMPLE"); longer ones are cut.
template <size_t N>
struct ShortName {
  char text[N] = {};
  void Set(const char* s) {
    if (s == nullptr) {
      text[0] = '\0';
      return;
    }
    size_t i = 0;
    for (; i + 1 < N && s[i] != '\0'; ++i) text[i] = s[i];
    text[i] = '\0';
  }
  std::string_view view() const { return std::string_view(text, ::strnlen(text, N)); }
};

struct CollectiveRecord {
  uint64_t seq = 0;      // NCCL's per-communicator sequence number
  uint64_t count = 0;    // elements, as passed to the collective
  int64_t start_ns = 0;  // CLOCK_REALTIME at startEvent (the host call)
  int64_t stop_ns = 0;   // CLOCK_REALTIME at stopEvent (completion)
  int32_t root = -1;
  uint8_t channels = 0;
  ShortName<24> func;      // "AllReduce"
  ShortName<24> datatype;  // "ncclFloat32"
  ShortName<12> algo;      // "RING"
  ShortName<12> proto;     // "SIMPLE"
};
static_assert(std::is_trivially_copyable_v<CollectiveRecord>);

}  // namespace fabricscope::profiler
