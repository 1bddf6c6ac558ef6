// The profiler plugin's ABI harness, compiled ONLY against NVIDIA's own profiler headers
// (plugins/profiler/example/nccl/*.h of NVIDIA/nccl v2.30.7-1,
// 73cf112295c33aee2b895f329f592f2a9b4b0f97; scripts/fetch-nccl-profiler-headers.sh puts them
// in the build tree, they are not in this repository), never against the project's
// transcription of them (src/profiler/nccl_profiler_abi.h).
//
// It loads the built plugin by NCCL's name rules (NCCL_PROFILER_PLUGIN=fabricscope: the name,
// then libnccl-profiler-fabricscope.so, found through LD_LIBRARY_PATH: src/plugin.cc,
// ncclOpenProfilerPluginLib), and drives it as NCCL 2.30 does (src/enqueue.cc,
// hostStreamPlanTask; src/transport/profiler.cc, profilerProxyProgress; src/plugin/profiler.cc),
// through v6, v5 and v4 (NCCL's adapters, src/plugin/profiler/profiler_v5.cc and
// profiler_v4.cc), with 1 and 4 threads, each thread a communicator initialized concurrently
// with the others and with short-lived ones, and its own proxy thread. Per thread: 200
// all_reduce of 64 MiB over 16 channels, the kernel 500 us by the GPU timer, 850 us (1.7x)
// from collective 101 on, while the Coll event itself lasts a few us at enqueue.
// It checks: one record per collective, none lost or dropped; each duration within 20% of
// the kernel's; `fabricscope watch` on the records sees the slowdown as >= 1.5x and exits 1.
//
// Usage: abi_harness FABRICSCOPE_BINARY OUTPUT_DIR. Exit 0: passed, 1: failed.
#include <dlfcn.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// NVIDIA's headers, as the example plugin includes them.
#include "nccl/err.h"
#include "nccl/profiler.h"

namespace {

constexpr int kCollectives = 200;
constexpr int kSlowFrom = 101;
constexpr int kChannels = 16;
constexpr uint64_t kKernelNs = 500000;
constexpr double kSlowdown = 1.7;
constexpr size_t kCount = (64u << 20) / 4;  // 64 MiB of floats

int failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

// ncclProfilerEventMask (src/plugin/profiler.cc): one int per process, by address to every
// init, read with relaxed atomic loads at each enqueue.
int event_mask = 0;

// The plugin, as NCCL 2.30 would see it through one interface version.
struct Api {
  int version = 0;
  ncclProfiler_v6_t* v6 = nullptr;
  ncclProfiler_v5_t* v5 = nullptr;
  ncclProfiler_v4_t* v4 = nullptr;

  ncclResult_t Init(void** ctx, uint64_t id, int nranks, int rank) const {
    if (version == 6) return v6->init(ctx, id, &event_mask, "harness", 1, nranks, rank, nullptr);
    if (version == 5) return v5->init(ctx, id, &event_mask, "harness", 1, nranks, rank, nullptr);
    return v4->init(ctx, &event_mask, "harness", id, 1, nranks, rank, nullptr);
  }

  // NCCL's descriptor is v6 (ncclProfiler_t); v5 and v4 get it through NCCL's adapters.
  void* Start(void* ctx, const ncclProfilerEventDescr_v6_t& d) const {
    void* h = nullptr;
    if (version == 6) {
      ncclProfilerEventDescr_v6_t copy = d;
      v6->startEvent(ctx, &h, &copy);
    } else if (version == 5) {
      if (d.type & (ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch)) return nullptr;
      ncclProfilerEventDescr_v5_t v;
      std::memcpy(&v, &d, sizeof v);  // the v5 members sit where v6 has them
      v5->startEvent(ctx, &h, &v);
    } else {
      ncclProfilerEventDescr_v4_t v;
      std::memset(&v, 0, sizeof v);
      v.type = static_cast<uint8_t>(d.type);
      v.parentObj = d.parentObj;
      v.rank = d.rank;
      switch (d.type) {
        case ncclProfileColl:
          v.coll.seqNumber = d.coll.seqNumber;
          v.coll.func = d.coll.func;
          v.coll.count = d.coll.count;
          v.coll.root = d.coll.root;
          v.coll.datatype = d.coll.datatype;
          v.coll.nChannels = d.coll.nChannels;
          v.coll.nWarps = d.coll.nWarps;
          v.coll.algo = d.coll.algo;
          v.coll.proto = d.coll.proto;
          v.parentObj = d.coll.parentGroup;
          break;
        case ncclProfileGroup:
          break;
        case ncclProfileKernelCh:
          v.kernelCh.channelId = d.kernelCh.channelId;
          v.kernelCh.pTimer = d.kernelCh.pTimer;
          break;
        case ncclProfileProxyOp:
          v.proxyOp.pid = d.proxyOp.pid;
          v.proxyOp.channelId = d.proxyOp.channelId;
          v.proxyOp.peer = d.proxyOp.peer;
          v.proxyOp.nSteps = d.proxyOp.nSteps;
          v.proxyOp.chunkSize = d.proxyOp.chunkSize;
          v.proxyOp.isSend = d.proxyOp.isSend;
          break;
        default:
          return nullptr;  // the API and KernelLaunch events: not in v4
      }
      v4->startEvent(ctx, &h, &v);
    }
    return h;
  }
  void Stop(void* h) const {
    if (h == nullptr) return;
    if (version == 6) v6->stopEvent(h);
    if (version == 5) v5->stopEvent(h);
    if (version == 4) v4->stopEvent(h);
  }
  void State(void* h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v5_t* a) const {
    if (h == nullptr) return;
    if (version == 6) v6->recordEventState(h, s, a);
    if (version == 5) v5->recordEventState(h, s, a);
    if (version == 4 && s != ncclProfilerGroupStartApiStop && s != ncclProfilerGroupEndApiStart) {
      ncclProfilerEventStateArgs_v4_t v{};  // profiler_v4.cc copies the member the state uses
      if (a != nullptr) std::memcpy(&v, a, sizeof v);
      v4->recordEventState(h, s, a != nullptr ? &v : nullptr);
    }
  }
  void Finalize(void* ctx) const {
    if (version == 6) v6->finalize(ctx);
    if (version == 5) v5->finalize(ctx);
    if (version == 4) v4->finalize(ctx);
  }
};

// The communicator's proxy thread (src/proxy.cc): KernelCh events are its.
class ProxyThread {
 public:
  ProxyThread() : thread_([this] { Run(); }) {}
  ~ProxyThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void Post(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(f));
    }
    wake_.notify_one();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto f = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      f();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

std::atomic<int> lost{0};  // collectives NCCL would have run without events (mask 0)

// The collectives of one communicator (one rank of a 4-rank all-reduce) in NCCL 2.30's order.
void RunComm(const Api& api, uint64_t id, int rank, int nranks, int phase) {
  void* ctx = nullptr;
  if (api.Init(&ctx, id, nranks, rank) != ncclSuccess || ctx == nullptr) {
    Check(false, "init of communicator " + std::to_string(id));
    return;
  }
  {
    ProxyThread proxy;  // destroyed (its queue drained) before the finalize below
    const int first = phase == 0 ? 0 : kSlowFrom;
    const int last = phase == 0 ? kSlowFrom : kCollectives;
    for (int i = first; i < last; ++i) {
      const int mask = __atomic_load_n(&event_mask, __ATOMIC_RELAXED);
      if ((mask & ncclProfileColl) == 0) {  // NCCL: no event for this collective
        ++lost;
        continue;
      }
      ncclProfilerEventDescr_v6_t d{};
      // collTaskAppend: GroupApi, its state, CollApi started and stopped.
      d.type = ncclProfileGroupApi;
      d.groupApi.groupDepth = 1;
      void* group_api = api.Start(ctx, d);
      api.State(group_api, ncclProfilerGroupStartApiStop, nullptr);
      d = {};
      d.type = ncclProfileCollApi;
      d.parentObj = group_api;
      d.collApi.func = "AllReduce";
      d.collApi.count = kCount;
      d.collApi.datatype = "ncclFloat32";
      void* coll_api = api.Start(ctx, d);
      api.Stop(coll_api);
      api.State(group_api, ncclProfilerGroupEndApiStart, nullptr);
      api.Stop(group_api);
      // hostStreamPlanTask: Group, Coll start and stop back to back, Group stop.
      d = {};
      d.type = ncclProfileGroup;
      void* group = api.Start(ctx, d);
      d = {};
      d.type = ncclProfileColl;
      d.parentObj = coll_api;
      d.rank = rank;
      d.coll.parentGroup = group;
      d.coll.seqNumber = static_cast<uint64_t>(i);
      d.coll.func = "AllReduce";
      d.coll.count = kCount;
      d.coll.datatype = "ncclFloat32";
      d.coll.nChannels = kChannels;
      d.coll.nWarps = 16;
      d.coll.algo = "RING";
      d.coll.proto = "SIMPLE";
      void* coll = api.Start(ctx, d);
      api.Stop(coll);
      api.Stop(group);
      // The kernel, on the GPU's clock; the proxy thread reports its channels.
      const uint64_t kernel =
          i >= kSlowFrom ? static_cast<uint64_t>(kKernelNs * kSlowdown) : kKernelNs;
      const uint64_t gpu0 = 1000000000000ULL + static_cast<uint64_t>(i) * 2000000ULL;
      proxy.Post([&api, ctx, coll, gpu0, kernel, rank] {
        std::vector<void*> channels(kChannels);
        for (int ch = 0; ch < kChannels; ++ch) {
          ncclProfilerEventDescr_v6_t k{};
          k.type = ncclProfileProxyOp;
          k.parentObj = coll;
          k.rank = rank;
          k.proxyOp.channelId = static_cast<uint8_t>(ch);
          k.proxyOp.peer = (rank + 1) % 4;
          k.proxyOp.isSend = 1;
          k.proxyOp.nSteps = 8;
          void* op = api.Start(ctx, k);
          k = {};
          k.type = ncclProfileKernelCh;
          k.parentObj = coll;
          k.kernelCh.channelId = static_cast<uint8_t>(ch);
          k.kernelCh.pTimer = gpu0 + static_cast<uint64_t>(ch) * 100;
          channels[ch] = api.Start(ctx, k);
          api.Stop(op);
        }
        for (int ch = 0; ch < kChannels; ++ch) {
          ncclProfilerEventStateArgs_v5_t a{};
          a.kernelCh.pTimer = gpu0 + kernel;
          api.State(channels[ch], ncclProfilerKernelChStop, &a);
          api.Stop(channels[ch]);
        }
      });
    }
  }
  // ncclProfilerPluginFinalize at the communicator's destroy, its proxy thread done.
  api.Finalize(ctx);
}

// Short-lived communicators initialized and finalized while the others run (issue 24's
// concurrent inits).
void Churn(const Api& api, int t, int n) {
  for (int i = 0; i < n; ++i) {
    void* ctx = nullptr;
    api.Init(&ctx, 900000 + static_cast<uint64_t>(t) * 1000 + static_cast<uint64_t>(i), 8, t);
    api.Finalize(ctx);
  }
}

// Every JSONL line the plugin wrote into `dir`.
std::vector<std::string> Lines(const std::string& dir) {
  std::vector<std::string> lines;
  const std::string cmd = "cat " + dir + "/*.jsonl 2>/dev/null";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buffer[8192];
    std::string line;
    while (std::fgets(buffer, sizeof buffer, p) != nullptr) {
      line += buffer;
      if (!line.empty() && line.back() == '\n') {
        line.pop_back();
        lines.push_back(line);
        line.clear();
      }
    }
    ::pclose(p);
  }
  return lines;
}

// A number after `"key":` in a line of JSON (enough for the plugin's flat fields).
double Number(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

int Run(const std::string& command, std::string* out) {
  out->clear();
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return -1;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0) out->append(buffer, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void Scenario(const Api& api, int threads, const std::string& binary, const std::string& dir) {
  const std::string label =
      "v" + std::to_string(api.version) + ", " + std::to_string(threads) + " thread(s)";
  std::fprintf(stderr, "harness: %s\n", label.c_str());
  std::system(("rm -rf " + dir).c_str());
  ::setenv("FABRICSCOPE_PROFILER_DUMP_DIR", dir.c_str(), 1);
  lost = 0;
  // Two phases, 300 ms apart so that watch (--window 0.25) sees the slowdown in a later window
  // than its baseline; each phase initializes its communicators concurrently.
  for (int phase = 0; phase < 2; ++phase) {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back(
          [&, t] { RunComm(api, static_cast<uint64_t>(api.version * 100 + t), t % 4, 4, phase); });
      workers.emplace_back([&, t] { Churn(api, t, 25); });
    }
    for (auto& w : workers) w.join();
    if (phase == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  Check(lost.load() == 0,
        label + ": " + std::to_string(lost.load()) + " collectives saw an activation mask of 0");
  int records = 0;
  int dropped = 0;
  int off = 0;
  for (const std::string& line : Lines(dir)) {
    if (line.find("\"dump_stats\"") != std::string::npos) ++dropped;
    if (line.find("\"coll_perf\"") == std::string::npos) continue;
    ++records;
    const double sn = Number(line, "coll_sn");
    const double truth =
        (sn >= kSlowFrom ? kKernelNs * kSlowdown : static_cast<double>(kKernelNs)) / 1e3;
    const double us = Number(line, "coll_exec_time_us");
    if (us < truth * 0.8 || us > truth * 1.2) ++off;
    if (line.find("\"coll_timing_source\":\"kernel_gpu\"") == std::string::npos) ++off;
  }
  Check(records == threads * kCollectives,
        label + ": " + std::to_string(records) + " records for " +
            std::to_string(threads * kCollectives) + " collectives");
  Check(dropped == 0, label + ": the plugin reported dropped records");
  Check(off == 0, label + ": " + std::to_string(off) +
                      " records not within 20% of the kernel time by the GPU timer");
  std::string out;
  const int rc = Run(binary + " watch " + dir + " --window 0.25 --format json", &out);
  Check(rc == 1, label + ": watch exited " + std::to_string(rc) + ", expected 1 (an alert)");
  // The p50 of the last window against the first: the slowdown as watch sees it.
  const size_t first = out.find("\"p50_us\":");
  const size_t last = out.rfind("\"p50_us\":");
  const double before =
      first == std::string::npos ? 0 : std::strtod(out.c_str() + first + 9, nullptr);
  const double after = last == std::string::npos ? 0 : std::strtod(out.c_str() + last + 9, nullptr);
  Check(before > 0 && after / before >= 1.5, label + ": watch saw " +
                                                 std::to_string(before > 0 ? after / before : 0) +
                                                 "x, expected >= 1.5x");
  // A drop alert: a CRITICAL finding of source "drop" on an all_reduce bucket (watch's JSON,
  // docs/watch.md).
  Check(out.find("\"source\": \"drop\"") != std::string::npos &&
            out.find("\"where\": \"all_reduce ") != std::string::npos &&
            out.find("\"severity\": \"CRITICAL\"") != std::string::npos,
        label + ": watch raised no drop alert:\n" + out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: abi_harness FABRICSCOPE_BINARY OUTPUT_DIR\n");
    return 2;
  }
  // src/plugin.cc, ncclOpenProfilerPluginLib: the name as given, then the library name.
  ::setenv("NCCL_PROFILER_PLUGIN", "fabricscope", 1);
  ::setenv("FABRICSCOPE_PROFILER_INTERVAL_MS", "20", 1);
  ::setenv("FABRICSCOPE_JOB_ID", "abi-harness", 1);
  const std::string name = std::getenv("NCCL_PROFILER_PLUGIN");
  void* lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    lib = ::dlopen(("libnccl-profiler-" + name + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "FAIL: cannot load libnccl-profiler-%s.so (LD_LIBRARY_PATH): %s\n",
                 name.c_str(), ::dlerror());
    return 1;
  }
  Api v6{6, static_cast<ncclProfiler_v6_t*>(::dlsym(lib, "ncclProfiler_v6")), nullptr, nullptr};
  Api v5{5, nullptr, static_cast<ncclProfiler_v5_t*>(::dlsym(lib, "ncclProfiler_v5")), nullptr};
  Api v4{4, nullptr, nullptr, static_cast<ncclProfiler_v4_t*>(::dlsym(lib, "ncclProfiler_v4"))};
  Check(v6.v6 != nullptr && v5.v5 != nullptr && v4.v4 != nullptr,
        "the plugin exports ncclProfiler_v6, _v5 and _v4");
  if (failures > 0) return 1;
  const std::string binary = argv[1];
  const std::string out = argv[2];
  for (const Api* api : {&v6, &v5, &v4}) {
    for (const int threads : {1, 4}) {
      Scenario(*api, threads, binary,
               out + "/v" + std::to_string(api->version) + "-t" + std::to_string(threads));
    }
  }
  ::dlclose(lib);
  std::fprintf(stderr, failures == 0 ? "harness: passed\n" : "harness: %d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
