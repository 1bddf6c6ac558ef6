// What the profiler plugin costs a collective: startEvent + stopEvent of the real
// libnccl-profiler-fabricscope.so, driven as NCCL drives it (v5), from one thread or several
// (each its own communicator), with the drain thread writing JSONL (and, with --prometheus,
// observing histograms) meanwhile. Goal: under 1 us per collective (docs/watch.md).
//   profiler_overhead [--events N] [--rounds R] [--threads T] [--prometheus]
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
  bool prometheus = false;
};

// ns per collective (start + stop) on one communicator.
double OneThread(const ncclProfiler_v5_t* p, uint64_t events, int rank) {
  void* context = nullptr;
  int mask = 0;
  p->init(&context, 0xbe0c + static_cast<uint64_t>(rank), &mask, "", 1, 8, rank, nullptr);
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileColl;
  d.rank = rank;
  d.coll.func = "AllReduce";
  d.coll.count = 1 << 20;
  d.coll.datatype = "ncclBfloat16";
  d.coll.nChannels = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < events; ++i) {
    d.coll.seqNumber = i;
    void* handle = nullptr;
    p->startEvent(context, &handle, &d);
    p->stopEvent(handle);
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  p->finalize(context);
  return ns / static_cast<double>(events);
}

double Round(const ncclProfiler_v5_t* p, const Flags& f) {
  std::vector<double> per_thread(static_cast<size_t>(f.threads));
  std::vector<std::thread> threads;
  for (int t = 0; t < f.threads; ++t) {
    threads.emplace_back(
        [&, t] { per_thread[static_cast<size_t>(t)] = OneThread(p, f.events, t); });
  }
  for (auto& t : threads) t.join();
  return fabricscope::bench::Mean(per_thread);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"ns per collective of the NCCL profiler plugin (startEvent + stopEvent)"};
  app.add_option("--events", f.events, "collectives per thread and round")->capture_default_str();
  app.add_option("--rounds", f.rounds, "rounds; the median is reported")->capture_default_str();
  app.add_option("--threads", f.threads, "threads, each with its own communicator")
      ->capture_default_str();
  app.add_flag("--prometheus", f.prometheus, "also serve metrics on 127.0.0.1:0");
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
  const auto* p = static_cast<const ncclProfiler_v5_t*>(::dlsym(lib, "ncclProfiler_v5"));
  std::vector<double> rounds;
  for (int r = 0; r < f.rounds; ++r) rounds.push_back(Round(p, f));
  uint64_t lines = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(file.path());
    for (std::string line; std::getline(in, line);) ++lines;
  }
  std::filesystem::remove_all(dir);
  fmt::print(
      "profiler plugin, {} thread(s){}: {:.0f} ns per collective (median of {} rounds of {} "
      "events; min {:.0f}, max {:.0f}); {} JSONL lines written\n",
      f.threads, f.prometheus ? " + Prometheus" : "", fabricscope::bench::Median(rounds), f.rounds,
      f.events, *std::min_element(rounds.begin(), rounds.end()),
      *std::max_element(rounds.begin(), rounds.end()), lines);
  return 0;
}
