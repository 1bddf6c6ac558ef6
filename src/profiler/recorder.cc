#include "profiler/recorder.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "profiler/collective_math.h"

namespace fabricscope::profiler {

std::string CommInfo::Label() const {
  if (!name.empty()) return name;
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(id));
  return text;
}

int64_t WallClockNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

CommRecorder::CommRecorder(CommInfo info, const Settings& settings)
    : info_(std::move(info)),
      min_bytes_(settings.min_bytes),
      pool_(std::make_unique<ActiveEvent[]>(settings.active_events)),
      pool_size_(settings.active_events),
      ring_(settings.ring_entries) {
  for (size_t i = 0; i < pool_size_; ++i) pool_[i].owner = this;
}

ActiveEvent* CommRecorder::Start(const CollectiveStart& start) {
  if (min_bytes_ > 0) {
    const uint64_t bytes =
        MessageBytes(start.func != nullptr ? start.func : "", start.count,
                     NcclTypeSize(start.datatype != nullptr ? start.datatype : ""), info_.nranks);
    if (bytes < min_bytes_) return nullptr;
  }
  // Collectives of a communicator complete in order: the next slot is almost always free.
  const uint64_t first = next_slot_.fetch_add(1, std::memory_order_relaxed);
  for (size_t k = 0; k < pool_size_; ++k) {
    ActiveEvent& e = pool_[(first + k) % pool_size_];
    bool expected = false;
    if (!e.busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) continue;
    CollectiveRecord& r = e.record;
    r.seq = start.seq;
    r.count = start.count;
    r.root = start.root;
    r.channels = start.channels;
    r.func.Set(start.func);
    r.datatype.Set(start.datatype);
    r.algo.Set(start.algo);
    r.proto.Set(start.proto);
    r.stop_ns = 0;
    r.start_ns = WallClockNs();
    return &e;
  }
  pool_full_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void CommRecorder::Stop(ActiveEvent* event) {
  event->record.stop_ns = WallClockNs();
  event->owner->ring_.Push(event->record);
  event->busy.store(false, std::memory_order_release);
}

Completed Complete(const CommInfo& comm, const CollectiveRecord& record) {
  Completed c;
  c.comm = &comm;
  c.record = record;
  const std::string_view func = record.func.view();
  c.bytes = MessageBytes(func, record.count, NcclTypeSize(record.datatype.view()), comm.nranks);
  c.exec_us = static_cast<double>(std::max<int64_t>(record.stop_ns - record.start_ns, 0)) / 1e3;
  if (c.exec_us > 0) {
    c.algbw_gbs = static_cast<double>(c.bytes) / (c.exec_us * 1e3);  // bytes/ns = GB/s
    c.busbw_gbs = c.algbw_gbs * BusFactor(func, comm.nranks);
  }
  return c;
}

Recorder::Recorder(Settings settings, std::vector<std::unique_ptr<Sink>> sinks)
    : settings_(std::move(settings)), sinks_(std::move(sinks)) {
  thread_ = std::thread([this] { DrainLoop(); });
}

Recorder::~Recorder() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::vector<CollectiveRecord> scratch;
  for (auto& comm : comms_) DrainOne(*comm, &scratch);
}

CommRecorder* Recorder::Add(CommInfo info) {
  auto comm = std::make_unique<CommRecorder>(std::move(info), settings_);
  CommRecorder* raw = comm.get();
  const std::lock_guard lock(mutex_);
  comms_.push_back(std::move(comm));
  return raw;
}

size_t Recorder::Remove(CommRecorder* comm) {
  const std::lock_guard lock(mutex_);
  auto it = std::find_if(comms_.begin(), comms_.end(),
                         [&](const std::unique_ptr<CommRecorder>& c) { return c.get() == comm; });
  if (it != comms_.end()) {
    std::vector<CollectiveRecord> scratch;
    DrainOne(**it, &scratch);
    comms_.erase(it);
  }
  return comms_.size();
}

// Called with mutex_ held.
void Recorder::DrainOne(CommRecorder& comm, std::vector<CollectiveRecord>* scratch) {
  scratch->clear();
  const uint64_t lost = comm.Drain(scratch) + comm.TakePoolFull();
  if (lost > 0) {
    for (auto& sink : sinks_) sink->Dropped(comm.info(), lost);
  }
  if (scratch->empty()) return;
  std::vector<Completed> batch;
  batch.reserve(scratch->size());
  for (const CollectiveRecord& r : *scratch) batch.push_back(Complete(comm.info(), r));
  for (auto& sink : sinks_) sink->Write(batch);
}

void Recorder::DrainLoop() {
  std::vector<CollectiveRecord> scratch;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(settings_.interval_ms));
    for (auto& comm : comms_) DrainOne(*comm, &scratch);
  }
}

}  // namespace fabricscope::profiler
