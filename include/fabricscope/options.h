// Everything one benchmark run is asked to do, as parsed from nccl-tests-style flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"

namespace fabricscope {

inline constexpr size_t kMiB = size_t{1} << 20;

// How per-rank times are combined (-a): rank 0's, the average, the minimum or the maximum.
enum class TimeAggregation { kRank0 = 0, kAverage = 1, kMin = 2, kMax = 3 };

// The options of `fabricscope run`; defaults are nccl-tests' defaults.
struct RunOptions {
  std::string backend = "gloo";
  std::vector<Collective> collectives = {Collective::kAllReduce};
  std::vector<DataType> types = {DataType::kFloat};
  std::vector<ReduceOp> ops = {ReduceOp::kSum};

  int nthreads = 1;  // -t: ranks (threads) in this process
  size_t min_bytes = 32 * kMiB;
  size_t max_bytes = 32 * kMiB;
  size_t step_bytes = 1 * kMiB;
  uint64_t step_factor = 1;  // used when > 1
  int iters = 20;
  int warmup_iters = 1;
  int agg_iters = 1;
  int run_cycles = 1;    // 0 = forever
  int check = 1;         // validation iterations; 0 disables the check
  int root = 0;          // -1 = every root
  int blocking = 0;      // -z 0..3
  double timeout_s = 0;  // -T, 0 = the backend's default
  TimeAggregation average = TimeAggregation::kAverage;
  bool report_timestamps = false;  // -S
  bool per_iter_timing = false;    // -I
  int per_iter_skip = 0;           // -K
  bool show_memory = false;        // -M
  bool report_cputime = false;     // -C: the time to enqueue the calls, not to complete them

  // GPU backends (BackendCapabilities::device_memory); host backends accept the defaults.
  int ngpus = 1;               // -g: devices (ranks) per thread, driven through group calls
  int graph_launches = 0;      // -G: capture the timed iterations as a graph, replay it N times
  int registration = 0;        // -R: 1 register buffers with the library, 2 symmetric windows
  int unalign = 0;             // -u: shift every buffer by this many elements
  bool stream_null = false;    // -y: the default stream
  bool parallel_init = false;  // -p: recorded; every thread creates its communicators anyway

  // The command line, recorded in the results (JSON "args").
  std::vector<std::string> command_line;

  // Fault injection for tests and demos: this rank corrupts its results before validation.
  int inject_fault_rank = -1;
  // Fault injection for tests: this rank's collectives take half the count of its peers'.
  int inject_size_fault_rank = -1;
  // Host memory the sweep may use, in bytes; 0 = read MemAvailable from /proc/meminfo.
  size_t memory_limit_bytes = 0;
};

}  // namespace fabricscope
