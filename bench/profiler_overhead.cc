// What the profiler plugin costs a collective, driven in NCCL 2.30's order (v6): the Coll
// started and stopped at enqueue, then KernelCh start, KernelChStop state and stop on each of
// --channels channels (16 by default), from one thread or several (each its own
// communicator), with the drain thread writing JSONL (and, with --prometheus, observing
// histograms) meanwhile. Goal: under 1 us per collective (docs/watch.md). --proxy measures
// instead what one ProxyOp (start, stop) and one ProxyStep (start, state, stop) cost.
//   profiler_overhead [--events N] [--rounds R] [--threads T] [--channels C] [--prometheus]
//                     [--proxy]
#include <dlfcn.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_stats.h"
#include "profiler/nccl_profiler_abi.h"

namespace {

struct Flags {
  uint64_t events = 200'000;
  int rounds = 5;
  int threads = 1;
  int channels = 16;
  bool prometheus = false;
  bool proxy = false;
};

void OneCollective(const ncclProfiler_v6_t* p, void* context, ncclProfilerEventDescr_v6_t* d,
                   int channels, uint64_t i) {
  d->coll.seqNumber = i;
  void* coll = nullptr;
  p->startEvent(context, &coll, d);
  p->stopEvent(coll);
  void* kernels[64];
  ncclProfilerEventDescr_v6_t k{};
  k.type = ncclProfileKernelCh;
  k.parentObj = coll;
  k.kernelCh.pTimer = 1000000 + i * 1000;
  for (int ch = 0; ch < channels; ++ch) {
    k.kernelCh.channelId = static_cast<uint8_t>(ch);
    p->startEvent(context, &kernels[ch], &k);
  }
  ncclProfilerEventStateArgs_v6_t a{};
  a.kernelCh.pTimer = 1000000 + i * 1000 + 700;
  for (int ch = 0; ch < channels; ++ch) {
    p->recordEventState(kernels[ch], ncclProfilerKernelChStop, &a);
    p->stopEvent(kernels[ch]);
  }
}

// One ProxyOp with one ProxyStep under it (the plugin does not ask for ProxyStep events: its
// cost is that of refusing one).
void OneProxyOp(const ncclProfiler_v6_t* p, void* context, int rank) {
  ncclProfilerEventDescr_v6_t d{};
  d.type = ncclProfileProxyOp;
  d.rank = rank;
  d.proxyOp.peer = rank + 1;
  d.proxyOp.isSend = 1;
  d.proxyOp.nSteps = 8;
  void* op = nullptr;
  p->startEvent(context, &op, &d);
  ncclProfilerEventDescr_v6_t s{};
  s.type = ncclProfileProxyStep;
  s.parentObj = op;
  void* step = nullptr;
  p->startEvent(context, &step, &s);
  if (step != nullptr) {
    ncclProfilerEventStateArgs_v6_t a{};
    p->recordEventState(step, ncclProfilerProxyStepSendWait, &a);
    p->stopEvent(step);
  }
  p->stopEvent(op);
}

// ns per collective (or per ProxyOp with --proxy) on one communicator.
double OneThread(const ncclProfiler_v6_t* p, const Flags& f, int rank) {
  void* context = nullptr;
  int mask = 0;
  p->init(&context, 0xbe0c + static_cast<uint64_t>(rank), &mask, "", 1, 8, rank, nullptr);
  ncclProfilerEventDescr_v6_t d{};
  d.type = ncclProfileColl;
  d.rank = rank;
  d.coll.func = "AllReduce";
  d.coll.count = 1 << 20;
  d.coll.datatype = "ncclBfloat16";
  d.coll.nChannels = static_cast<uint8_t>(f.channels);
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < f.events; ++i) {
    if (f.proxy) {
      OneProxyOp(p, context, rank);
    } else {
      OneCollective(p, context, &d, f.channels, i);
    }
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  p->finalize(context);
  return ns / static_cast<double>(f.events);
}

double Round(const ncclProfiler_v6_t* p, const Flags& f) {
  std::vector<double> per_thread(static_cast<size_t>(f.threads));
  std::vector<std::thread> threads;
  for (int t = 0; t < f.threads; ++t) {
    threads.emplace_back([&, t] { per_thread[static_cast<size_t>(t)] = OneThread(p, f, t); });
  }
  for (auto& t : threads) t.join();
  return fabricscope::bench::Mean(per_thread);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"ns per collective of the NCCL profiler plugin, in NCCL 2.30's order"};
  app.add_option("--events", f.events, "collectives per thread and round")->capture_default_str();
  app.add_option("--rounds", f.rounds, "rounds; the median is reported")->capture_default_str();
  app.add_option("--threads", f.threads, "threads, each with its own communicator")
      ->capture_default_str();
  app.add_option("--channels", f.channels, "KernelCh events per collective (1..64)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_flag("--prometheus", f.prometheus, "also serve metrics on 127.0.0.1:0");
  app.add_flag("--proxy", f.proxy, "measure one ProxyOp and one ProxyStep instead");
  CLI11_PARSE(app, argc, argv);

  const std::string dir =
      (std::filesystem::temp_directory_path() / ("fabricscope-bench-" + std::to_string(getpid())))
          .string();
  ::setenv("FABRICSCOPE_PROFILER_DUMP_DIR", dir.c_str(), 1);
  // The drain thread must keep up with millions of records a second: a large ring.
  ::setenv("FABRICSCOPE_PROFILER_RING", "1048576", 1);
  if (f.prometheus) ::setenv("FABRICSCOPE_PROFILER_PROM_LISTEN", "127.0.0.1:0", 1);
  void* lib = ::dlopen(PROFILER_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    fmt::print(stderr, "cannot load {}: {}\n", PROFILER_PLUGIN_PATH, ::dlerror());
    return 1;
  }
  const auto* p = static_cast<const ncclProfiler_v6_t*>(::dlsym(lib, "ncclProfiler_v6"));
  std::vector<double> rounds;
  for (int r = 0; r < f.rounds; ++r) rounds.push_back(Round(p, f));
  uint64_t lines = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(file.path());
    for (std::string line; std::getline(in, line);) ++lines;
  }
  std::filesystem::remove_all(dir);
  fmt::print(
      "profiler plugin, {} thread(s){}: {:.0f} ns per {} (median of {} rounds of {} "
      "events; min {:.0f}, max {:.0f}); {} JSONL lines written\n",
      f.threads, f.prometheus ? " + Prometheus" : "", fabricscope::bench::Median(rounds),
      f.proxy ? "ProxyOp + ProxyStep"
              : fmt::format("collective with {} KernelCh channels", f.channels),
      f.rounds, f.events, *std::min_element(rounds.begin(), rounds.end()),
      *std::max_element(rounds.begin(), rounds.end()), lines);
  return 0;
}
