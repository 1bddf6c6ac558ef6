// The plugin's recording machinery, apart from NCCL's ABI: one CommRecorder per communicator
// (a pool of in-flight events and a ring of completed ones, both fixed at init, so the hot
// path neither locks nor allocates), and the Recorder of the process, whose drain thread
// hands completed collectives to the sinks (JSONL, Prometheus) off the hot path.
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

// The fields of a collective's start descriptor (the same in v4 and v5).
struct CollectiveStart {
  uint64_t seq = 0;
  const char* func = nullptr;
  uint64_t count = 0;
  const char* datatype = nullptr;
  int root = -1;
  uint8_t channels = 0;
  const char* algo = nullptr;
  const char* proto = nullptr;
};

class CommRecorder;

// One collective in flight: the handle NCCL gets back from startEvent.
struct ActiveEvent {
  std::atomic<bool> busy{false};
  CommRecorder* owner = nullptr;
  CollectiveRecord record;
};

// CLOCK_REALTIME in ns: comparable across the processes (and, with NTP, the nodes) of a job.
int64_t WallClockNs();

class CommRecorder {
 public:
  CommRecorder(CommInfo info, const Settings& settings);

  // Hot path. Null when every pool slot is in use (counted) or the message is too small.
  ActiveEvent* Start(const CollectiveStart& start);
  static void Stop(ActiveEvent* event);

  // Off the hot path: completed records since the last drain; returns those lost.
  uint64_t Drain(std::vector<CollectiveRecord>* out) { return ring_.Drain(out); }
  uint64_t TakePoolFull() { return pool_full_.exchange(0, std::memory_order_relaxed); }
  const CommInfo& info() const { return info_; }

 private:
  CommInfo info_;
  uint64_t min_bytes_ = 0;
  std::unique_ptr<ActiveEvent[]> pool_;
  size_t pool_size_ = 0;
  std::atomic<uint64_t> next_slot_{0};
  std::atomic<uint64_t> pool_full_{0};
  RecordRing<CollectiveRecord> ring_;
};

// A completed collective with what follows from it.
struct Completed {
  const CommInfo* comm = nullptr;
  CollectiveRecord record;
  uint64_t bytes = 0;
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
