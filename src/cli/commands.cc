// The registry of subcommands: one line per command, each defined in its own file.
#include "cli/analyze_command.h"
#include "cli/check_command.h"
#include "cli/command.h"
#include "cli/doctor_command.h"
#include "cli/fabric_command.h"
#include "cli/history_command.h"
#include "cli/locate_command.h"
#include "cli/model_command.h"
#include "cli/run_command.h"
#include "cli/watch_command.h"

namespace fabricscope::cli {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"run",
       "the collective benchmark: nccl-tests flags and output (also callable as "
       "all_reduce_perf, all_gather_perf, ...)",
       SetupRunCommand},
      {"check",
       "judge results against the platform (OK, WARN or CRITICAL per test, with the reason) and "
       "name the cause of a failed or slow run from any pasted log",
       SetupCheckCommand},
      {"analyze", "summarize nccl-tests, rccl-tests and fabricscope results from any log or file",
       SetupAnalyzeCommand},
      {"compare", "busbw of two runs (or sets of repeats) size by size, with a significance test",
       SetupCompareCommand},
      {"report", "SVG plots and one self-contained HTML report of result files",
       SetupReportCommand},
      {"locate",
       "find the slow node and the slow link: pair rounds, measured again until significant, "
       "stragglers",
       SetupLocateCommand},
      {"doctor", "node configuration checks: GPUDirect, GPU-NIC affinity, ports, MTU, NCCL",
       SetupDoctorCommand},
      {"model", "predict collective performance for a platform and scale, or simulate the fabric",
       SetupModelCommand},
      {"watch",
       "judge a running job from its NCCL profiler records: p50/p99, busbw, stragglers, drops",
       SetupWatchCommand},
      {"fabric",
       "the InfiniBand fabric: links, error counters, cabling, routing balance (infiniband-diags "
       "live or saved)",
       SetupFabricCommand},
      {"history",
       "what a results store remembers per node set, node and link, and the ones below their "
       "own baseline (--regressions; docs/fleet.md)",
       SetupHistoryCommand},
  };
  return commands;
}

}  // namespace fabricscope::cli
