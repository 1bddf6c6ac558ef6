// Private: the processes of one job agree on what they will run before they measure. Each
// process describes its plan (the flags that shape the sweep, the backend and its version,
// fabricscope's version, the NCCL_* environment) as settings; process 0 compares them. A
// difference that changes what the ranks send is an error every process ends with (exit 2),
// named once: the setting, each value and the processes (ranks, hosts) that hold it. Without
// this, two processes started with different -e meet in a collective of different sizes, and
// Gloo aborts the process from its own thread (gloo::EnforceNotMet, SIGABRT).
#pragma once

#include <string>
#include <vector>

#include "fabricscope/backend.h"
#include "fabricscope/engine.h"
#include "fabricscope/env.h"
#include "fabricscope/options.h"

namespace fabricscope {

// One thing a process will do as it will do it: "-e/--maxbytes" = "4194304".
struct PlanSetting {
  std::string name;
  std::string value;
  // False for what differs between processes without changing what the ranks exchange
  // (NCCL_DEBUG, -T): a difference is a warning then.
  bool shapes_run = true;
};

// What this process will run, in a fixed order.
std::vector<PlanSetting> DescribePlan(const RunOptions& options, const SweepPlan& plan,
                                      const Backend& backend, const Env& env);

// A process's plan as the store carries it: "who" first ("process 1 (rank 1 on node2)"),
// then one setting a line.
std::vector<char> EncodePlan(const std::string& who, const std::vector<PlanSetting>& settings);

struct ProcessPlan {
  std::string who;
  std::vector<PlanSetting> settings;
};
// The inverse of EncodePlan; a line it cannot read is kept whole as a setting, so a peer of
// another fabricscope version still differs visibly rather than crashing this one.
ProcessPlan DecodePlan(const std::vector<char>& data);

// What process 0 concludes: `error` (every process ends with it) when a setting that shapes
// the run differs, `warning` when only others do; both empty when the plans agree.
struct PlanVerdict {
  std::string error;
  std::string warning;
};
PlanVerdict ComparePlans(const std::vector<ProcessPlan>& plans);

}  // namespace fabricscope
