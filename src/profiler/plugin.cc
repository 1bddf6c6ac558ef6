// libnccl-profiler-fabricscope.so: the NCCL profiler plugin. NCCL (2.27: v4, 2.28: v5,
// 2.29/2.30: v6) finds it through NCCL_PROFILER_PLUGIN, looks up `ncclProfiler_v6`, then
// `_v5`, then `_v4` (NVIDIA/nccl v2.30.7-1 src/plugin/profiler.cc, ncclProfilerPluginLoad),
// calls init once per communicator and startEvent/stopEvent for the events it asked for. Everything
// but NCCL's ABI is in recorder.* and the sinks; docs/watch.md has the variables.
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "profiler/jsonl_sink.h"
#include "profiler/nccl_profiler_abi.h"
#include "profiler/prometheus_sink.h"
#include "profiler/recorder.h"
#include "profiler/settings.h"

#define FABRICSCOPE_EXPORT __attribute__((visibility("default")))

namespace fabricscope::profiler {
namespace {

// NCCL's plugin ABI is a table of C functions without a process handle: the recorder of the
// process has to live here. It exists from the first init to the last finalize.
struct Process {
  std::mutex mutex;
  std::unique_ptr<Recorder> recorder;
  int comms = 0;
};
Process& TheProcess() {
  static Process process;
  return process;
}

void Log(ncclDebugLogger_t logfn, ncclDebugLogLevel level, const std::string& text) {
  if (logfn != nullptr) logfn(level, 1 /* NCCL_INIT */, __FILE__, __LINE__, "%s", text.c_str());
}

// The sinks the settings ask for; a sink that cannot start is logged and left out, never
// fatal to the job.
std::vector<std::unique_ptr<Sink>> MakeSinks(const Settings& s, ncclDebugLogger_t logfn) {
  std::vector<std::unique_ptr<Sink>> sinks;
  if (s.jsonl) {
    std::string error;
    auto jsonl = std::make_unique<JsonlSink>(s, &error);
    if (jsonl->ok()) {
      Log(logfn, NCCL_LOG_INFO, "fabricscope profiler: JSONL to " + jsonl->path());
      sinks.push_back(std::move(jsonl));
    } else {
      Log(logfn, NCCL_LOG_WARN, "fabricscope profiler: " + error);
    }
  }
  if (!s.prom_listen.empty()) {
    try {
      auto prom = std::make_unique<PrometheusSink>(s);
      Log(logfn, NCCL_LOG_INFO,
          "fabricscope profiler: Prometheus metrics on http://" + prom->address() +
              "/metrics (targets in " + prom->targets_file() + ")");
      sinks.push_back(std::move(prom));
    } catch (const std::exception& e) {
      Log(logfn, NCCL_LOG_WARN,
          "fabricscope profiler: cannot serve Prometheus metrics on " + s.prom_listen + ": " +
              e.what() + "; set FABRICSCOPE_PROFILER_PROM_LISTEN to a free address");
    }
  }
  return sinks;
}

// The events the plugin asks NCCL for. Coll and P2p describe the operation but NCCL 2.30
// starts and stops them back to back at enqueue (src/enqueue.cc, hostStreamPlanTask); the
// time comes from KernelCh (src/transport/profiler.cc, profilerProxyProgress, with the GPU
// timer in pTimer) and the network time per peer from ProxyOp (src/plugin/profiler.cc,
// ncclProfilerStartProxyOpEvent). CeColl: v6's copy-engine collectives (src/ce_coll.cc,
// ncclLaunchCeColl), which would otherwise not be seen at all. NCCL also calls startEvent for
// GroupApi, CollApi and Group events whenever any of these bits is set
// (ncclProfilerStartGroupApiEvent, ncclProfilerStartCollApiEvent,
// ncclProfilerStartGroupEvent): they get a null handle.
constexpr int kMask =
    ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileCeColl;

// The one store of NCCL's activation mask: none when it already holds `value`.
void StoreMask(int* mask, int value) {
  if (__atomic_load_n(mask, __ATOMIC_RELAXED) != value) {
    __atomic_store_n(mask, value, __ATOMIC_RELAXED);
  }
}

ncclResult_t InitCommon(void** context, int* mask, CommInfo info, ncclDebugLogger_t logfn) {
  *context = nullptr;
  Process& p = TheProcess();
  const std::lock_guard lock(p.mutex);
  // NCCL's mask is one int of the process that every communicator's init writes and every
  // enqueue reads (ncclProfilerEventMask, NVIDIA/nccl v2.30.7-1 src/plugin/profiler.cc:219,
  // its address passed to init at :250, read with COMPILER_ATOMIC_LOAD(...,
  // std::memory_order_relaxed) at src/plugin/profiler.cc:280 and :656 and src/enqueue.cc:2795
  // and :2950, and plainly by printProfilerEventMask right after init at :250-258; so stored
  // here with a relaxed atomic store to match): written with its final value, never 0 on the
  // way (issue 24), and only when it differs, under the lock. NCCL calls init without a lock
  // of its own, from every thread that creates a communicator, and reads the mask from those
  // threads afterwards and from the proxy thread it starts after init (src/init.cc:1520,
  // :1529); each reader has taken this lock in its own init after the one write, so no read
  // can meet a store, which helgrind sees too (tests/profiler/helgrind_test.sh).
  if (!p.recorder) {
    Settings s = ReadSettings(Env::Process());
    if (!s.errors.empty()) Log(logfn, NCCL_LOG_WARN, "fabricscope profiler: " + s.errors);
    if (!s.enabled) {  // nothing at all: no event, file, thread or port
      StoreMask(mask, 0);
      return ncclSuccess;
    }
    auto sinks = MakeSinks(s, logfn);
    p.recorder = std::make_unique<Recorder>(std::move(s), std::move(sinks));
  }
  *context = p.recorder->Add(std::move(info));
  StoreMask(mask, kMask);
  ++p.comms;
  return ncclSuccess;
}

template <typename Descr>
void* StartColl(CommRecorder* comm, const Descr* d) {
  CollectiveStart s;
  s.seq = d->coll.seqNumber;
  s.func = d->coll.func;
  s.count = d->coll.count;
  s.datatype = d->coll.datatype;
  s.root = d->coll.root;
  s.channels = d->coll.nChannels;
  s.algo = d->coll.algo;
  s.proto = d->coll.proto;
  // One KernelCh event per channel (src/enqueue.cc, addProfilerProxyOpIfNeeded; Inspector
  // completes a collective when nChannels of them have stopped).
  s.kernel_channels = d->coll.nChannels;
  return comm->Start(s);
}

// Point-to-point operations, v5 and v6 only: NCCL's v4 adapter does not pass p2p.nChannels
// (src/plugin/profiler/profiler_v4.cc, ncclProfiler_startEvent), so under v4 the plugin
// could not know when the last KernelCh of a send or receive has ended.
template <typename Descr>
void* StartP2p(CommRecorder* comm, const Descr* d) {
  CollectiveStart s;
  s.seq = comm->NextP2pSeq();
  s.func = d->p2p.func;
  s.count = d->p2p.count;
  s.datatype = d->p2p.datatype;
  s.root = d->p2p.peer;
  s.channels = d->p2p.nChannels;
  s.p2p = true;
  // A send or receive to itself has no proxy op, and so no profiler proxy op and no KernelCh
  // (NVIDIA/nccl v2.30.7-1 src/enqueue.cc, addP2pToPlan: `nProxyOps = selfSend ? 0 : 2`, and
  // addProfilerProxyOpIfNeeded only beside a proxy op): waiting for nChannels KernelCh stops
  // would hold its record (and a pool slot) for ever; it completes at its stop, timed on the
  // CPU.
  s.kernel_channels = d->p2p.peer == d->rank ? 0 : d->p2p.nChannels;
  return comm->Start(s);
}

// v6's copy-engine collectives: no kernel, no KernelCh; NCCL starts and stops the event
// around the copies' enqueue (src/ce_coll.cc, ncclLaunchCeColl), so their time is the
// enqueue's (coll_timing_source "collective_cpu", algo "CE"), which watch does not judge.
void* StartCeColl(CommRecorder* comm, const ncclProfilerEventDescr_v6_t* d) {
  CollectiveStart s;
  s.seq = d->ceColl.seqNumber;
  s.func = d->ceColl.func;
  s.count = d->ceColl.count;
  s.datatype = d->ceColl.datatype;
  s.root = d->ceColl.root;
  s.algo = "CE";
  s.proto = "";
  return comm->Start(s);
}

template <typename Descr>
void* StartCommon(void* context, const Descr* d) {
  if (context == nullptr || d == nullptr) return nullptr;
  auto* comm = static_cast<CommRecorder*>(context);
  switch (static_cast<uint64_t>(d->type)) {
    case ncclProfileColl:
      return StartColl(comm, d);
    case ncclProfileP2p:
      if constexpr (sizeof(d->type) == 8) return StartP2p(comm, d);
      return nullptr;
    case ncclProfileKernelCh:
      return CommRecorder::KernelStart(static_cast<ActiveEvent*>(d->parentObj),
                                       d->kernelCh.channelId, d->kernelCh.pTimer);
    case ncclProfileProxyOp:
      return comm->ProxyStart(d->proxyOp.peer, d->proxyOp.channelId, d->proxyOp.nSteps,
                              d->proxyOp.chunkSize, d->proxyOp.isSend != 0);
    case ncclProfileCeColl:
      if constexpr (std::is_same_v<Descr, ncclProfilerEventDescr_v6_t>) return StartCeColl(comm, d);
      return nullptr;
    default:
      return nullptr;  // GroupApi, CollApi, P2pApi, KernelLaunch, Group: not recorded
  }
}

ncclResult_t Stop(void* handle) {
  if (handle == nullptr) return ncclSuccess;
  switch (KindOf(handle)) {
    case EventKind::kTask:
      CommRecorder::Stop(static_cast<ActiveEvent*>(handle));
      break;
    case EventKind::kKernelCh:
      CommRecorder::KernelStop(static_cast<KernelChEvent*>(handle));
      break;
    case EventKind::kProxyOp:
      CommRecorder::ProxyStop(static_cast<ProxyOpEvent*>(handle));
      break;
  }
  return ncclSuccess;
}

// NCCL passes the GPU timer at a channel's end in the KernelChStop state, just before the
// KernelCh stopEvent (src/plugin/profiler.cc, ncclProfilerStopKernelChEvent).
ncclResult_t RecordState(void* handle, ncclProfilerEventState_t state,
                         ncclProfilerEventStateArgs_v5_t* args) {
  if (handle != nullptr && args != nullptr && state == ncclProfilerKernelChStop &&
      KindOf(handle) == EventKind::kKernelCh) {
    static_cast<KernelChEvent*>(handle)->stop_gpu = args->kernelCh.pTimer;
  }
  return ncclSuccess;
}

ncclResult_t Finalize(void* context) {
  if (context == nullptr) return ncclSuccess;
  Process& p = TheProcess();
  std::unique_ptr<Recorder> last;  // destroyed after the lock: its drain thread stops, files close
  const std::lock_guard lock(p.mutex);
  if (!p.recorder) return ncclSuccess;
  p.recorder->Remove(static_cast<CommRecorder*>(context));
  if (--p.comms == 0) last = std::move(p.recorder);
  return ncclSuccess;
}

ncclResult_t InitV5(void** context, uint64_t comm_id, int* mask, const char* name, int nnodes,
                    int nranks, int rank, ncclDebugLogger_t logfn) {
  return InitCommon(context, mask, {comm_id, name != nullptr ? name : "", nnodes, nranks, rank},
                    logfn);
}

ncclResult_t InitV4(void** context, int* mask, const char* name, uint64_t comm_hash, int nnodes,
                    int nranks, int rank, ncclDebugLogger_t logfn) {
  return InitCommon(context, mask, {comm_hash, name != nullptr ? name : "", nnodes, nranks, rank},
                    logfn);
}

ncclResult_t StartV6(void* context, void** handle, ncclProfilerEventDescr_v6_t* d) {
  *handle = StartCommon(context, d);
  return ncclSuccess;
}
ncclResult_t StartV5(void* context, void** handle, ncclProfilerEventDescr_v5_t* d) {
  *handle = StartCommon(context, d);
  return ncclSuccess;
}
ncclResult_t StartV4(void* context, void** handle, ncclProfilerEventDescr_v4_t* d) {
  *handle = StartCommon(context, d);
  return ncclSuccess;
}

}  // namespace
}  // namespace fabricscope::profiler

extern "C" {
// v6 and v5 share init's signature and the state arguments (profiler_v6.h).
FABRICSCOPE_EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {
    "fabricscope",
    fabricscope::profiler::InitV5,
    fabricscope::profiler::StartV6,
    fabricscope::profiler::Stop,
    fabricscope::profiler::RecordState,
    fabricscope::profiler::Finalize,
};

FABRICSCOPE_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    "fabricscope",
    fabricscope::profiler::InitV5,
    fabricscope::profiler::StartV5,
    fabricscope::profiler::Stop,
    fabricscope::profiler::RecordState,
    fabricscope::profiler::Finalize,
};

FABRICSCOPE_EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
    "fabricscope",
    fabricscope::profiler::InitV4,
    fabricscope::profiler::StartV4,
    fabricscope::profiler::Stop,
    fabricscope::profiler::RecordState,
    fabricscope::profiler::Finalize,
};
}  // extern "C"
