// Every environment variable the profiler plugin reads, in one place (docs/watch.md lists
// them). Read once, when NCCL initializes the plugin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fabricscope/env.h"

namespace fabricscope::profiler {

struct Settings {
  bool enabled = true;         // FABRICSCOPE_PROFILER_ENABLE (0: nothing at all)
  bool jsonl = true;           // FABRICSCOPE_PROFILER_JSONL (0: no files)
  std::string dump_dir;        // FABRICSCOPE_PROFILER_DUMP_DIR, default fabricscope-profiler-<job>
  std::string prom_listen;     // FABRICSCOPE_PROFILER_PROM_LISTEN ("127.0.0.1:0"); empty: none
  std::string prom_sd_dir;     // FABRICSCOPE_PROFILER_PROM_SD_DIR, default dump_dir
  int64_t interval_ms = 1000;  // FABRICSCOPE_PROFILER_INTERVAL_MS: how often records are drained
  size_t ring_entries = 4096;  // FABRICSCOPE_PROFILER_RING: completed records kept per comm
  size_t active_events = 256;  // FABRICSCOPE_PROFILER_ACTIVE: collectives in flight per comm
  uint64_t min_bytes = 0;      // FABRICSCOPE_PROFILER_MIN_BYTES: smaller messages are skipped
  // The job label: SLURM_JOB_ID, else TORCHELASTIC_RUN_ID (torchrun), else
  // FABRICSCOPE_JOB_ID, else "unknown".
  std::string job = "unknown";
  std::string hostname;
  std::string errors;  // bad values, each named; the plugin logs them and keeps the defaults
};

// From `env`: the plugin passes Env::Process(), tests a fake environment. The variables and
// their defaults are those of the registry in src/core/env.cc (docs/env.md).
Settings ReadSettings(const Env& env);

}  // namespace fabricscope::profiler
