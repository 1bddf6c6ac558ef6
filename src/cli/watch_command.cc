#include "cli/watch_command.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/db_flags.h"
#include "cli/drain_flags.h"
#include "cli/flags.h"
#include "cli/output.h"
#include "cli/records.h"
#include "fabricscope/error.h"
#include "fabricscope/finding.h"
#include "fabricscope/joined.h"
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
  DbFlags db;
  DrainFlags drain;
};

using Windows = std::vector<WatchWindow>;

const OutputFormats<Windows>& WatchFormats() {
  static const OutputFormats<Windows> formats = {
      {"text",
       "one block a window: its tables, then a line per finding (CRITICAL: an alert), for people",
       [](const Windows& windows, std::ostream& out) { out << WatchText(windows); }},
      {"json", "the windows and their findings as JSON, for programs",
       [](const Windows& windows, std::ostream& out) { out << WatchJson(windows); }},
  };
  return formats;
}

// Where the windows go, in the chosen format, and the readers' diagnostics; and the store
// each printed batch of windows is recorded in (--db), and whether a write failed.
struct WatchOutput {
  const OutputFormat<Windows>& format;
  std::ostream& out;
  std::ostream& err;
  const CommandContext& ctx;
  std::optional<db::StoreUrl> store;
  mutable bool store_failed = false;
  // `code`, or 3 in place of a 0 when a window could not be recorded.
  int Exit(int code) const { return store_failed && code == kExitOk ? kExitRuntime : code; }
};

void AddFlags(CLI::App& app, WatchFlags& f) {
  app.add_option("inputs", f.inputs,
                 "JSONL of libnccl-profiler-fabricscope.so or NCCL Inspector, or NCCL "
                 "Inspector's Prometheus textfiles (NCCL_INSPECTOR_PROM_DUMP=1, *.prom): files, "
                 "or directories (every *.jsonl and nccl_inspector_metrics_*.prom under them)");
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
                 "a rank starting this many us after the first (median), and as much after "
                 "the next rank, may straggle")
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
  AddFormatOption(app, f.format, WatchFormats());
  AddDbFlag(app, f.db);
  AddDrainFlags(app, f.drain);
}

void Report(const std::vector<Diagnostic>& diagnostics, const WatchOutput& output) {
  for (const Diagnostic& d : diagnostics) output.err << d.ToString() << "\n";
}

void Print(const Windows& windows, const WatchOutput& output) {
  output.format.render(windows, output.out);
  output.out << std::flush;
  if (RecordResults(output.store, RecordOfWatch(windows, output.ctx.command_line), output.ctx,
                    kExitOk) != kExitOk) {
    output.store_failed = true;
  }
}

// How the windows read so far end, by the diagnoses' one rule (docs/output.md): a CRITICAL
// finding (an alert) is 1; none, but one that did not decide (a straggler or slow link within
// the noise), 4; else 0. Kept as the worst severity and whether anything was undecided, so
// that a long --follow keeps no findings but the CRITICAL ones (what --drain acts on) and the
// ranks' nodes (what --resume may return).
struct Verdict {
  Severity worst = Severity::kOk;
  bool undecided = false;
  std::vector<Finding> critical;
  std::set<std::string> nodes;

  void Add(const Windows& windows) {
    for (const WatchWindow& w : windows) {
      worst = Worst(w.findings, worst);
      undecided = undecided || AnyUndecided(w.findings);
      for (const Finding& finding : w.findings) {
        if (finding.severity == Severity::kCritical) critical.push_back(finding);
      }
      for (const WatchRank& rank : w.ranks) {
        if (!rank.node.empty()) nodes.insert(rank.node);
      }
    }
  }
  Outcome outcome() const { return OutcomeOf(worst, undecided, /*strict=*/false); }
  int ExitCode() const { return ExitCodeOf(outcome()); }
};

Verdict Once(WatchSource& source, const WatchFlags& f, const WatchOutput& output) {
  const InspectorRead read = source.Poll();
  Report(read.diagnostics, output);
  if (read.records.empty()) {
    throw UsageError("watch: no collective records in " + Joined(f.inputs) +
                     ": expected JSONL with coll_perf records, or NCCL Inspector's "
                     "nccl_inspector_metrics_*.prom files, written by "
                     "libnccl-profiler-fabricscope.so or NCCL Inspector");
  }
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read, f.options, &baseline);
  Print(windows, output);
  Verdict verdict;
  verdict.Add(windows);
  return verdict;
}

Verdict Follow(WatchSource& source, WatchFlags f, const WatchOutput& output) {
  // A window is what arrived during one interval.
  const double interval = f.interval_s > 0 ? f.interval_s : f.options.window_s;
  f.options.window_s = 0;
  WatchBaseline baseline;
  const auto start = std::chrono::steady_clock::now();
  Verdict verdict;  // of every window so far
  while (true) {
    const InspectorRead read = source.Poll();
    Report(read.diagnostics, output);
    if (!read.records.empty() || !read.links.empty()) {
      const auto windows = JudgeWindows(read, f.options, &baseline);
      Print(windows, output);
      verdict.Add(windows);
      if (verdict.outcome() == Outcome::kFailed) return verdict;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (f.duration_s > 0 && elapsed >= f.duration_s) return verdict;
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
}

// With --prometheus: one window now, or one every interval with --follow.
Verdict FromPrometheus(const WatchFlags& f, const WatchOutput& output) {
  WatchBaseline baseline;
  const auto start = std::chrono::steady_clock::now();
  Verdict verdict;  // of every window so far
  while (true) {
    const std::vector<WatchWindow> windows = {
        QueryPrometheus(f.prometheus, f.job, f.options, &baseline)};
    Print(windows, output);
    verdict.Add(windows);
    if (verdict.outcome() == Outcome::kFailed) return verdict;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!f.follow || (f.duration_s > 0 && elapsed >= f.duration_s)) return verdict;
    std::this_thread::sleep_for(
        std::chrono::duration<double>(f.interval_s > 0 ? f.interval_s : f.options.window_s));
  }
}

int ExecuteWatch(WatchFlags f, const CommandContext& ctx) {
  const WatchOutput output{.format = FindFormat(WatchFormats(), f.format),
                           .out = ctx.out,
                           .err = ctx.err,
                           .ctx = ctx,
                           .store = StoreOf(f.db, Env::Process())};
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
  CheckDrainFlags(f.drain, Env::Process());
  Verdict verdict;
  if (!f.prometheus.empty()) {
    verdict = FromPrometheus(f, output);
  } else {
    WatchSource source(f.inputs);
    verdict = f.follow ? Follow(source, f, output) : Once(source, f, output);
  }
  return ApplyDrain(f.drain, "watch", verdict.critical,
                    {verdict.nodes.begin(), verdict.nodes.end()}, ctx,
                    output.Exit(verdict.ExitCode()));
}

}  // namespace

CommandAction SetupWatchCommand(CLI::App& app) {
  auto flags = std::make_shared<WatchFlags>();
  AddFlags(app, *flags);
  app.footer(ExitCodesHelp({.clear = "no CRITICAL finding and nothing undecided",
                            .failed = "a CRITICAL finding (an alert)",
                            .inconclusive = "an INCONCLUSIVE finding (a straggler or slow link "
                                            "within the noise: nobody named, not cleared)",
                            .usage = "bad usage or no records",
                            .runtime = "a failure while running (Prometheus unreachable)"}) +
             " docs/watch.md.");
  return [flags](const CommandContext& ctx) { return ExecuteWatch(*flags, ctx); };
}

}  // namespace fabricscope::cli
