// libnccl-profiler-fabricscope.so: the NCCL profiler plugin. NCCL (2.27: v4, 2.28: v5) finds
// it through NCCL_PROFILER_PLUGIN, looks up `ncclProfiler_v5` or `ncclProfiler_v4`, calls
// init once per communicator and startEvent/stopEvent around every collective. Everything
// but NCCL's ABI is in recorder.* and the sinks; docs/watch.md has the variables.
#include <exception>
#include <memory>
#include <mutex>
#include <string>
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

ncclResult_t InitCommon(void** context, int* mask, CommInfo info, ncclDebugLogger_t logfn) {
  *context = nullptr;
  *mask = 0;
  Process& p = TheProcess();
  const std::lock_guard lock(p.mutex);
  if (!p.recorder) {
    Settings s = ReadSettings(Env::Process());
    if (!s.errors.empty()) Log(logfn, NCCL_LOG_WARN, "fabricscope profiler: " + s.errors);
    if (!s.enabled) return ncclSuccess;  // nothing at all: no event, file, thread or port
    auto sinks = MakeSinks(s, logfn);
    p.recorder = std::make_unique<Recorder>(std::move(s), std::move(sinks));
  }
  *context = p.recorder->Add(std::move(info));
  *mask = ncclProfileColl;
  ++p.comms;
  return ncclSuccess;
}

template <typename Descr>
ncclResult_t StartCommon(void* context, void** handle, const Descr* d) {
  *handle = nullptr;
  if (context == nullptr || d == nullptr || d->type != ncclProfileColl) return ncclSuccess;
  CollectiveStart s;
  s.seq = d->coll.seqNumber;
  s.func = d->coll.func;
  s.count = d->coll.count;
  s.datatype = d->coll.datatype;
  s.root = d->coll.root;
  s.channels = d->coll.nChannels;
  s.algo = d->coll.algo;
  s.proto = d->coll.proto;
  *handle = static_cast<CommRecorder*>(context)->Start(s);
  return ncclSuccess;
}

ncclResult_t Stop(void* handle) {
  if (handle != nullptr) CommRecorder::Stop(static_cast<ActiveEvent*>(handle));
  return ncclSuccess;
}

ncclResult_t RecordState(void*, ncclProfilerEventState_t, ncclProfilerEventStateArgs_v5_t*) {
  return ncclSuccess;  // collectives have no states; other events are not activated
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

ncclResult_t StartV5(void* context, void** handle, ncclProfilerEventDescr_v5_t* d) {
  return StartCommon(context, handle, d);
}
ncclResult_t StartV4(void* context, void** handle, ncclProfilerEventDescr_v4_t* d) {
  return StartCommon(context, handle, d);
}

}  // namespace
}  // namespace fabricscope::profiler

extern "C" {
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
