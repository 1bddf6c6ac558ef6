// The benchmark engine: sweeps sizes x collectives x types x ops x roots, times, validates.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/backend.h"
#include "fabricscope/options.h"
#include "fabricscope/report.h"
#include "fabricscope/result.h"

namespace fabricscope {

// The sizes one collective is run at, after per-rank rounding is applied by the engine.
struct SweepPlan {
  std::vector<size_t> sizes;       // bytes, from -b -e -i -f
  size_t max_bytes = 0;            // maxBytes after the memory cap
  std::vector<std::string> notes;  // e.g. "Reducing maxBytes to ... due to memory limitation"
};

// Applies the memory cap (nccl-tests' rule for host memory) and builds the size list.
// Throws UsageError for an empty or endless sweep.
SweepPlan PlanSweep(const RunOptions& options, int ranks_in_process);

// Rows the sweep will produce (for a progress meter); 0 when -N 0 runs forever.
size_t CountRows(const RunOptions& options, const SweepPlan& plan, int nranks);

// Runs the whole sweep on one rank. Every rank of `comm` calls it with the same options.
// On rank 0, rows are appended to `result` and passed to `sink` as they complete; other
// ranks leave `result` alone. Throws on a backend failure (after telling `sink`).
void RunBenchmark(const RunOptions& options, const SweepPlan& plan, Communicator& comm,
                  RunResult& result, Reporter* sink);

}  // namespace fabricscope
