// TEST DOUBLE: see fake_profiler.h.
#include "fake_profiler.h"

#include <dlfcn.h>
#include <time.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "fake_gpu.h"
#include "profiler/nccl_profiler_abi.h"

namespace fake_profiler {

struct Comm {
  void* context = nullptr;
  int mask = 0;
};

namespace {

struct Plugin {
  void* library = nullptr;
  ncclProfiler_v5_t* v5 = nullptr;
  ncclProfiler_v4_t* v4 = nullptr;
};

uint64_t NowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void Logger(ncclDebugLogLevel level, unsigned long, const char* file, int line, const char* fmt,
            ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  fake_gpu::Trace("profiler log level=" + std::to_string(level) + " " + file + ":" +
                  std::to_string(line) + " " + text);
}

void* OpenAsNcclDoes() {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  std::string names[2];
  if (env != nullptr && env[0] != '\0') {
    names[0] = env;
    names[1] = std::string("libnccl-profiler-") + env + ".so";
  } else {
    names[0] = "libnccl-profiler.so";
  }
  for (const std::string& name : names) {
    if (name.empty()) continue;
    if (void* lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      fake_gpu::Trace("profiler opened " + name);
      return lib;
    }
    fake_gpu::Trace("profiler could not open " + name);
  }
  return nullptr;
}

Plugin Load() {
  Plugin p;
#if defined(FAKE_NCCL_VERSION) && FAKE_NCCL_VERSION < 22700
  return p;  // as an NCCL before 2.27, which knows neither v4 nor v5
#endif
  p.library = OpenAsNcclDoes();
  if (p.library == nullptr) return p;
  const int max_version = fake_gpu::EnvInt("FAKE_NCCL_PROFILER_MAX_VERSION", 5);
  if (max_version >= 5) {
    p.v5 = static_cast<ncclProfiler_v5_t*>(::dlsym(p.library, "ncclProfiler_v5"));
  }
  if (p.v5 == nullptr)
    p.v4 = static_cast<ncclProfiler_v4_t*>(::dlsym(p.library, "ncclProfiler_v4"));
  fake_gpu::Trace(std::string("profiler interface ") + (p.v5 != nullptr   ? "v5"
                                                        : p.v4 != nullptr ? "v4"
                                                                          : "none"));
  return p;
}

const Plugin& ThePlugin() {
  static const Plugin plugin = Load();  // NCCL loads it once per process
  return plugin;
}

template <typename Descr>
void FillColl(Descr* d, int rank, void* parent, const Collective& c) {
  d->type = ncclProfileColl;
  d->parentObj = parent;
  d->rank = rank;
  d->coll.seqNumber = c.seq;
  d->coll.func = c.func;
  d->coll.sendBuff = c.send;
  d->coll.recvBuff = c.recv;
  d->coll.count = c.count;
  d->coll.root = c.root;
  d->coll.datatype = c.datatype;
  d->coll.nChannels = 2;  // the fake's choice, as NCCL's tuner would make one
  d->coll.nWarps = 16;
  d->coll.algo = "RING";
  d->coll.proto = "SIMPLE";
}

template <typename Descr, typename Api>
void* StartOne(const Api* api, Comm* comm, Descr* d) {
  void* handle = nullptr;
  api->startEvent(comm->context, &handle, d);
  return handle;
}

template <typename Descr, typename Api>
Events StartWith(const Api* api, Comm* comm, int rank, const Collective& c) {
  Events e;
  if ((comm->mask & ncclProfileGroup) != 0) {
    Descr g{};
    g.type = ncclProfileGroup;
    g.rank = rank;
    e.group = StartOne(api, comm, &g);
  }
  if ((comm->mask & ncclProfileColl) != 0) {
    Descr d{};
    FillColl(&d, rank, e.group, c);
    if constexpr (sizeof(d.type) == 8) d.coll.parentGroup = e.group;
    e.coll = StartOne(api, comm, &d);
  }
  return e;
}

template <typename Descr, typename Api>
void KernelStartWith(const Api* api, Comm* comm, int rank, Events* e) {
  if ((comm->mask & ncclProfileKernelCh) == 0) return;
  Descr d{};
  d.type = ncclProfileKernelCh;
  d.parentObj = e->coll;
  d.rank = rank;
  d.kernelCh.channelId = 0;
  d.kernelCh.pTimer = NowNs();
  e->kernel = StartOne(api, comm, &d);
}

template <typename Args, typename Api>
void StopWith(const Api* api, Events* e) {
  if (e->kernel != nullptr) {
    Args args{};
    args.kernelCh.pTimer = NowNs();
    api->recordEventState(e->kernel, ncclProfilerKernelChStop, &args);
    api->stopEvent(e->kernel);
  }
  if (e->coll != nullptr) api->stopEvent(e->coll);
  if (e->group != nullptr) api->stopEvent(e->group);
  *e = Events{};
}

}  // namespace

Comm* Init(uint64_t comm_id, int nnodes, int nranks, int rank) {
  const Plugin& p = ThePlugin();
  if (p.v5 == nullptr && p.v4 == nullptr) return nullptr;
  auto* comm = new Comm;
  const int rc =
      p.v5 != nullptr
          ? p.v5->init(&comm->context, comm_id, &comm->mask, "", nnodes, nranks, rank, Logger)
          : p.v4->init(&comm->context, &comm->mask, "", comm_id, nnodes, nranks, rank, Logger);
  fake_gpu::Trace("profiler init rank=" + std::to_string(rank) + " result=" + std::to_string(rc) +
                  " mask=" + std::to_string(comm->mask));
  if (rc != ncclSuccess) {
    delete comm;
    return nullptr;
  }
  return comm;
}

Events Start(Comm* comm, int rank, const Collective& coll) {
  if (comm == nullptr) return {};
  const Plugin& p = ThePlugin();
  return p.v5 != nullptr ? StartWith<ncclProfilerEventDescr_v5_t>(p.v5, comm, rank, coll)
                         : StartWith<ncclProfilerEventDescr_v4_t>(p.v4, comm, rank, coll);
}

void KernelStart(Comm* comm, int rank, Events* events) {
  if (comm == nullptr) return;
  const Plugin& p = ThePlugin();
  if (p.v5 != nullptr) {
    KernelStartWith<ncclProfilerEventDescr_v5_t>(p.v5, comm, rank, events);
  } else {
    KernelStartWith<ncclProfilerEventDescr_v4_t>(p.v4, comm, rank, events);
  }
}

void Stop(Comm* comm, Events* events) {
  if (comm == nullptr) return;
  const Plugin& p = ThePlugin();
  if (p.v5 != nullptr) {
    StopWith<ncclProfilerEventStateArgs_v5_t>(p.v5, events);
  } else {
    StopWith<ncclProfilerEventStateArgs_v4_t>(p.v4, events);
  }
}

void Finalize(Comm* comm) {
  if (comm == nullptr) return;
  const Plugin& p = ThePlugin();
  const int rc = p.v5 != nullptr ? p.v5->finalize(comm->context) : p.v4->finalize(comm->context);
  fake_gpu::Trace("profiler finalize result=" + std::to_string(rc));
  delete comm;
}

const char* DatatypeName(int type) {
  static constexpr const char* kNames[] = {
      "ncclInt8",   "ncclUint8",   "ncclInt32",   "ncclUint32",  "ncclInt64",
      "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16"};
  return type >= 0 && type < 10 ? kNames[type] : "Unknown";
}

}  // namespace fake_profiler
