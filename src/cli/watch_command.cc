#include "cli/watch_command.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/joined.h"
#include "fabricscope/error.h"
#include "fabricscope/watch.h"

namespace fabricscope::cli {
namespace {

struct WatchFlags {
  std::vector<std::string> inputs;
  std::string prometheus;
  std::string job;
  WatchOptions options;
  std::string platform;
  int nodes = 0;
  double p99_us = 0;
  bool follow = false;
  double interval_s = 0;
  double duration_s = 0;
  std::string format = "text";
};

void AddFlags(CLI::App& app, WatchFlags& f) {
  app.add_option("inputs", f.inputs,
                 "JSONL of libnccl-profiler-fabricscope.so or NCCL Inspector: files, or "
                 "directories (every *.jsonl under them)");
  app.add_option("--prometheus", f.prometheus,
                 "instead of files: the plugin's metrics of the last --window seconds from "
                 "this Prometheus server's HTTP API (http://host:9090)");
  app.add_option("--job", f.job, "with --prometheus: only this job_id (SLURM_JOB_ID)");
  app.add_option("--window", f.options.window_s, "seconds of collectives judged together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--baseline", f.options.baseline_windows,
                 "the first N windows of a collective and size are the job's baseline")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--drop", f.options.drop_percent,
                 "alert when busbw falls this many percent below the baseline")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--straggler-us", f.options.straggler_us,
                 "a rank starting this many us after the first (median) may straggle")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--straggler-share", f.options.straggler_share,
                 "... when it is the last to start in at least this share of collectives")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--p99-us", f.p99_us, "alert when a bucket's p99 time exceeds this many us")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-samples", f.options.min_samples,
                 "fewer records than this in a bucket (or collectives per rank) judge nothing")
      ->capture_default_str();
  app.add_option("--min-bytes", f.options.min_bytes,
                 "leave messages smaller than this out of the busbw judgements")
      ->capture_default_str();
  app.add_option("--platform", f.platform,
                 "judge busbw against this platform of the catalog (fabricscope check --help)");
  app.add_option("--nodes", f.nodes,
                 "node count for the platform's expectation (default: "
                 "the records' nnodes)")
      ->check(CLI::PositiveNumber);
  app.add_flag("-f,--follow", f.follow,
               "keep reading what is appended (a live job); stop at the first alert");
  app.add_option("--interval", f.interval_s,
                 "with --follow: seconds between reads (default: "
                 "--window)")
      ->check(CLI::PositiveNumber);
  app.add_option("--duration", f.duration_s,
                 "with --follow: stop after this many seconds without an alert (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--format", f.format, "output: text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
}

// Prints the diagnostics; returns whether any is an error.
bool Report(const std::vector<Diagnostic>& diagnostics) {
  for (const Diagnostic& d : diagnostics) std::cerr << d.ToString() << "\n";
  return !diagnostics.empty();
}

void Print(const std::vector<WatchWindow>& windows, const std::string& format) {
  std::cout << (format == "json" ? WatchJson(windows) : WatchText(windows)) << std::flush;
}

bool AnyAlert(const std::vector<WatchWindow>& windows) {
  for (const WatchWindow& w : windows) {
    if (!w.alerts.empty()) return true;
  }
  return false;
}

int Once(WatchSource& source, const WatchFlags& f) {
  const InspectorRead read = source.Poll();
  Report(read.diagnostics);
  if (read.records.empty()) {
    throw UsageError("watch: no collective records in " + Joined(f.inputs) +
                     ": expected JSONL with coll_perf records, written by "
                     "libnccl-profiler-fabricscope.so or NCCL Inspector");
  }
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read.records, f.options, &baseline);
  Print(windows, f.format);
  return AnyAlert(windows) ? kExitFailed : kExitOk;
}

int Follow(WatchSource& source, WatchFlags f) {
  // A window is what arrived during one interval.
  const double interval = f.interval_s > 0 ? f.interval_s : f.options.window_s;
  f.options.window_s = 0;
  WatchBaseline baseline;
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const InspectorRead read = source.Poll();
    Report(read.diagnostics);
    if (!read.records.empty()) {
      const auto windows = JudgeWindows(read.records, f.options, &baseline);
      Print(windows, f.format);
      if (AnyAlert(windows)) return kExitFailed;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (f.duration_s > 0 && elapsed >= f.duration_s) return kExitOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
}

// With --prometheus: one window now, or one every interval with --follow.
int FromPrometheus(const WatchFlags& f) {
  WatchBaseline baseline;
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const std::vector<WatchWindow> windows = {
        QueryPrometheus(f.prometheus, f.job, f.options, &baseline)};
    Print(windows, f.format);
    if (AnyAlert(windows)) return kExitFailed;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!f.follow || (f.duration_s > 0 && elapsed >= f.duration_s)) return kExitOk;
    std::this_thread::sleep_for(
        std::chrono::duration<double>(f.interval_s > 0 ? f.interval_s : f.options.window_s));
  }
}

int ExecuteWatch(WatchFlags f) {
  Catalog catalog = Catalog::Builtin();
  if (!f.platform.empty()) f.options.platform = &catalog.Get(f.platform);
  if (f.nodes > 0) f.options.nodes = f.nodes;
  if (f.p99_us > 0) f.options.p99_alert_us = f.p99_us;
  if (!f.follow && (f.interval_s > 0 || f.duration_s > 0)) {
    throw UsageError("watch: --interval and --duration need --follow");
  }
  if (f.inputs.empty() == f.prometheus.empty()) {
    throw UsageError(
        "watch: give JSONL files or directories, or --prometheus URL (one of the two)");
  }
  if (!f.job.empty() && f.prometheus.empty()) throw UsageError("watch: --job needs --prometheus");
  if (!f.prometheus.empty()) return FromPrometheus(f);
  WatchSource source(f.inputs);
  return f.follow ? Follow(source, f) : Once(source, f);
}

}  // namespace

CommandAction SetupWatchCommand(CLI::App& app) {
  auto flags = std::make_shared<WatchFlags>();
  AddFlags(app, *flags);
  return [flags](const CommandContext&) { return ExecuteWatch(*flags); };
}

}  // namespace fabricscope::cli
