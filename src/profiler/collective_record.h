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

// Which clock a record's duration comes from, Inspector's coll_timing_source
// (NVIDIA/nccl v2.30.7-1 plugins/profiler/inspector/inspector.cc,
// inspectorTimingSourceToString): the GPU timer NCCL passes with KernelCh events, else the
// CPU at KernelCh start and stop, else the Coll event's own start and stop, which NCCL 2.30
// calls back to back at enqueue (src/enqueue.cc, hostStreamPlanTask).
enum class TimingSource : uint8_t { kCollectiveCpu = 0, kKernelCpu = 1, kKernelGpu = 2 };

inline const char* TimingSourceName(TimingSource s) {
  switch (s) {
    case TimingSource::kKernelGpu:
      return "kernel_gpu";
    case TimingSource::kKernelCpu:
      return "kernel_cpu";
    case TimingSource::kCollectiveCpu:
      break;
  }
  return "collective_cpu";
}

struct CollectiveRecord {
  uint64_t seq = 0;             // NCCL's per-communicator, per-function sequence number (P2p: ours)
  uint64_t count = 0;           // elements, as NCCL's descriptor gives them (AllGather: bytes)
  int64_t start_ns = 0;         // CLOCK_REALTIME at the Coll/P2p startEvent (enqueue)
  int64_t enqueue_stop_ns = 0;  // CLOCK_REALTIME at its stopEvent (also enqueue, in NCCL 2.30)
  int64_t stop_ns = 0;          // CLOCK_REALTIME when it completed: its last KernelCh stop
  int64_t exec_ns = 0;          // its duration, by `timing`
  int32_t root = -1;            // P2p: the peer
  uint8_t channels = 0;
  bool p2p = false;
  TimingSource timing = TimingSource::kCollectiveCpu;
  ShortName<24> func;      // "AllReduce", "Send"
  ShortName<24> datatype;  // "ncclFloat32"
  ShortName<12> algo;      // "RING"
  ShortName<12> proto;     // "SIMPLE"
};
static_assert(std::is_trivially_copyable_v<CollectiveRecord>);

// One ProxyOp of one rank: the network half of a collective on one channel towards one peer
// (NCCL v2.30.7-1 src/plugin/profiler.cc, ncclProfilerStartProxyOpEvent/StopProxyOpEvent,
// called on the proxy thread).
struct LinkRecord {
  int64_t start_ns = 0;
  int64_t stop_ns = 0;
  int32_t peer = -1;
  int32_t steps = 0;
  int32_t chunk_bytes = 0;
  uint8_t channel = 0;
  bool send = false;
};
static_assert(std::is_trivially_copyable_v<LinkRecord>);

}  // namespace fabricscope::profiler
