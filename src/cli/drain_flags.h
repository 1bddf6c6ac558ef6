// --drain[=MODE] and --resume, as check, doctor, locate and watch take them: the nodes a run's
// findings blame taken out of service, the nodes it cleared returned (fabricscope/drain.h,
// docs/slurm.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "fabricscope/env.h"
#include "fabricscope/finding.h"

namespace fabricscope::cli {

// The flags as typed.
struct DrainFlags {
  std::string drain;    // the service (slurm, dry-run, kubernetes); "" none
  bool resume = false;  // also (or, without --drain, only) return the nodes the run cleared
};

// Declares --drain[=MODE] (a bare --drain is slurm) and --resume on `app`.
void AddDrainFlags(CLI::App& app, DrainFlags& flags);

// Before anything is measured or read: a UsageError when the service's program (scontrol,
// kubectl) is not on `env`'s PATH, saying what else to give.
void CheckDrainFlags(const DrainFlags& flags, const Env& env);

// After the report is written, on the one process that reports: drains the nodes `findings`
// blame and (--resume) returns the `covered_hosts` they do not, one line on ctx.err each.
// Returns the exit code to use: `exit_code`, or 3 when a service command failed and
// `exit_code` was 0.
int ApplyDrain(const DrainFlags& flags, std::string_view command,
               const std::vector<Finding>& findings, const std::vector<std::string>& covered_hosts,
               const CommandContext& ctx, int exit_code);

}  // namespace fabricscope::cli
