// The plugin's recording machinery, apart from NCCL's ABI: one CommRecorder per communicator
// (a pool of in-flight events and a ring of completed ones, both fixed at init, so the hot
// path neither locks nor allocates; a collective completes at its last KernelCh stop), and the
// Recorder of the process, whose drain thread hands completed collectives to the sinks (JSONL,
// Prometheus) off the hot path.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "profiler/collective_record.h"
#include "profiler/record_ring.h"
#include "profiler/settings.h"

namespace fabricscope::profiler {

// What NCCL says of a communicator at init.
struct CommInfo {
  uint64_t id = 0;   // commId (v5) or commHash (v4)
  std::string name;  // the user's name for it (ncclConfig_t.commName), often empty
  int nnodes = 0;
  int nranks = 0;
  int rank = 0;
  std::string Label() const;  // the name, else the id in hex
};

// The fields of a Coll or P2p start descriptor (the same in v4, v5 and v6).
struct CollectiveStart {
  uint64_t seq = 0;
  const char* func = nullptr;
  uint64_t count = 0;
  const char* datatype = nullptr;
  int root = -1;  // P2p: the peer
  uint8_t channels = 0;
  const char* algo = nullptr;
  const char* proto = nullptr;
  bool p2p = false;
  // How many KernelCh events will end under it: nChannels when the plugin asked for KernelCh
  // events and NCCL's descriptor says how many channels; 0 when they will not come.
  int kernel_channels = 0;
};

// What every handle the plugin gives NCCL starts with, so that stopEvent and
// recordEventState, which get only the handle, know what it is.
enum class EventKind : uint8_t { kTask = 1, kKernelCh = 2, kProxyOp = 3 };

// NCCL's MAXCHANNELS (NVIDIA/nccl v2.30.7-1, src/include/device.h): a KernelCh event's
// channelId is below it.
inline constexpr int kMaxChannels = 64;

class CommRecorder;
struct ActiveEvent;

// One channel's kernel of a collective in flight: the KernelCh handle NCCL gets.
struct KernelChEvent {
  EventKind kind = EventKind::kKernelCh;
  ActiveEvent* parent = nullptr;
  uint64_t start_gpu = 0;  // NCCL's pTimer at KernelCh start (the GPU's globaltimer, ns)
  int64_t start_cpu = 0;   // CLOCK_MONOTONIC at KernelCh start, when pTimer is 0
  uint64_t stop_gpu = 0;   // pTimer of its ncclProfilerKernelChStop state
};

// One collective or point-to-point operation in flight: the handle NCCL gets back from
// startEvent. NCCL 2.30 stops the Coll event at enqueue, before its kernels run, so the
// record lives on until the last of its KernelCh events ends (`pending` counts the Coll's
// own stop and each KernelCh stop still to come).
struct ActiveEvent {
  EventKind kind = EventKind::kTask;
  std::atomic<bool> busy{false};
  std::atomic<int> pending{0};
  int expected_channels = 0;  // KernelCh events due (CollectiveStart::kernel_channels)
  std::atomic<int> started_channels{0};
  std::atomic<int64_t> max_gpu_ns{0};  // the longest channel by the GPU timer
  std::atomic<int64_t> max_cpu_ns{0};  // the longest channel by the CPU, where no GPU timer
  CommRecorder* owner = nullptr;
  CollectiveRecord record;
  KernelChEvent channels[kMaxChannels];
};

// One ProxyOp in flight: the handle NCCL's proxy thread gets.
struct ProxyOpEvent {
  EventKind kind = EventKind::kProxyOp;
  std::atomic<bool> busy{false};
  CommRecorder* owner = nullptr;
  LinkRecord record;
};

// What a handle is, from its first byte (every handle type starts with its EventKind).
inline EventKind KindOf(const void* handle) { return *static_cast<const EventKind*>(handle); }

// CLOCK_REALTIME in ns: comparable across the processes (and, with NTP, the nodes) of a job.
int64_t WallClockNs();
// CLOCK_MONOTONIC in ns: for durations measured by the CPU.
int64_t MonotonicNs();

class CommRecorder {
 public:
  CommRecorder(CommInfo info, const Settings& settings);

  // Hot path. Null when every pool slot is in use (counted) or the message is too small.
  ActiveEvent* Start(const CollectiveStart& start);
  // The Coll/P2p stopEvent: at enqueue in NCCL 2.30; completes it when no KernelCh is due.
  static void Stop(ActiveEvent* event);
  // KernelCh events under `parent` (a handle of ours, or null: then nothing).
  static KernelChEvent* KernelStart(ActiveEvent* parent, uint8_t channel, uint64_t gpu_ns);
  static void KernelStop(KernelChEvent* channel);
  // ProxyOp events, on NCCL's proxy thread.
  ProxyOpEvent* ProxyStart(int peer, uint8_t channel, int steps, int chunk_bytes, bool send);
  static void ProxyStop(ProxyOpEvent* op);

  // Off the hot path: completed records since the last drain; returns those lost.
  uint64_t Drain(std::vector<CollectiveRecord>* out) { return ring_.Drain(out); }
  uint64_t DrainLinks(std::vector<LinkRecord>* out) { return links_.Drain(out); }
  uint64_t NextP2pSeq() { return p2p_seq_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t TakePoolFull() { return pool_full_.exchange(0, std::memory_order_relaxed); }
  const CommInfo& info() const { return info_; }

 private:
  static void Release(ActiveEvent* event);  // the last reference went: complete it

  CommInfo info_;
  uint64_t min_bytes_ = 0;
  std::unique_ptr<ActiveEvent[]> pool_;
  size_t pool_size_ = 0;
  std::atomic<uint64_t> next_slot_{0};
  std::atomic<uint64_t> pool_full_{0};
  std::atomic<uint64_t> p2p_seq_{0};
  RecordRing<CollectiveRecord> ring_;
  std::unique_ptr<ProxyOpEvent[]> proxy_pool_;
  size_t proxy_pool_size_ = 0;
  std::atomic<uint64_t> next_proxy_{0};
  RecordRing<LinkRecord> links_;
};

// A completed collective with what follows from it.
struct Completed {
  const CommInfo* comm = nullptr;
  CollectiveRecord record;
  uint64_t bytes = 0;  // Inspector's msg size: count x type size, as NCCL's descriptor says
  double exec_us = 0;
  double algbw_gbs = 0;  // GB/s, decimal
  double busbw_gbs = 0;
};

Completed Complete(const CommInfo& comm, const CollectiveRecord& record);

// Where completed collectives go.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void Write(const std::vector<Completed>& batch) = 0;
  virtual void Dropped(const CommInfo& comm, uint64_t records) = 0;
  // ProxyOp times of one communicator since the last drain (JSONL only).
  virtual void Links(const CommInfo& comm, const std::vector<LinkRecord>& links) {
    (void)comm;
    (void)links;
  }
};

// The process's recorder: communicators come and go (init, finalize); a thread drains them
// every interval and at each finalize.
class Recorder {
 public:
  Recorder(Settings settings, std::vector<std::unique_ptr<Sink>> sinks);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  CommRecorder* Add(CommInfo info);
  // Drains the communicator one last time and forgets it; returns how many remain.
  size_t Remove(CommRecorder* comm);
  const Settings& settings() const { return settings_; }

 private:
  void DrainLoop();
  void DrainOne(CommRecorder& comm, std::vector<CollectiveRecord>* scratch);

  Settings settings_;
  std::vector<std::unique_ptr<Sink>> sinks_;
  std::mutex mutex_;  // the list of communicators and the sinks: never taken on the hot path
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<CommRecorder>> comms_;
  std::thread thread_;
};

}  // namespace fabricscope::profiler
