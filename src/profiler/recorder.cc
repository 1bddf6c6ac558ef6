#include "profiler/recorder.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <type_traits>

#include "fabricscope/collective_math.h"

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

int64_t MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

static_assert(std::is_standard_layout_v<ActiveEvent> && offsetof(ActiveEvent, kind) == 0);
static_assert(std::is_standard_layout_v<KernelChEvent> && offsetof(KernelChEvent, kind) == 0);
static_assert(std::is_standard_layout_v<ProxyOpEvent> && offsetof(ProxyOpEvent, kind) == 0);

namespace {

void AtomicMax(std::atomic<int64_t>* target, int64_t value) {
  int64_t seen = target->load(std::memory_order_relaxed);
  while (seen < value && !target->compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

CommRecorder::CommRecorder(CommInfo info, const Settings& settings)
    : info_(std::move(info)),
      min_bytes_(settings.min_bytes),
      pool_(std::make_unique<ActiveEvent[]>(settings.active_events)),
      pool_size_(settings.active_events),
      ring_(settings.ring_entries),
      // Two ProxyOps (send, receive) per channel of a collective in flight, at most 16 channels
      // on average: more are counted as dropped.
      proxy_pool_(std::make_unique<ProxyOpEvent[]>(settings.active_events * 4)),
      proxy_pool_size_(settings.active_events * 4),
      links_(settings.ring_entries * 4) {
  for (size_t i = 0; i < pool_size_; ++i) {
    ActiveEvent& e = pool_[i];
    e.owner = this;
    MarkAtomics(e.busy, e.pending, e.started_channels, e.max_gpu_ns, e.max_cpu_ns);
  }
  for (size_t i = 0; i < proxy_pool_size_; ++i) {
    proxy_pool_[i].owner = this;
    MarkAtomics(proxy_pool_[i].busy);
  }
  MarkAtomics(next_slot_, pool_full_, p2p_seq_, next_proxy_);
}

ActiveEvent* CommRecorder::Start(const CollectiveStart& start) {
  if (min_bytes_ > 0) {
    // As NCCL's Inspector (NVIDIA/nccl v2.30.7-1 plugins/profiler/inspector/inspector_plugin.cc,
    // inspectorShouldTrackColl): a type whose size is not known is kept. NCCL 2.30 names
    // ncclUint8 "Unknown" (src/collectives.cc, ncclDatatypeToString has no case for it).
    const size_t type_size = NcclTypeSize(start.datatype != nullptr ? start.datatype : "");
    if (type_size > 0 && start.count * type_size < min_bytes_) return nullptr;
  }
  // Operations of a communicator complete in order: the next slot is almost always free.
  const uint64_t first = next_slot_.fetch_add(1, std::memory_order_relaxed);
  for (size_t k = 0; k < pool_size_; ++k) {
    ActiveEvent& e = pool_[(first + k) % pool_size_];
    bool expected = false;
    if (!e.busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) continue;
    FABRICSCOPE_HAPPENS_AFTER(&e.busy);
    CollectiveRecord& r = e.record;
    r.seq = start.seq;
    r.count = start.count;
    r.root = start.root;
    r.channels = start.channels;
    r.p2p = start.p2p;
    r.func.Set(start.func);
    r.datatype.Set(start.datatype);
    r.algo.Set(start.algo);
    r.proto.Set(start.proto);
    r.enqueue_stop_ns = 0;
    r.stop_ns = 0;
    r.exec_ns = 0;
    r.timing = TimingSource::kCollectiveCpu;
    e.expected_channels = std::min(start.kernel_channels, kMaxChannels);
    e.started_channels.store(0, std::memory_order_relaxed);
    e.max_gpu_ns.store(0, std::memory_order_relaxed);
    e.max_cpu_ns.store(0, std::memory_order_relaxed);
    e.pending.store(1 + e.expected_channels, std::memory_order_relaxed);
    r.start_ns = WallClockNs();
    return &e;
  }
  pool_full_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void CommRecorder::Stop(ActiveEvent* event) {
  event->record.enqueue_stop_ns = WallClockNs();
  Release(event);
}

KernelChEvent* CommRecorder::KernelStart(ActiveEvent* parent, uint8_t channel, uint64_t gpu_ns) {
  if (parent == nullptr || KindOf(parent) != EventKind::kTask || channel >= kMaxChannels) {
    return nullptr;
  }
  // More KernelCh events than NCCL's descriptor announced would free the record early.
  if (parent->started_channels.fetch_add(1, std::memory_order_relaxed) >=
      parent->expected_channels) {
    return nullptr;
  }
  KernelChEvent* k = &parent->channels[channel];
  k->parent = parent;
  k->start_gpu = gpu_ns;
  // The CPU's clock only where NCCL gave no GPU timer: two clock reads per channel would be
  // most of the cost of a 16-channel collective (bench/profiler_overhead).
  k->start_cpu = gpu_ns == 0 ? MonotonicNs() : 0;
  k->stop_gpu = 0;
  return k;
}

// As Inspector (plugins/profiler/inspector/inspector.cc, calculateMaxKernelExecTimeUsecs):
// the longest channel, by the GPU timer where both ends have one, else by the CPU.
void CommRecorder::KernelStop(KernelChEvent* k) {
  ActiveEvent* e = k->parent;
  const uint64_t gpu_ns = k->stop_gpu;
  if (k->start_gpu != 0 && gpu_ns > k->start_gpu) {
    AtomicMax(&e->max_gpu_ns, static_cast<int64_t>(gpu_ns - k->start_gpu));
  } else if (k->start_cpu != 0) {
    AtomicMax(&e->max_cpu_ns, MonotonicNs() - k->start_cpu);
  }
  Release(e);
}

void CommRecorder::Release(ActiveEvent* e) {
  FABRICSCOPE_HAPPENS_BEFORE(&e->pending);
  if (e->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  FABRICSCOPE_HAPPENS_AFTER(&e->pending);
  CollectiveRecord& r = e->record;
  const int64_t gpu = e->max_gpu_ns.load(std::memory_order_relaxed);
  const int64_t cpu = e->max_cpu_ns.load(std::memory_order_relaxed);
  if (gpu > 0) {
    r.exec_ns = gpu;
    r.timing = TimingSource::kKernelGpu;
  } else if (cpu > 0) {
    r.exec_ns = cpu;
    r.timing = TimingSource::kKernelCpu;
  } else {
    r.exec_ns = std::max<int64_t>(r.enqueue_stop_ns - r.start_ns, 0);
    r.timing = TimingSource::kCollectiveCpu;
  }
  r.stop_ns = WallClockNs();  // the last reference: the last KernelCh stop, or the Coll's
  e->owner->ring_.Push(r);    // a full ring drops it and counts it
  FABRICSCOPE_HAPPENS_BEFORE(&e->busy);
  e->busy.store(false, std::memory_order_release);
}

ProxyOpEvent* CommRecorder::ProxyStart(int peer, uint8_t channel, int steps, int chunk_bytes,
                                       bool send) {
  const uint64_t first = next_proxy_.fetch_add(1, std::memory_order_relaxed);
  for (size_t k = 0; k < proxy_pool_size_; ++k) {
    ProxyOpEvent& op = proxy_pool_[(first + k) % proxy_pool_size_];
    bool expected = false;
    if (!op.busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) continue;
    FABRICSCOPE_HAPPENS_AFTER(&op.busy);
    op.record.peer = peer;
    op.record.channel = channel;
    op.record.steps = steps;
    op.record.chunk_bytes = chunk_bytes;
    op.record.send = send;
    op.record.stop_ns = 0;
    op.record.start_ns = WallClockNs();
    return &op;
  }
  pool_full_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void CommRecorder::ProxyStop(ProxyOpEvent* op) {
  op->record.stop_ns = WallClockNs();
  op->owner->links_.Push(op->record);
  FABRICSCOPE_HAPPENS_BEFORE(&op->busy);
  op->busy.store(false, std::memory_order_release);
}

Completed Complete(const CommInfo& comm, const CollectiveRecord& record) {
  Completed c;
  c.comm = &comm;
  c.record = record;
  const std::string_view func = record.func.view();
  const size_t type_size = NcclTypeSize(record.datatype.view());
  c.bytes = record.count * type_size;  // Inspector's coll_msg_size_bytes
  c.exec_us = static_cast<double>(std::max<int64_t>(record.exec_ns, 0)) / 1e3;
  if (c.exec_us > 0) {
    // Inspector's traffic (inspectorComputeOpBw): the gathered buffer for AllGather and
    // ReduceScatter, whose descriptor count is one rank's part.
    const uint64_t traffic =
        record.p2p ? c.bytes : MessageBytes(func, record.count, type_size, comm.nranks);
    c.algbw_gbs = static_cast<double>(traffic) / (c.exec_us * 1e3);  // bytes/ns = GB/s
    c.busbw_gbs = record.p2p ? c.algbw_gbs : c.algbw_gbs * BusFactor(func, comm.nranks);
  }
  return c;
}

Recorder::Recorder(Settings settings, std::vector<std::unique_ptr<Sink>> sinks)
    : settings_(std::move(settings)), sinks_(std::move(sinks)) {
  thread_ = std::thread([this] { DrainLoop(); });
}

Recorder::~Recorder() {
  {
    // Notified under the lock: correct either way, and what helgrind takes as clean
    // (tests/profiler/helgrind_test.sh).
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
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
  std::vector<LinkRecord> links;
  const uint64_t lost = comm.Drain(scratch) + comm.DrainLinks(&links) + comm.TakePoolFull();
  if (lost > 0) {
    for (auto& sink : sinks_) sink->Dropped(comm.info(), lost);
  }
  if (!links.empty()) {
    for (auto& sink : sinks_) sink->Links(comm.info(), links);
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
