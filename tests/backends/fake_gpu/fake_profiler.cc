// TEST DOUBLE: see fake_profiler.h. Citations are of NVIDIA/nccl at v2.30.7-1
// (73cf112295c33aee2b895f329f592f2a9b4b0f97).
#include "fake_profiler.h"

#include <dlfcn.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "fake_gpu.h"
#include "profiler/nccl_profiler_abi.h"

namespace fake_profiler {
namespace {

// NCCL builds every descriptor as the newest version and adapts it to the plugin's
// (src/include/plugin/nccl_profiler.h: ncclProfiler_t is ncclProfiler_v6_t).
using Descr = ncclProfilerEventDescr_v6_t;
using StateArgs = ncclProfilerEventStateArgs_v6_t;

// The event bits that make NCCL start each event (src/plugin/profiler.cc).
constexpr int kGroupApiMask = ncclProfileGroupApi | ncclProfileP2pApi | ncclProfileCollApi |
                              ncclProfileKernelLaunch | ncclProfileGroup | ncclProfileColl |
                              ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |
                              ncclProfileKernelCh | ncclProfileNetPlugin | ncclProfileCeColl |
                              ncclProfileCeSync | ncclProfileCeBatch;  // StartGroupApiEvent
constexpr int kCollApiMask = ncclProfileCollApi | ncclProfileColl | ncclProfileProxyOp |
                             ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin |
                             ncclProfileCeColl | ncclProfileCeSync |
                             ncclProfileCeBatch;  // StartCollApiEvent
constexpr int kP2pApiMask = ncclProfileP2pApi | ncclProfileP2p | ncclProfileProxyOp |
                            ncclProfileProxyStep | ncclProfileKernelCh |
                            ncclProfileNetPlugin;  // StartP2pApiEvent
constexpr int kGroupMask = ncclProfileGroup | ncclProfileColl | ncclProfileP2p |
                           ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh |
                           ncclProfileNetPlugin;  // StartGroupEvent
constexpr int kTaskMask = ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh |
                          ncclProfileNetPlugin;  // StartTaskEvents, with Coll or P2p
constexpr int kProxyOpMask =
    ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin;  // StartProxyOpEvent

struct SlowPeer {
  int src = -1;
  int dst = -1;
  double factor = 1;  // the link's send ProxyOps last this many times the others'
};

struct Plugin {
  void* library = nullptr;
  int version = 0;  // 6, 5, 4; 0: none
  ncclProfiler_v6_t* v6 = nullptr;
  ncclProfiler_v5_t* v5 = nullptr;
  ncclProfiler_v4_t* v4 = nullptr;
  SlowPeer slow;        // FAKE_NCCL_SLOW_PEER
  int64_t link_us = 0;  // FAKE_NCCL_LINK_US: every ProxyOp's network time after the kernel
};

// ncclProfilerEventMask (src/plugin/profiler.cc): one int for the whole process, written by
// every communicator's init, read with relaxed atomic loads by every enqueue.
int g_event_mask = 0;

// The fake's GPU timer (%globaltimer, ns): its epoch is not the host clock's.
uint64_t GpuTimerNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1000000000000ULL + static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<uint64_t>(ts.tv_nsec);
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

// src/plugin/profiler.cc, ncclProfilerPluginLoad:58-62: NCCL_PROFILER_PLUGIN=none loads
// nothing; src/plugin/plugin_open.cc, openPluginLib: the name as given (libnccl-profiler.so
// when unset), then libnccl-profiler-<name>.so, but only for a name that is neither a path
// (no '/') nor a library's name (lib*.so). (NCCL then tries the net plugin's library, which
// the fake does not have.)
bool TryPrefixed(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) return false;
  const bool library =
      name.rfind("lib", 0) == 0 && name.size() >= 3 && name.compare(name.size() - 3, 3, ".so") == 0;
  return !library;
}

void* OpenAsNcclDoes() {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  const std::string given = env != nullptr ? env : "";
  if (::strcasecmp(given.c_str(), "none") == 0) return nullptr;
  std::string names[2];
  names[0] = given.empty() ? "libnccl-profiler.so" : given;
  if (TryPrefixed(given)) names[1] = "libnccl-profiler-" + given + ".so";
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

// FAKE_NCCL_SLOW_PEER=src:dst:factor, read here only.
SlowPeer ReadSlowPeer() {
  SlowPeer s;
  if (const char* v = std::getenv("FAKE_NCCL_SLOW_PEER"); v != nullptr && v[0] != '\0') {
    if (std::sscanf(v, "%d:%d:%lf", &s.src, &s.dst, &s.factor) != 3 || !(s.factor >= 1)) {
      std::fprintf(stderr, "fake nccl: FAKE_NCCL_SLOW_PEER=%s is not src:dst:factor (>= 1)\n", v);
      std::abort();  // a test double's misuse: the test is wrong
    }
  }
  return s;
}

// src/plugin/profiler.cc, ncclProfilerPluginLoad:72-87: v6, then v5, then v4 (then v3, v2, v1,
// which the fake leaves out: fabricscope's plugin exports v4 to v6 only).
Plugin Load() {
  Plugin p;
  p.slow = ReadSlowPeer();
  p.link_us = fake_gpu::EnvInt("FAKE_NCCL_LINK_US", 0);
#if defined(FAKE_NCCL_VERSION) && FAKE_NCCL_VERSION < 22700
  return p;  // as an NCCL before 2.27, which knows none of v4, v5, v6
#endif
  p.library = OpenAsNcclDoes();
  if (p.library == nullptr) return p;
  const int max_version = fake_gpu::EnvInt("FAKE_NCCL_PROFILER_MAX_VERSION", 6);
  if (max_version >= 6)
    p.v6 = static_cast<ncclProfiler_v6_t*>(::dlsym(p.library, "ncclProfiler_v6"));
  if (p.v6 == nullptr && max_version >= 5) {
    p.v5 = static_cast<ncclProfiler_v5_t*>(::dlsym(p.library, "ncclProfiler_v5"));
  }
  if (p.v6 == nullptr && p.v5 == nullptr) {
    p.v4 = static_cast<ncclProfiler_v4_t*>(::dlsym(p.library, "ncclProfiler_v4"));
  }
  p.version = p.v6 != nullptr ? 6 : p.v5 != nullptr ? 5 : p.v4 != nullptr ? 4 : 0;
  fake_gpu::Trace("profiler interface " +
                  (p.version > 0 ? "v" + std::to_string(p.version) : std::string("none")));
  return p;
}

// NCCL loads it once per process, under profilerMutex (NVIDIA/nccl v2.30.7-1
// src/plugin/profiler.cc:52); taken on every use here, so that helgrind, which does not see
// the guard of a function-local static, sees the load happen before each use.
const Plugin& ThePlugin() {
  static std::mutex mutex;  // constant-initialized: no guard of its own
  const std::lock_guard lock(mutex);
  static const Plugin plugin = Load();
  return plugin;
}

// src/plugin/profiler/profiler_v5.cc, ncclProfiler_startEvent: the v5 members are copied
// one by one; they sit where v6 has them (profiler_v6.h), so a copy of v5's size is the same.
// CE events are dropped.
void* StartV5(const ncclProfiler_v5_t* api, void* context, const Descr* d) {
  if ((d->type & (ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch)) != 0) return nullptr;
  ncclProfilerEventDescr_v5_t v5;
  std::memcpy(&v5, d, sizeof v5);
  void* handle = nullptr;
  api->startEvent(context, &handle, &v5);
  return handle;
}

// src/plugin/profiler/profiler_v4.cc, ncclProfiler_startEvent: the type narrowed to 8 bits;
// the API, KernelLaunch and CE events dropped; a Coll's or P2p's parentObj is its group;
// p2p.nChannels is not copied (left as the stack had it: poisoned here).
void* StartV4(const ncclProfiler_v4_t* api, void* context, const Descr* d) {
  ncclProfilerEventDescr_v4_t v4;
  std::memset(&v4, 0xEE, sizeof v4);
  v4.type = static_cast<uint8_t>(d->type);
  v4.parentObj = d->parentObj;
  v4.rank = d->rank;
  switch (d->type) {
    case ncclProfileGroup:
      break;
    case ncclProfileColl:
      v4.coll.seqNumber = d->coll.seqNumber;
      v4.coll.func = d->coll.func;
      v4.coll.sendBuff = d->coll.sendBuff;
      v4.coll.recvBuff = d->coll.recvBuff;
      v4.coll.count = d->coll.count;
      v4.coll.root = d->coll.root;
      v4.coll.datatype = d->coll.datatype;
      v4.coll.nChannels = d->coll.nChannels;
      v4.coll.nWarps = d->coll.nWarps;
      v4.coll.algo = d->coll.algo;
      v4.coll.proto = d->coll.proto;
      v4.parentObj = d->coll.parentGroup;
      break;
    case ncclProfileP2p:
      v4.p2p.func = d->p2p.func;
      v4.p2p.buff = d->p2p.buff;
      v4.p2p.count = d->p2p.count;
      v4.p2p.datatype = d->p2p.datatype;
      v4.p2p.peer = d->p2p.peer;
      v4.parentObj = d->p2p.parentGroup;
      break;
    case ncclProfileProxyOp:
      v4.proxyOp.pid = d->proxyOp.pid;
      v4.proxyOp.channelId = d->proxyOp.channelId;
      v4.proxyOp.peer = d->proxyOp.peer;
      v4.proxyOp.nSteps = d->proxyOp.nSteps;
      v4.proxyOp.chunkSize = d->proxyOp.chunkSize;
      v4.proxyOp.isSend = d->proxyOp.isSend;
      break;
    case ncclProfileProxyStep:
      v4.proxyStep.step = d->proxyStep.step;
      break;
    case ncclProfileKernelCh:
      v4.kernelCh.channelId = d->kernelCh.channelId;
      v4.kernelCh.pTimer = d->kernelCh.pTimer;
      break;
    default:
      return nullptr;
  }
  void* handle = nullptr;
  api->startEvent(context, &handle, &v4);
  return handle;
}

void* StartEvent(void* context, Descr* d) {
  const Plugin& p = ThePlugin();
  void* handle = nullptr;
  switch (p.version) {
    case 6:
      p.v6->startEvent(context, &handle, d);
      return handle;
    case 5:
      return StartV5(p.v5, context, d);
    case 4:
      return StartV4(p.v4, context, d);
    default:
      return nullptr;
  }
}

// profiler_v4.cc, ncclProfiler_recordEventState passes the states v4 knows (not the
// GroupApi ones); v5 and v6 pass them all.
void RecordState(void* handle, ncclProfilerEventState_t state, StateArgs* args) {
  if (handle == nullptr) return;
  const Plugin& p = ThePlugin();
  if (p.version == 6) p.v6->recordEventState(handle, state, args);
  if (p.version == 5) p.v5->recordEventState(handle, state, args);
  if (p.version == 4 && state != ncclProfilerGroupStartApiStop &&
      state != ncclProfilerGroupEndApiStart) {
    p.v4->recordEventState(handle, state, args);
  }
}

void StopEvent(void* handle) {
  if (handle == nullptr) return;  // NCCL tests every handle before stopping it
  const Plugin& p = ThePlugin();
  if (p.version == 6) p.v6->stopEvent(handle);
  if (p.version == 5) p.v5->stopEvent(handle);
  if (p.version == 4) p.v4->stopEvent(handle);
}

int LoadMask() { return __atomic_load_n(&g_event_mask, __ATOMIC_RELAXED); }

// NCCL's proxy progress thread of a communicator (src/proxy.cc): the ProxyOp, ProxyStep and
// KernelCh events are started and stopped there, not on the stream or the caller's thread.
// Its progressOps loop advances every active operation on each pass, so one operation that
// is slow to finish delays no other's events: work posted with a time (PostAt) runs when
// due, and meanwhile the rest runs.
class ProxyThread {
 public:
  using Clock = std::chrono::steady_clock;
  ProxyThread() : thread_([this] { Run(); }) {}
  ~ProxyThread() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  ProxyThread(const ProxyThread&) = delete;
  ProxyThread& operator=(const ProxyThread&) = delete;

  void Post(std::function<void()> work) {
    {
      const std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    wake_.notify_one();
  }

  // `work` at `when`, after what was posted before it is due; in time order among these.
  void PostAt(Clock::time_point when, std::function<void()> work) {
    {
      const std::lock_guard lock(mutex_);
      timed_.emplace(when, std::move(work));
    }
    wake_.notify_one();
  }

 private:
  bool Due() const { return !timed_.empty() && timed_.begin()->first <= Clock::now(); }

  void Run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (queue_.empty() && !Due()) {
        if (stopping_ && timed_.empty()) return;  // everything posted has run
        if (timed_.empty()) {
          wake_.wait(lock, [this] { return stopping_ || !queue_.empty() || !timed_.empty(); });
        } else {
          wake_.wait_until(lock, timed_.begin()->first);
        }
        continue;
      }
      std::function<void()> work;
      if (Due()) {
        work = std::move(timed_.begin()->second);
        timed_.erase(timed_.begin());
      } else {
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      lock.unlock();
      work();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::multimap<Clock::time_point, std::function<void()>> timed_;
  bool stopping_ = false;
  std::thread thread_;
};

// ncclProfilerApiState (src/include/profiler.h, src/plugin/profiler.cc): thread-local, as the
// API calls are: the outermost group's GroupApi handle, the depth the profiler counts it at,
// and its state (ncclProfilerGroupApiStartState*).
enum class GroupApiState { kReset, kStarted, kStopped };
struct ApiState {
  void* group_api = nullptr;
  int mask = 0;
  int profiler_group_depth = 0;
  GroupApiState state = GroupApiState::kReset;
};
thread_local ApiState api_state;

}  // namespace

struct Comm {
  void* context = nullptr;
  int rank = 0;
  int nranks = 0;
  std::mutex seq_mutex;
  std::map<std::string, uint64_t> seq;  // comm->seqNumber[func]
  std::unique_ptr<ProxyThread> proxy = std::make_unique<ProxyThread>();
};

struct Proxy {
  int peer = 0;
  int channel = 0;
  bool send = false;
  void* handle = nullptr;
};

struct Flight {
  Comm* comm = nullptr;
  int rank = 0;
  std::vector<Task> tasks;
  std::vector<void*> handles;              // each task's Coll or P2p handle (taskEventHandle)
  std::vector<std::vector<void*>> kernel;  // [task][channel] KernelCh handles (proxy thread)
  std::vector<Proxy> proxies;              // proxy thread only
  uint64_t gpu_start = 0;
};

Comm* Init(uint64_t comm_id, int nnodes, int nranks, int rank) {
  const Plugin& p = ThePlugin();
  if (p.version == 0) return nullptr;
  auto* comm = new Comm;
  comm->rank = rank;
  comm->nranks = nranks;
  // src/plugin/profiler.cc, ncclProfilerPluginInit: the process's one mask, by address.
  int rc = ncclSuccess;
  if (p.version == 6) {
    rc = p.v6->init(&comm->context, comm_id, &g_event_mask, "", nnodes, nranks, rank, Logger);
  } else if (p.version == 5) {
    rc = p.v5->init(&comm->context, comm_id, &g_event_mask, "", nnodes, nranks, rank, Logger);
  } else {
    rc = p.v4->init(&comm->context, &g_event_mask, "", comm_id, nnodes, nranks, rank, Logger);
  }
  fake_gpu::Trace("profiler init rank=" + std::to_string(rank) + " result=" + std::to_string(rc) +
                  " mask=" + std::to_string(LoadMask()));
  if (rc != ncclSuccess) {
    delete comm;
    return nullptr;
  }
  return comm;
}

// src/enqueue.cc, ncclEnqueueCheck:3132-3136: a GroupApi already started counts the call's
// implicit ncclGroupStartInternal.
void EnqueueBegin() {
  if (api_state.profiler_group_depth > 0) ++api_state.profiler_group_depth;
}

namespace {

// src/plugin/profiler.cc, ncclProfilerRecordGroupApiEventState: each state once, in order.
void RecordGroupApiState(ncclProfilerEventState_t state) {
  bool record = false;
  if (state == ncclProfilerGroupStartApiStop && api_state.state == GroupApiState::kStarted) {
    api_state.state = GroupApiState::kStopped;
    record = true;
  } else if (state == ncclProfilerGroupEndApiStart && api_state.state == GroupApiState::kStopped) {
    api_state.state = GroupApiState::kReset;
    record = true;
  }
  if (record) RecordState(api_state.group_api, state, nullptr);
}

}  // namespace

// src/enqueue.cc, collTaskAppend and p2pTaskAppend (2629-2630, 2699-2700, 2772-2773);
// src/plugin/profiler.cc, ncclProfilerStartGroupApiEvent (outermost group only: the profiler's
// depth is 0; groupDepth is ncclGroupDepth, the call's implicit group included),
// ncclProfilerStartCollApiEvent, ncclProfilerStartP2pApiEvent. The API event is stopped at the
// end of the append (ncclProfilerStopCollApiEvent) but its handle stays the task's
// (t->collApiEventHandle).
void Append(Comm* comm, int rank, Task* task, int nccl_group_depth) {
  if (comm == nullptr) return;
  api_state.mask = LoadMask();
  if ((api_state.mask & kGroupApiMask) != 0 && api_state.profiler_group_depth == 0) {
    Descr g{};
    g.type = ncclProfileGroupApi;
    g.groupApi.graphCaptured = false;
    g.groupApi.groupDepth = nccl_group_depth;
    api_state.group_api = StartEvent(comm->context, &g);
    api_state.profiler_group_depth = nccl_group_depth;
    api_state.state = GroupApiState::kStarted;
  }
  RecordGroupApiState(ncclProfilerGroupStartApiStop);
  Descr a{};
  a.parentObj = api_state.group_api;
  a.rank = 0;  // NCCL leaves the API events' rank unset
  (void)rank;
  if (task->p2p && (api_state.mask & kP2pApiMask) != 0) {
    a.type = ncclProfileP2pApi;
    a.p2pApi.func = task->func;
    a.p2pApi.count = task->count;
    a.p2pApi.datatype = task->datatype;
    task->api = StartEvent(comm->context, &a);
    StopEvent(task->api);  // ncclProfilerStopP2pApiEvent
  } else if (!task->p2p && (api_state.mask & kCollApiMask) != 0) {
    a.type = ncclProfileCollApi;
    a.collApi.func = task->func;
    a.collApi.count = task->count;
    a.collApi.datatype = task->datatype;
    a.collApi.root = task->root;
    task->api = StartEvent(comm->context, &a);
    StopEvent(task->api);
  }
  // t->eActivationMask. A Broadcast's is 0: with one root in the group ncclPrepareTasks
  // rebuilds its task from pool memory (src/enqueue.cc:368-383, eActivationMask left 0), with
  // several it runs as AllGatherV, whose mask geteActivationMask gives as 0: no Group,
  // KernelLaunch, Coll, ProxyOp or KernelCh, only its GroupApi and CollApi.
  task->mask = task->coll_event ? api_state.mask : 0;
  task->group_api = api_state.group_api;
}

// src/enqueue.cc, ncclLaunchKernel; src/plugin/profiler.cc,
// ncclProfilerStartKernelLaunchEvent: the first task with a mask decides; its GroupApi is
// the parent.
void KernelLaunch(Comm* comm, const std::vector<Task>& tasks) {
  if (comm == nullptr) return;
  for (const Task& t : tasks) {
    if (t.mask == 0) continue;
    if ((t.mask & ncclProfileKernelLaunch) == 0) return;
    Descr d{};
    d.type = ncclProfileKernelLaunch;
    d.parentObj = t.group_api;
    void* h = StartEvent(comm->context, &d);
    StopEvent(h);  // ncclProfilerStopKernelLaunchEvent, once the kernel is launched
    return;
  }
}

// src/group.cc, ncclGroupEndInternal:781-786: the profiler's depth counted down, and
// GroupEndApiStart recorded when it reaches 0, before the group is launched.
void GroupEndBegin() {
  if (api_state.profiler_group_depth > 0) --api_state.profiler_group_depth;
  if (api_state.profiler_group_depth == 0) RecordGroupApiState(ncclProfilerGroupEndApiStart);
}

// src/group.cc, ncclGroupEndInternal:876 (its exit, after the launch);
// src/plugin/profiler.cc, ncclProfilerStopGroupApiEvent: the stop at depth 0 only.
void GroupEndExit() {
  if (api_state.group_api == nullptr || api_state.profiler_group_depth != 0) return;
  StopEvent(api_state.group_api);
  api_state.group_api = nullptr;
}

namespace {

void* StartTask(Comm* comm, int rank, void* group, Task& t) {
  Descr d{};
  d.rank = rank;
  if (t.p2p) {
    if ((t.mask & (ncclProfileP2p | kTaskMask)) == 0) return nullptr;
    d.type = ncclProfileP2p;
    d.parentObj = t.api;
    d.p2p.parentGroup = group;
    d.p2p.func = t.func;
    d.p2p.buff = t.recv != nullptr ? t.recv : const_cast<void*>(t.send);
    d.p2p.count = t.count;
    d.p2p.datatype = t.datatype;
    d.p2p.peer = t.root;
    d.p2p.nChannels = t.channels;
    return StartEvent(comm->context, &d);
  }
  uint64_t seq = 0;
  {
    // The sequence counts per function, also without a plugin (StartTaskEvents).
    const std::lock_guard lock(comm->seq_mutex);
    seq = comm->seq[t.func]++;
  }
  if (!t.coll_event || (t.mask & (ncclProfileColl | kTaskMask)) == 0) return nullptr;
  d.type = ncclProfileColl;
  d.parentObj = t.api;
  d.coll.parentGroup = group;
  d.coll.seqNumber = seq;
  d.coll.func = t.func;
  d.coll.sendBuff = t.send;
  d.coll.recvBuff = t.recv;
  d.coll.count = t.count;
  d.coll.root = t.root;
  d.coll.datatype = t.datatype;
  d.coll.nChannels = t.channels;
  d.coll.nWarps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  return StartEvent(comm->context, &d);
}

// The network operations of a task per channel: a ring's send to the next rank and receive
// from the previous one; a send or receive towards its peer, none towards itself (src/proxy.cc,
// ncclProxySaveOp: `if (op->root == comm->rank) return ncclSuccess;` for ncclPatternSend and
// ncclPatternRecv; src/enqueue.cc, addP2pToPlan: `nProxyOps = selfSend ? 0 : 2`).
void AddProxies(const Comm& comm, const Task& t, std::vector<Proxy>* out) {
  if (t.p2p && t.root == comm.rank) return;
  for (int ch = 0; ch < t.channels; ++ch) {
    if (t.p2p) {
      out->push_back({t.root, ch, std::strcmp(t.func, "Send") == 0, nullptr});
    } else if (comm.nranks > 1) {
      out->push_back({(comm.rank + 1) % comm.nranks, ch, true, nullptr});
      out->push_back({(comm.rank + comm.nranks - 1) % comm.nranks, ch, false, nullptr});
    }
  }
}

}  // namespace

// src/enqueue.cc, hostStreamPlanTask: ncclProfilerStartGroupEvent, StartTaskEvents,
// uploadProxyOps and ncclProxyStart (the proxy thread starts the ProxyOps), StopTaskEvents,
// StopGroupEvent; all before the kernel has done anything. Called on the launching thread, or
// on the stream for a captured plan (fake_nccl.cc, Launch).
std::shared_ptr<Flight> PlanStart(Comm* comm, int rank, std::vector<Task> tasks) {
  if (comm == nullptr) return nullptr;
  auto f = std::make_shared<Flight>();
  f->comm = comm;
  f->rank = rank;
  f->tasks = std::move(tasks);
  int mask = 0;
  for (const Task& t : f->tasks) mask |= t.mask;
  void* group = nullptr;
  if ((mask & kGroupMask) != 0) {
    Descr g{};
    g.type = ncclProfileGroup;
    group = StartEvent(comm->context, &g);
  }
  for (Task& t : f->tasks) f->handles.push_back(StartTask(comm, rank, group, t));
  f->kernel.resize(f->tasks.size());
  std::vector<std::pair<size_t, Proxy>> proxies;
  for (size_t i = 0; i < f->tasks.size(); ++i) {
    if ((f->tasks[i].mask & kProxyOpMask) == 0) continue;
    std::vector<Proxy> mine;
    AddProxies(*comm, f->tasks[i], &mine);
    for (const Proxy& p : mine) proxies.emplace_back(i, p);
  }
  // src/plugin/profiler.cc, ncclProfilerStartProxyOpEvent: parent is the task's handle.
  comm->proxy->Post([f, proxies] {
    for (const auto& [task, p] : proxies) {
      Descr d{};
      d.type = ncclProfileProxyOp;
      d.parentObj = f->handles[task];
      d.rank = f->rank;
      d.proxyOp.pid = ::getpid();
      d.proxyOp.channelId = static_cast<uint8_t>(p.channel);
      d.proxyOp.peer = p.peer;
      d.proxyOp.nSteps = 4;
      d.proxyOp.chunkSize = 1 << 19;
      d.proxyOp.isSend = p.send ? 1 : 0;
      Proxy started = p;
      started.handle = StartEvent(f->comm->context, &d);
      f->proxies.push_back(started);
    }
  });
  for (void* h : f->handles) StopEvent(h);  // ncclProfilerStopTaskEvents
  StopEvent(group);                         // ncclProfilerStopGroupEvent
  return f;
}

// src/transport/profiler.cc, profilerProxyProgress: when the kernel's channel has posted its
// start counter, KernelCh starts with the GPU's timestamp (ncclProfilerStartKernelChEvent;
// parent: the task's handle, no rank).
void KernelBegin(const std::shared_ptr<Flight>& flight) {
  if (flight == nullptr) return;
  flight->gpu_start = GpuTimerNs();
  std::shared_ptr<Flight> fl = flight;
  flight->comm->proxy->Post([fl] {
    for (size_t i = 0; i < fl->tasks.size(); ++i) {
      const Task& t = fl->tasks[i];
      fl->kernel[i].assign(t.channels, nullptr);
      if ((t.mask & ncclProfileKernelCh) == 0) continue;
      // No proxy op for a send or receive to itself, so no profiler proxy op and no KernelCh
      // (src/enqueue.cc, addP2pToPlan: nProxyOps = selfSend ? 0 : 2).
      if (t.p2p && t.root == fl->rank) continue;
      for (int ch = 0; ch < t.channels; ++ch) {
        Descr d{};
        d.type = ncclProfileKernelCh;
        d.parentObj = fl->handles[i];
        d.kernelCh.channelId = static_cast<uint8_t>(ch);
        d.kernelCh.pTimer = fl->gpu_start;
        fl->kernel[i][ch] = StartEvent(fl->comm->context, &d);
      }
    }
  });
}

namespace {

bool SlowLink(const Plugin& p, int rank, const Proxy& proxy) {
  return p.slow.factor > 1 && rank == p.slow.src && proxy.send && proxy.peer == p.slow.dst;
}

// How long after the kernel a ProxyOp's network work ends: FAKE_NCCL_LINK_US on every link
// (factor times it on the slow one), or, without it, (factor - 1) kernel times on the slow
// link only.
std::chrono::nanoseconds NetworkTime(const Plugin& p, int rank, const Proxy& proxy,
                                     uint64_t kernel_ns) {
  const double link_ns = static_cast<double>(p.link_us) * 1000;
  double ns = link_ns;
  if (SlowLink(p, rank, proxy)) {
    ns = link_ns > 0 ? p.slow.factor * link_ns
                     : (p.slow.factor - 1) * static_cast<double>(kernel_ns);
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(ns));
}

// src/plugin/profiler.cc: ProxyStep events per step when asked for
// (ncclProfilerStartSendProxyStepEvent, RecordProxyStepEventState, StopProxyStepEvent),
// then the ProxyOp's stop (ncclProfilerStopProxyOpEvent; src/transport/net.cc,
// sendProxyProgress and recvProxyProgress, once the op's own steps are done).
void FinishProxy(Flight* f, const Proxy& proxy, int mask) {
  if ((mask & ncclProfileProxyStep) != 0 && proxy.handle != nullptr) {
    for (int step = 0; step < 4; ++step) {
      Descr d{};
      d.type = ncclProfileProxyStep;
      d.parentObj = proxy.handle;
      d.rank = f->rank;
      d.proxyStep.step = step;
      void* h = StartEvent(f->comm->context, &d);
      StateArgs a{};
      a.proxyStep.transSize = 1 << 19;
      RecordState(h, proxy.send ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvWait,
                  &a);
      StopEvent(h);
    }
  }
  StopEvent(proxy.handle);
}

}  // namespace

// The kernel has ended: on the proxy thread, the ProxyOps finish and each channel's KernelCh
// gets ncclProfilerKernelChStop with the GPU's end timestamp, then its stop
// (ncclProfilerStopKernelChEvent). A ProxyOp with a network time (NetworkTime) finishes that
// long after, on its own while the proxy thread goes on; the rest at once.
void KernelEnd(const std::shared_ptr<Flight>& flight) {
  if (flight == nullptr) return;
  const uint64_t gpu_stop = GpuTimerNs();
  const uint64_t kernel_ns = gpu_stop - flight->gpu_start;
  std::shared_ptr<Flight> f = flight;
  ProxyThread* proxy_thread = flight->comm->proxy.get();
  proxy_thread->Post([f, gpu_stop, kernel_ns, proxy_thread] {
    const Plugin& p = ThePlugin();
    int mask = 0;
    for (const Task& t : f->tasks) mask |= t.mask;
    const auto now = ProxyThread::Clock::now();
    for (const Proxy& proxy : f->proxies) {
      const std::chrono::nanoseconds after = NetworkTime(p, f->rank, proxy, kernel_ns);
      if (after.count() <= 0) {
        FinishProxy(f.get(), proxy, mask);
      } else {
        proxy_thread->PostAt(now + after, [f, proxy, mask] { FinishProxy(f.get(), proxy, mask); });
      }
    }
    for (auto& channels : f->kernel) {
      for (void* h : channels) {
        if (h == nullptr) continue;
        StateArgs a{};
        a.kernelCh.pTimer = gpu_stop;
        RecordState(h, ncclProfilerKernelChStop, &a);
        StopEvent(h);
      }
    }
  });
}

// src/plugin/profiler.cc, ncclProfilerPluginFinalize, after the proxy thread has finished.
void Finalize(Comm* comm) {
  if (comm == nullptr) return;
  comm->proxy.reset();
  const Plugin& p = ThePlugin();
  int rc = ncclSuccess;
  if (p.version == 6) rc = p.v6->finalize(comm->context);
  if (p.version == 5) rc = p.v5->finalize(comm->context);
  if (p.version == 4) rc = p.v4->finalize(comm->context);
  fake_gpu::Trace("profiler finalize result=" + std::to_string(rc));
  delete comm;
}

// src/collectives.cc, ncclDatatypeToString: no case for ncclUint8, which is "Unknown".
const char* DatatypeName(int type) {
  static constexpr const char* kNames[] = {
      "ncclInt8",       "Unknown",       "ncclInt32",   "ncclUint32",  "ncclInt64",
      "ncclUint64",     "ncclFloat16",   "ncclFloat32", "ncclFloat64", "ncclBfloat16",
      "ncclFloat8e4m3", "ncclFloat8e5m2"};  // ncclDatatypeToString, src/collectives.cc:66-92
  return type >= 0 && type < 12 ? kNames[type] : "Unknown";
}

}  // namespace fake_profiler
