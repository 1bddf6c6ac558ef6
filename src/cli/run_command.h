// `fabricscope run` and the nccl-tests *_perf entry points: flags -> RunOptions -> a run.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "cli/flags.h"
#include "cli/output.h"
#include "fabricscope/backend.h"
#include "fabricscope/launch.h"
#include "fabricscope/options.h"
#include "fabricscope/report.h"

namespace fabricscope::cli {

// The flags as typed, before they are checked and converted into RunOptions.
struct RunFlags {
  std::string backend;  // empty: nccl where a CUDA device is present, else gloo
  std::string launcher = "auto";
  std::string collective = "all_reduce";
  std::string format = "text";
  std::string output;
  std::string json_file;
  std::string min_bytes = "32M";
  std::string max_bytes = "32M";
  std::string step_bytes = "1M";
  std::string datatype = "float";
  std::string op = "sum";
  std::string memory_limit;
  std::string nccl_lib;         // --nccl-lib
  std::string gpu_runtime_lib;  // --gpu-runtime-lib
  int64_t step_factor = 1;
  MeasureFlags measure;  // -t -n -w -c -T
  int ngpus = 1;
  int agg_iters = 1;
  int run_cycles = 1;
  int parallel_init = 0;
  int root = 0;
  int blocking = 0;
  int stream_null = 0;
  int cudagraph = 0;
  int report_cputime = 0;
  int report_timestamps = 0;
  int average = 1;
  int local_register = 0;
  int memory = 0;
  int unalign = 0;
  int per_iter_timing = 0;
  int per_iter_skip = 0;
  // nccl-tests 2.19.6's device-API flags (-x, -D, -V), with its defaults.
  int cta_policy = -1;
  int device_implementation = 0;
  int device_cta_count = 16;
  int inject_fault = -1;
  int inject_size_fault = -1;
  bool dry_run = false;  // --dry-run: print the plan, run nothing
};

// Declares every flag of `run` on `app`. `fixed_collective` hides --collective (a *_perf name).
void AddRunFlags(CLI::App& app, RunFlags& flags, bool fixed_collective);

// Checks the flags and converts them; throws UsageError / UnsupportedError.
RunOptions ToRunOptions(const RunFlags& flags);

// The flag combinations nccl-tests 2.19.6 notes and goes on from (src/common.cu:1417-1436,
// and -x/-V at 1323-1350): `flags` corrected as nccl-tests corrects them, each note in its
// words, for stderr. -D > 0 is refused (UsageError): fabricscope has no device-API kernels.
std::vector<std::string> ApplyNcclTestsNotes(RunFlags& flags);

// The backend the flags ask for; with no --backend, nccl where a GPU is usable, else gloo
// (said on `err` by process 0). Sets options.backend to the name chosen. The backend reads
// its variables (NCCL_DEBUG, ...) from `env`, the command's one copy of the environment.
std::unique_ptr<Backend> ResolveBackend(const RunFlags& flags, const LaunchInfo& launch,
                                        const Env& env, RunOptions& options, std::ostream& err);

// The reporters of --format/--output and -J: the table goes to `table` unless --output names
// a file. Returns where the table goes, which must outlive the sink (Close it after the
// run). Throws SystemError when a file cannot be written.
std::unique_ptr<Output> AddRunReporters(const RunFlags& flags, std::ostream& table,
                                        MultiReporter& sink);

// Where a run's table goes unless --output names a file: run's stdout, or stderr for
// `check -- FLAGS`, whose stdout carries the verdicts.
enum class RunTable { kStdout, kStderr };

// The run, as run, the *_perf names and `check -- FLAGS` all do it: the flags checked, the
// launch detected and announced, --dry-run's plan (on ctx.out), the backend, the reporters
// (with the table on stdout, a progress line on stderr when that is a terminal the table does
// not scroll by on), the job. Returns the result on the first process; nothing on the others, nor
// on a dry run.
std::optional<RunResult> PerformRun(const RunFlags& flags, std::vector<std::string> command_line,
                                    const CommandContext& ctx, RunTable table);

// `run`: PerformRun with the table on ctx.out; the exit code is analyze's rule (RunFailed).
int ExecuteRun(const RunFlags& flags, const CommandContext& ctx);

// --dry-run: the plan of a run, checked as far as it can be without running (flags, launch,
// backend name, sweep, report format), on `out`. The backend's library is not loaded, so a
// recipe for GPU nodes can be checked anywhere. Throws UsageError as the run would.
// `table` names where the table goes without --output: "stdout" for run, "stderr" for check.
void PrintRunPlan(const RunFlags& flags, const RunOptions& options, const LaunchInfo& launch,
                  std::ostream& out, std::string_view table = "stdout");

// `fabricscope run`: with no argument at all, main substitutes LocalDefaultArgs().
CommandAction SetupRunCommand(CLI::App& app);

// The run command fixed to one collective: the nccl-tests name `collective`_perf.
CommandAction SetupPerfCommand(CLI::App& app, std::string collective);

// What `fabricscope run` does with no arguments: a short local sweep that shows something
// meaningful on a laptop (nccl-tests' defaults give one 32 MB size on 1 rank).
std::vector<std::string> LocalDefaultArgs();

}  // namespace fabricscope::cli
