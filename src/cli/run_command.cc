#include "cli/run_command.h"

#include <algorithm>
#include <memory>
#include <ostream>
#include <thread>

#include "cli/db_flags.h"
#include "cli/flags.h"
#include "cli/records.h"
#include "fabricscope/analyze.h"
#include "fabricscope/backend.h"
#include "fabricscope/engine.h"
#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/launch.h"
#include "fabricscope/node_gpus.h"
#include "fabricscope/report.h"
#include "fabricscope/sizes.h"

namespace fabricscope::cli {
void AddRunFlags(CLI::App& app, RunFlags& f, bool fixed_collective) {
  // nccl-tests flags, same short and long names and defaults; the ranges are checked as they
  // are parsed.
  AddMeasureFlags(app, f.measure);
  app.add_option("-g,--ngpus", f.ngpus,
                 "GPUs (ranks) per thread, driven through group calls (GPU backends only)")
      ->check(InRange(1, 1024, "give 1 or more GPUs per thread, up to 1024"))
      ->capture_default_str();
  app.add_option("-b,--minbytes", f.min_bytes,
                 "smallest size: bytes with optional K/M/G suffix (binary, fractions allowed)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", f.max_bytes, "largest size")->capture_default_str();
  app.add_option("-i,--stepbytes", f.step_bytes, "additive step between sizes (when -f is 1)")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", f.step_factor,
                 "multiplicative step between sizes, used when > 1")
      ->check(InRange<int64_t>(1, 1 << 20, "give 1 (use -i) or more"))
      ->capture_default_str();
  app.add_option("-m,--agg_iters", f.agg_iters, "operations per iteration")
      ->check(AtLeast(1, "give at least 1"))
      ->capture_default_str();
  app.add_option("-N,--run_cycles", f.run_cycles, "repeat the sweep N times; 0 = forever")
      ->check(AtLeast(0, "give 0 (forever) or more"))
      ->capture_default_str();
  app.add_option("-p,--parallel_init", f.parallel_init,
                 "GPU backends only; each thread creates its own communicators either way")
      ->capture_default_str();
  app.add_option("-o,--op", f.op,
                 "sum, prod, max, min, avg, mulsum (nccl backend, NCCL 2.11+), or all (what the "
                 "backend supports)")
      ->capture_default_str();
  app.add_option("-d,--datatype", f.datatype,
                 "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16, f8e4m3 f8e5m2 "
                 "(nccl backend, NCCL 2.24+, sm_90+), or all (what the backend supports)")
      ->capture_default_str();
  app.add_option("-r,--root", f.root, "root rank of rooted collectives; -1 = every root")
      ->check(AtLeast(-1, "give a rank, or -1 for every root"))
      ->capture_default_str();
  app.add_option("-z,--blocking", f.blocking,
                 "0 async; 1 barrier after each op (timed); 2 sync, no barrier; 3 barrier per "
                 "iteration, not timed")
      ->check(InRange(0, 3, "give 0, 1, 2 or 3"))
      ->capture_default_str();
  app.add_option("-y,--stream_null", f.stream_null, "1 = use the default stream (GPU backends)")
      ->capture_default_str();
  app.add_option("-G,--cudagraph", f.cudagraph,
                 "capture the timed iterations as a CUDA graph and replay it N times (GPU "
                 "backends)")
      ->check(AtLeast(0, "give 0 (no graph) or replays"))
      ->capture_default_str();
  app.add_option("-C,--report_cputime", f.report_cputime,
                 "1 = report the host time to enqueue the calls, not to complete them (on host "
                 "backends the two agree)")
      ->capture_default_str();
  app.add_option("-S,--report_timestamps", f.report_timestamps,
                 "1 = append a %Y-%m-%d %H:%M:%S column to each row")
      ->capture_default_str();
  app.add_option("-J,--output_file", f.json_file,
                 "also write JSON results (nccl-tests -J version 3 plus fabricscope fields) to "
                 "this file, rewritten after every size");
  app.add_option("-a,--average", f.average,
                 "combine times across ranks: 0 rank 0, 1 average, 2 min, 3 max")
      ->check(InRange(0, 3, "give 0 (rank 0), 1 (average), 2 (min), 3 (max)"))
      ->capture_default_str();
  app.add_option("-R,--local_register", f.local_register,
                 "1 = register buffers with NCCL (ncclCommRegister), 2 = symmetric windows (GPU "
                 "backends)")
      ->check(InRange(0, 2, "give 0, 1 (ncclCommRegister) or 2 (symmetric windows)"))
      ->capture_default_str();
  app.add_option("-M,--memory", f.memory, "1 = print the buffer memory used per rank")
      ->capture_default_str();
  app.add_option("-u,--unalign", f.unalign, "shift every buffer by N elements (GPU backends)")
      ->check(InRange(0, 1 << 20, "give 0 or a number of elements"))
      ->capture_default_str();
  app.add_option(
         "-I,--per_iter_timing", f.per_iter_timing,
         "1 = add i_min i_max i_p99 i_cv% columns per half and, with -J, nccl-tests' *_per_iter "
         "objects (every iteration's time, per process)")
      ->capture_default_str();
  app.add_option("-K,--per_iter_skip", f.per_iter_skip,
                 "drop the first N per-iteration samples from those statistics")
      ->capture_default_str();
  app.add_option("-x,--cta_policy", f.cta_policy,
                 "NCCL's CTA policy (ncclConfig_t.CTAPolicy, NCCL 2.27+); -1 = NCCL's default; "
                 "not applied by fabricscope's backends (a note says so)")
      ->capture_default_str();
  app.add_option("-D,--device_implementation", f.device_implementation,
                 "nccl-tests' device-API kernels (NCCL 2.28+); only 0 (host API) here")
      ->capture_default_str();
  app.add_option("-V,--device_cta_count", f.device_cta_count,
                 "CTAs of the device implementation (1..128)")
      ->capture_default_str();

  // fabricscope's own flags.
  app.add_option("--backend", f.backend,
                 "communication library: " + NamesOf(Backends()) +
                     "; default: nccl where a CUDA device is present, else gloo");
  app.add_option("--nccl-lib", f.nccl_lib,
                 "the NCCL (RCCL) library to load, e.g. a build to compare; default: search "
                 "libnccl.so.2 (librccl.so.1, librccl.so) the dynamic loader's way");
  app.add_option("--gpu-runtime-lib", f.gpu_runtime_lib,
                 "the CUDA (HIP) runtime library to load; default: libcudart.so.13, .12, .11 "
                 "(libamdhip64.so)");
  if (!fixed_collective) {
    app.add_option("--collective", f.collective,
                   "one of " + NamesOf(Collectives()) + "; a comma-separated list; or all")
        ->capture_default_str();
  }
  app.add_option("--launcher", f.launcher,
                 "how processes find each other: auto (mpirun, srun --mpi=pmix and Hydra are "
                 "mpi; plain srun is env from SLURM_*, its store on the step's first node; then "
                 "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT; else one process), single, mpi, env; "
                 "stderr says which and why (docs/launch.md)")
      ->capture_default_str();
  AddFormatOption(app, f.format, Reporters(), "report format on stdout or --output");
  app.add_option("--output", f.output, "write the report to FILE instead of stdout");
  app.add_option("--memory-limit", f.memory_limit,
                 "host memory the sweep may use (default: MemAvailable); larger -e is capped "
                 "with nccl-tests' message");
  app.add_flag("--dry-run", f.dry_run,
               "print the plan (launcher, processes, backend, collectives, sizes, outputs) and "
               "exit 0 without running; checks the command line and the launch environment");
  app.add_option("--inject-fault", f.inject_fault,
                 "for tests and demos: RANK corrupts its result before validation, which must "
                 "show #wrong > 0 and exit 1");
  app.add_option("--inject-size-fault", f.inject_size_fault,
                 "for tests: RANK's collectives take half the count of its peers', a mismatch "
                 "inside the library that must end with exit 3 and a named error, never a "
                 "signal");
}

std::vector<std::string> ApplyNcclTestsNotes(RunFlags& f) {
  std::vector<std::string> notes;
  if (f.device_implementation > 0) {
    throw UsageError(fmt::format(
        "-D/--device_implementation {}: fabricscope runs the collectives through NCCL's host API "
        "only; nccl-tests' device-API kernels (NCCL 2.28+, with -R 2) are not implemented here. "
        "Give -D 0",
        f.device_implementation));
  }
  if (f.device_cta_count <= 0 || f.device_cta_count > 128) {
    notes.push_back(fmt::format(
        "device_cta_count (-V) must be positive and less than 128, got {}. Using default value 16.",
        f.device_cta_count));
    f.device_cta_count = 16;
  }
  if (f.cta_policy >= 0) {
    notes.push_back(fmt::format(
        "Option -x (cta_policy) {} is not applied by fabricscope's backends (they create their "
        "communicator without an ncclConfig_t). Ignoring",
        f.cta_policy));
    f.cta_policy = -1;
  }
  if (f.per_iter_timing != 0 && f.per_iter_timing != 1) {
    notes.emplace_back("per-iteration timing (-I) only supports 0=off or 1=on. Disabling.");
    f.per_iter_timing = 0;
  }
  if (f.per_iter_timing != 0 && f.cudagraph >= 1) {
    notes.emplace_back(
        "per-iteration timing (-I) is incompatible with CUDA graph mode (-G). Disabling.");
    f.per_iter_timing = 0;
  }
  if (f.blocking == 3 && f.cudagraph >= 1) {
    notes.emplace_back(
        "blocking mode (-z 3) is incompatible with CUDA graph mode (-G). Disabling.");
    f.blocking = 0;
  }
  if (f.per_iter_skip < 0 || f.per_iter_skip >= f.measure.iters) {
    notes.push_back(fmt::format("per-iteration skip (-K) must be between 0 and {}. Disabling.",
                                f.measure.iters - 1));
    f.per_iter_skip = 0;
  }
  if (f.per_iter_skip != 0 && f.per_iter_timing == 0) {
    notes.emplace_back("per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling.");
    f.per_iter_skip = 0;
  }
  return notes;
}

RunOptions ToRunOptions(const RunFlags& f) {
  RunOptions o;
  o.backend = f.backend;
  o.collectives = ParseCollectives(f.collective);
  o.types = ParseDataTypes(f.datatype);
  o.ops = ParseReduceOps(f.op);
  o.min_bytes = ParseSize(f.min_bytes, "-b/--minbytes");
  o.max_bytes = ParseSize(f.max_bytes, "-e/--maxbytes");
  o.step_bytes = ParseSize(f.step_bytes, "-i/--stepbytes");
  if (!f.memory_limit.empty()) o.memory_limit_bytes = ParseSize(f.memory_limit, "--memory-limit");
  o.step_factor = static_cast<uint64_t>(f.step_factor);
  f.measure.ApplyTo(o);
  o.agg_iters = f.agg_iters;
  o.run_cycles = f.run_cycles;
  o.blocking = f.blocking;
  o.average = static_cast<TimeAggregation>(f.average);
  o.root = f.root;
  o.per_iter_timing = f.per_iter_timing != 0;
  o.per_iter_skip = f.per_iter_skip;
  o.report_timestamps = f.report_timestamps != 0;
  o.show_memory = f.memory != 0;
  o.inject_fault_rank = f.inject_fault;
  o.inject_size_fault_rank = f.inject_size_fault;
  o.report_cputime = f.report_cputime != 0;
  // GPU flags; whether the backend can honour them is CheckSupported's question.
  o.ngpus = f.ngpus;
  o.graph_launches = f.cudagraph;
  o.registration = f.local_register;
  o.unalign = f.unalign;
  o.stream_null = f.stream_null != 0;
  o.parallel_init = f.parallel_init != 0;
  if (o.graph_launches > 0) {
    // A captured stream cannot be waited on, and its iterations run back to back.
    if (o.blocking != 0) {
      throw UsageError("-G/--cudagraph cannot be combined with -z/--blocking " +
                       std::to_string(o.blocking) +
                       ": a graph cannot wait between its operations; drop one of them");
    }

    if (o.stream_null) {
      throw UsageError("-G/--cudagraph cannot capture the default stream (-y 1): drop -y");
    }
  }
  if ((!f.nccl_lib.empty() || !f.gpu_runtime_lib.empty()) && !f.backend.empty() &&
      f.backend != "nccl" && f.backend != "rccl") {
    throw UsageError("--nccl-lib and --gpu-runtime-lib apply to the nccl and rccl backends, not " +
                     f.backend + ": drop them or choose --backend nccl");
  }
  return o;
}

std::unique_ptr<Backend> ResolveBackend(const RunFlags& flags, const LaunchInfo& launch,
                                        const Env& env, RunOptions& options, std::ostream& err) {
  const BackendOptions libraries{flags.nccl_lib, flags.gpu_runtime_lib, env};
  if (options.backend.empty()) {
    std::string reason;
    options.backend = DefaultBackend(libraries, &reason);
    // No silent fallback: on a node with GPUs, host memory is measured only when asked for
    // (--backend gloo); otherwise exit 2 saying why no GPU is visible and how to fix it.
    if (options.backend == "gloo") RefuseHostFallback(ProbeNodeGpus(NodeRoot(env)), env, reason);
    if (launch.process_rank == 0) {
      err << "# fabricscope: no --backend given: using " << options.backend << " (" << reason
          << ")\n";
    }
  }
  auto backend = MakeBackend(options.backend, libraries);
  if (flags.datatype == "all") options.types = SupportedOf(*backend, options.types);
  if (flags.op == "all") options.ops = SupportedOf(*backend, options.ops);
  CheckSupported(*backend, options);
  return backend;
}

namespace {

// Closes the report's file when the run ends, whatever ends it: the launcher's fatal paths
// (the -T watchdog, a silent peer, SIGTERM) end the process from inside End, so the file is
// renamed into place there, after the report's last line, and not after RunJob returns.
class OutputCloser final : public Reporter {
 public:
  explicit OutputCloser(Output& output) : output_(output) {}
  void End(const RunResult& result) override {
    (void)result;
    (void)output_.TryClose();  // a failure is thrown again by the caller's Close
  }

 private:
  Output& output_;
};

}  // namespace

std::unique_ptr<Output> AddRunReporters(const RunFlags& flags, std::ostream& table,
                                        MultiReporter& sink) {
  auto output = std::make_unique<Output>(table, flags.output);
  sink.Add(FindFormat(Reporters(), flags.format).make(output->stream()));
  sink.Add(std::make_unique<OutputCloser>(*output));
  if (!flags.json_file.empty()) {
    sink.Add(MakeJsonFileReporter(flags.json_file));  // throws for a path it cannot write
    // nccl-tests' first line with -J (src/util.cu:349 at 2.19.6), on rank 0 only.
    if (flags.format == "text")
      output->stream() << "# Writing JSON output to " << flags.json_file << "\n";
  }
  return output;
}

void PrintRunPlan(const RunFlags& flags, const RunOptions& options, const LaunchInfo& launch,
                  std::ostream& out, std::string_view table) {
  const auto& backends = Backends();
  const bool known = std::any_of(backends.begin(), backends.end(),
                                 [&](const BackendEntry& b) { return b.name == options.backend; });
  if (!options.backend.empty() && !known) {
    throw UsageError("unknown --backend '" + options.backend + "': choose " + NamesOf(backends));
  }
  FindFormat(Reporters(), flags.format);  // throws for an unknown --format
  const int per_process = options.nthreads * std::max(1, options.ngpus);
  const SweepPlan plan = PlanSweep(options, per_process);
  const std::string launcher = DescribeLaunch(launch);
  out << "# fabricscope run: dry run, nothing is measured\n"
      << "launcher: " << (launcher.empty() ? "single (one process)" : launcher) << "\n"
      << fmt::format("ranks: {} processes x {} threads x {} GPUs = {}\n", launch.process_count,
                     options.nthreads, std::max(1, options.ngpus),
                     launch.process_count * per_process)
      << "backend: "
      << (options.backend.empty() ? "default (nccl where a CUDA device is present, else gloo)"
                                  : options.backend)
      << "\n"
      << "collectives: "
      << Joined(options.collectives, [](Collective c) { return std::string(SpecOf(c).name); })
      << "\n"
      << fmt::format("sizes: {} ({} to {} bytes)\n", plan.sizes.size(),
                     plan.sizes.empty() ? 0 : plan.sizes.front(),
                     plan.sizes.empty() ? 0 : plan.sizes.back())
      << "report: " << flags.format << " on "
      << (flags.output.empty() ? std::string(table) : flags.output)
      << (flags.json_file.empty() ? "" : ", JSON to " + flags.json_file) << "\n";
}

std::optional<RunResult> PerformRun(const RunFlags& flags, std::vector<std::string> command_line,
                                    const CommandContext& ctx, RunTable table) {
  const bool on_stderr = table == RunTable::kStderr;
  RunFlags corrected = flags;
  for (const std::string& note : ApplyNcclTestsNotes(corrected)) ctx.err << note << "\n";
  RunOptions options = ToRunOptions(corrected);
  options.command_line = std::move(command_line);
  const Env env = Env::Process();
  const LaunchInfo launch = DetectLaunch(env, corrected.launcher);
  AnnounceLaunch(launch, ctx.err);
  if (corrected.dry_run) {
    if (launch.process_rank == 0)
      PrintRunPlan(corrected, options, launch, ctx.out, on_stderr ? "stderr" : "stdout");
    return std::nullopt;
  }
  auto backend = ResolveBackend(corrected, launch, env, options, ctx.err);

  // Only the first process reports (and touches the output files): on a shared file
  // system, every process opening -J would truncate rank 0's results.
  MultiReporter sink;
  std::unique_ptr<Output> output;
  if (launch.process_rank == 0) {
    output = AddRunReporters(corrected, on_stderr ? ctx.err : ctx.out, sink);
    // Progress only when someone watches stderr, the table is not on stderr, and it is not
    // already scrolling by on the same terminal.
    const bool table_on_terminal = corrected.output.empty() && ctx.terminals.out;
    const SweepPlan plan = PlanSweep(options, options.nthreads * options.ngpus);
    if (!on_stderr && ctx.terminals.err && !table_on_terminal) {
      const int ranks = launch.process_count * options.nthreads * options.ngpus;
      sink.Add(MakeProgressReporter(ctx.err, CountRows(options, plan, ranks)));
    }
    if (options.show_memory) {
      ctx.err << "# fabricscope: up to " << 2 * plan.max_bytes
              << " bytes of buffers per rank (send + receive at the largest size)\n";
    }
  }

  RunResult result = RunJob(options, *backend, &sink, launch, env);
  if (launch.process_rank != 0) return std::nullopt;
  output->Close();
  return result;
}

int ExecuteRun(const RunFlags& flags, const DbFlags& db, const CommandContext& ctx) {
  const std::optional<db::StoreUrl> store = StoreOf(db, Env::Process());
  const std::optional<RunResult> result =
      PerformRun(flags, ctx.command_line, ctx, RunTable::kStdout);
  const int code = result.has_value() && RunFailed(*result) ? kExitFailed : kExitOk;
  if (!result) return code;  // another process of the job, or a dry run: process 0 records
  return RecordResults(store, RecordOfRun(*result, ctx.command_line), ctx, code);
}

// The run's flags and --db, which check's `-- RUN FLAGS` do not take (check records itself).
struct RunCommandFlags {
  RunFlags run;
  DbFlags db;
};

CommandAction SetupRunCommand(CLI::App& app) {
  auto flags = std::make_shared<RunCommandFlags>();
  AddRunFlags(app, flags->run, false);
  AddDbFlag(app, flags->db);
  return [flags](const CommandContext& ctx) { return ExecuteRun(flags->run, flags->db, ctx); };
}

CommandAction SetupPerfCommand(CLI::App& app, std::string collective) {
  auto flags = std::make_shared<RunCommandFlags>();
  flags->run.collective = std::move(collective);
  AddRunFlags(app, flags->run, true);
  AddDbFlag(app, flags->db);
  return [flags](const CommandContext& ctx) { return ExecuteRun(flags->run, flags->db, ctx); };
}

std::vector<std::string> LocalDefaultArgs() {
  // Up to 4 ranks, but no more than the cores: Gloo's ranks wait on sockets, and more ranks
  // than cores turn microseconds of latency into scheduler ticks.
  const unsigned cores = std::thread::hardware_concurrency();
  const unsigned ranks = std::clamp(cores, 2u, 4u);
  return {"-t", std::to_string(ranks), "-b", "8", "-e", "64M", "-f", "4", "--backend", "gloo"};
}

}  // namespace fabricscope::cli
