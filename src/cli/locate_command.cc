#include "cli/locate_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/db_flags.h"
#include "cli/drain_flags.h"
#include "cli/flags.h"
#include "cli/output.h"
#include "cli/records.h"
#include "fabricscope/backend.h"
#include "fabricscope/check.h"
#include "fabricscope/error.h"
#include "fabricscope/finding.h"
#include "fabricscope/joined.h"
#include "fabricscope/launch.h"
#include "fabricscope/locate.h"
#include "fabricscope/platform.h"
#include "fabricscope/sizes.h"
#include "fabricscope/version.h"

namespace fabricscope::cli {
namespace {

// The flags as typed.
struct LocateFlags {
  DbFlags db;
  std::string backend = "gloo";
  std::string launcher = "auto";
  std::string group_by = "host";
  std::string mode = "full";
  std::string size = "4M";
  std::string format = "text";
  std::string output;
  std::string json_file;
  std::string svg_file;
  std::string samples_file;          // --save-samples: every measurement as JSON lines
  MeasureFlags measure{.iters = 5};  // -t -n -w -c -T
  int coverage = 3;
  uint64_t seed = 1;
  double threshold = 0.7;
  double confidence = 0.999;
  double budget = 300;
  int max_sweeps = 16;
  double expect = 0;
  std::string platform;
  std::string root;  // where rank 0 detects the platform for two nodes; empty: "/"
  std::string topology;
  bool skip_per_node = false;
  bool skip_stragglers = false;
  bool communicator_per_pair = false;
  bool mean_iteration = false;
  // A simulated cluster instead of a job.
  int simulate = 0;
  int rails = 1;
  double noise = 0.03;
  double transients = 0;
  double stalls = 0;
  std::vector<std::string> inject;
  std::vector<std::string> noise_from;  // recorded samples files whose noise is replayed
  std::string fat_tree;
  std::vector<int> late_ranks;
  bool dry_run = false;  // print the plan, measure nothing
  DrainFlags drain;
};

const OutputFormats<LocateReport>& LocateFormats() {
  static const OutputFormats<LocateReport> formats = {
      {"text",
       "the node x node matrix (up to 16 nodes), rounds, the verdict line and the findings "
       "(culprits with their evidence, undecided suspects, stragglers), for people",
       [](const LocateReport& report, std::ostream& out) { WriteLocateText(report, out); }},
      {"json", "the whole report, with its findings, as one JSON document, for programs",
       [](const LocateReport& report, std::ostream& out) { out << LocateJson(report); }},
  };
  return formats;
}

void AddFlags(CLI::App& app, LocateFlags& f) {
  app.add_option("--backend", f.backend, "communication library: " + NamesOf(Backends()))
      ->capture_default_str();
  app.add_option("--launcher", f.launcher,
                 "how processes find each other: auto, single, mpi, env (as for run)")
      ->capture_default_str();
  AddMeasureFlags(app, f.measure,
                  {.nthreads = "ranks per process, as threads; a node's ranks are its rails",
                   .iters = "timed iterations per measurement",
                   .warmup_iters = "warm-up iterations per measurement",
                   .check = "validation iterations; wrong data makes a pair the slowest",
                   .timeout = "seconds a rank waits for its peers; 0 = 300 s"});
  app.add_option("--group-by", f.group_by,
                 "what one node is: host (same hostname), process, or rank")
      ->capture_default_str();
  app.add_option("--mode", f.mode,
                 "full: every pair, in N-1 rounds (N for odd N); quick: --coverage random peers "
                 "per node")
      ->capture_default_str();
  app.add_option("--coverage", f.coverage, "quick mode: rounds, i.e. peers each node meets")
      ->check(AtLeast(1, "give at least 1 round"))
      ->capture_default_str();
  app.add_option("--seed", f.seed, "quick mode's pairing (and a simulated cluster's noise)")
      ->capture_default_str();
  app.add_option("-b,--size", f.size, "message size of each measurement (K/M/G suffixes)")
      ->capture_default_str();
  app.add_option("--threshold", f.threshold,
                 "a pair is slow below this fraction of the pairs it is compared with (and "
                 "significantly below them)")
      ->check(Checked<double>([](double v) { return v > 0 && v < 1; },
                              "give a fraction between 0 and 1 (exclusive), e.g. 0.7"))
      ->capture_default_str();
  app.add_option("--confidence", f.confidence,
                 "every name holds at this confidence (corrected for the number of pairs and "
                 "remeasurements); below it: undecided")
      ->check(Checked<double>([](double v) { return v >= 0.5 && v < 1; },
                              "give at least 0.5 and below 1, e.g. 0.999"))
      ->capture_default_str();
  app.add_option("--budget", f.budget,
                 "seconds of measuring again after the first pass, before what is still undecided "
                 "is reported inconclusive")
      ->check(AtLeast(0.0, "give 0 or more seconds"))
      ->capture_default_str();
  app.add_option("--max-sweeps", f.max_sweeps,
                 "passes over the pairs at most: the first, then remeasurements of what is "
                 "undecided")
      ->check(AtLeast(1, "give at least 1"))
      ->capture_default_str();
  app.add_option("--topology", f.topology,
                 "which leaf switch each host hangs from: a map file (HOST SWITCH per line), "
                 "Slurm's topology.conf, or a directory of saved infiniband-diags outputs (as "
                 "`fabricscope fabric --from DIR` reads it: each HCA's leaf, and with "
                 "dump_fts.txt every pair's route); slow pairs they share are blamed on a "
                 "leaf's uplinks (all of them, or some: which one needs the routes, from the "
                 "directory's forwarding tables or --fat-tree: then the one cable, uplink or "
                 "spine link)");
  app.add_option("--expect", f.expect,
                 "expected sendrecv bus bandwidth of a pair, GB/s (e.g. from `fabricscope "
                 "check`): what two nodes are judged against")
      ->check(AtLeast(0.0, "give 0 (none) or a bandwidth in GB/s, e.g. --expect 24"));
  app.add_option("--platform", f.platform,
                 "catalog platform (docs/catalog.md): two nodes' pair is judged against "
                 "check's expectation for a 2-node sendrecv on it at -b (instead of --expect); "
                 "without either, the platform detected on rank 0's host, as `check` detects "
                 "it, when one fits");
  app.add_option("--root", f.root,
                 "detect the platform (two nodes, no --platform or --expect) from the node "
                 "tree under DIR (sys/, proc/) on rank 0, instead of from / (default)")
      ->type_name("DIR");
  app.add_flag("--skip-per-node", f.skip_per_node,
               "no per-node test (each node's own ranks together)");
  app.add_flag("--skip-stragglers", f.skip_stragglers,
               "no all_reduce over every rank for per-rank times");
  app.add_flag("--communicator-per-pair", f.communicator_per_pair,
               "measure each pair on a communicator of its own, created every round, instead "
               "of point to point on the job's (slower at scale; for comparison)");
  app.add_flag("--mean-iteration", f.mean_iteration,
               "a measurement's number is the mean of its timed iterations (as `run`), not "
               "its fastest (for comparison)");
  AddFormatOption(app, f.format, LocateFormats(), "report format on stdout or --output");
  app.add_option("--output", f.output, "write the report to FILE instead of stdout");
  app.add_option("--json", f.json_file, "also write the JSON report to FILE");
  app.add_option("--save-samples", f.samples_file,
                 "also write every measurement (round, pair or node, collective, size, "
                 "iterations, time, bandwidth) to FILE as JSON lines (docs/locate.md)");
  app.add_option("--svg", f.svg_file,
                 "write the node x node heatmap to FILE (rail r > 0 to FILE with .railR before "
                 ".svg)");
  AddDbFlag(app, f.db);
  app.add_flag("--dry-run", f.dry_run,
               "print the plan (launcher, backend, mode, size) and exit 0 without measuring");
  AddDrainFlags(app, f.drain);
  app.add_option("--simulate", f.simulate,
                 "no job: a simulated cluster of N nodes answers the same rounds");
  app.add_option("--rails", f.rails, "simulated: ranks (NICs) per node")->capture_default_str();
  app.add_option("--noise", f.noise, "simulated: sigma of the log-normal noise")
      ->capture_default_str();
  app.add_option("--transients", f.transients,
                 "simulated: share of measurements hit by a burst of other traffic")
      ->capture_default_str();
  app.add_option("--stalls", f.stalls,
                 "simulated: share of measurements that keep 3% of their bandwidth (a CPU taken "
                 "for the whole measurement)")
      ->capture_default_str();
  app.add_option("--inject", f.inject,
                 "simulated fault (repeatable): node:N, nic:N/RAIL, link:A-B, intra:N, "
                 "rail:R (every node's NIC R), uplink:FIRST-LAST (a leaf switch's uplinks); "
                 "with --fat-tree, uplink:leafL-spineS (one uplink), spine-link:spineS-leafL "
                 "(a spine down to a leaf), switch:NAME (every link of a switch) or fabric:LINK "
                 "(any link, as `fabricscope model "
                 "--simulate` names it); each optionally :FACTOR (bandwidth left, default 0.25)");
  app.add_option("--noise-from", f.noise_from,
                 "simulated: replay the noise of these --save-samples files of healthy runs "
                 "(repeatable) instead of --noise/--transients/--stalls: whole recorded rounds, "
                 "so slow periods shared by a round and bursts are kept");
  app.add_option("--fat-tree", f.fat_tree,
                 "simulated: a fat-tree of the fabric simulator under the nodes, each pair's "
                 "bandwidth its ECMP route's narrowest link; KEY=VALUE,... of tiers, design, "
                 "leaf-ports, oversubscription, leaves-per-pod, pod-oversubscription, routing, "
                 "seed (e.g. leaf-ports=8,oversubscription=2: 8 leaves of 8 nodes under 4 "
                 "spines for 64 nodes); without --topology, the blame reads its leaves and "
                 "routes")
      ->type_name("SPEC");
  app.add_option("--late-rank", f.late_ranks,
                 "simulated: a rank that arrives late at the collective over every rank "
                 "(repeatable)");
}

void Require(bool ok, const std::string& message) {
  if (!ok) throw UsageError(message);
}

LocateOptions ToLocateOptions(const LocateFlags& f) {
  LocateOptions o;
  if (f.mode == "full") {
    o.mode = LocateMode::kFull;
  } else if (f.mode == "quick") {
    o.mode = LocateMode::kQuick;
  } else {
    throw UsageError("unknown --mode '" + f.mode +
                     "': give full (every pair) or quick (--coverage random peers per node)");
  }
  o.coverage = f.coverage;
  o.seed = f.seed;
  o.threshold = f.threshold;
  o.confidence = f.confidence;
  o.budget_s = f.budget;
  o.max_sweeps = f.max_sweeps;
  o.expect_gbs = f.expect;
  if (!f.platform.empty()) {
    Require(f.expect == 0,
            "give --platform or --expect, not both: each sets what two nodes' "
            "pair is judged against");
    const PairExpectation e =
        PlatformPairExpectation(Catalog::Builtin().Get(f.platform), ParseSize(f.size, "-b/--size"));
    o.expect_gbs = e.gbs;
    o.expect_source = e.source;
  }
  if (!f.root.empty()) {
    Require(f.platform.empty() && f.expect == 0,
            "--root is where rank 0 detects the platform two nodes are judged against; with "
            "--platform or --expect nothing is detected: drop --root or them");
    std::error_code error;
    Require(std::filesystem::is_directory(f.root, error),
            "--root '" + f.root +
                "' is not a directory: give a node's tree (sys/, proc/), or "
                "drop --root to detect from /");
  }
  if (!f.topology.empty()) o.topology = ReadTopology(f.topology);
  o.per_node = !f.skip_per_node;
  o.stragglers = !f.skip_stragglers;
  return o;
}

// Two nodes with neither --platform nor --expect: check's expectation of the platform
// detected under `root` ("/" when empty), for rank 0 to share. None when no platform fits or
// the platform has no figure for a 2-node sendrecv.
std::function<std::optional<PairExpectation>()> DetectedExpectation(const std::string& root,
                                                                    size_t bytes) {
  return [root = root.empty() ? std::string("/") : root,
          bytes]() -> std::optional<PairExpectation> {
    const PlatformChoice choice = DetectPlatform(Catalog::Builtin(), root);
    if (!choice.platform) return std::nullopt;
    try {
      PairExpectation e = PlatformPairExpectation(*choice.platform, bytes);
      e.source = fmt::format("{} detected on rank 0's host from {}: {}", choice.platform->name,
                             root, e.source);
      e.notes.push_back(fmt::format("two nodes judged against {}, detected on rank 0's host: {}",
                                    choice.platform->name, Joined(choice.evidence)));
      for (const std::string& note : choice.notes) e.notes.push_back("detection: " + note);
      return e;
    } catch (const UsageError&) {
      return std::nullopt;  // the platform gives no figure for a pair
    }
  };
}

void CheckSimulationFlags(const LocateFlags& f) {
  if (f.simulate > 0) return;
  Require(f.simulate == 0,
          "--simulate " + std::to_string(f.simulate) + " must be a number of nodes (2 or more)");
  const char* flag = !f.inject.empty()       ? "--inject"
                     : !f.late_ranks.empty() ? "--late-rank"
                     : f.rails != 1          ? "--rails"
                     : f.noise != 0.03       ? "--noise"
                     : f.transients != 0     ? "--transients"
                     : f.stalls != 0         ? "--stalls"
                     : !f.fat_tree.empty()   ? "--fat-tree"
                     : !f.noise_from.empty() ? "--noise-from"
                                             : nullptr;
  if (flag != nullptr) {
    throw UsageError(std::string(flag) +
                     " describes a simulated cluster: add --simulate N, or drop it to measure "
                     "this job");
  }
}

// Where the report (in --format), the JSON report and the heatmap go; opened before
// anything runs, so a bad path costs nothing.
class Outputs {
 public:
  Outputs(const LocateFlags& f, std::ostream& out)
      : flags_(f), format_(FindFormat(LocateFormats(), f.format)), report_(out, f.output) {
    if (!f.json_file.empty()) json_.emplace(out, f.json_file, "the JSON report");
    if (!f.svg_file.empty()) svg_.emplace(out, f.svg_file, "the heatmap");
    if (!f.samples_file.empty()) samples_.emplace(out, f.samples_file, "the samples");
  }

  void Write(const LocateReport& report) {
    format_.render(report, report_.stream());
    report_.Close();
    if (json_) {
      json_->stream() << LocateJson(report);
      json_->Close();
    }
    if (samples_) {
      WriteLocateSamples(report, samples_->stream());
      samples_->Close();
    }
    if (svg_) {
      svg_->stream() << LocateHeatmapSvg(report, 0);
      svg_->Close();
      for (int rail = 1; rail < report.layout.rails; ++rail) {
        std::string path = flags_.svg_file;
        const size_t dot = path.rfind(".svg");
        const std::string suffix = ".rail" + std::to_string(rail);
        if (dot == std::string::npos) {
          path += suffix;
        } else {
          path.insert(dot, suffix);
        }
        WriteOutput(report_.stream(), path, LocateHeatmapSvg(report, rail), "the heatmap");
      }
    }
  }

 private:
  const LocateFlags& flags_;
  const OutputFormat<LocateReport>& format_;
  Output report_;
  std::optional<Output> json_;
  std::optional<Output> svg_;
  std::optional<Output> samples_;
};

// "\r# locate: pairs round 12 of 63" on a terminal.
void ShowProgress(LocateOptions& options, const CommandContext& ctx) {
  if (!ctx.terminals.err) return;
  std::ostream* err = &ctx.err;
  options.progress = [err](std::string_view phase, int round, int rounds) {
    *err << fmt::format("\r# fabricscope locate: {} round {} of {}   ", phase, round, rounds)
         << std::flush;
  };
}

void EndProgress(const LocateOptions& options, const CommandContext& ctx) {
  if (options.progress) ctx.err << "\n";
}

// --dry-run: what the job would measure, once every flag has been checked.
int PrintPlan(const LocateFlags& f, const LaunchInfo& launch, std::ostream& out) {
  const auto& backends = Backends();
  Require(std::any_of(backends.begin(), backends.end(),
                      [&](const BackendEntry& b) { return b.name == f.backend; }),
          "unknown --backend '" + f.backend + "': choose " + NamesOf(backends));
  if (launch.process_rank != 0) return kExitOk;
  const std::string launcher = DescribeLaunch(launch);
  out << "# fabricscope locate: dry run, nothing is measured\n"
      << "launcher: " << (launcher.empty() ? "single (one process)" : launcher) << "\n"
      << fmt::format("processes: {} x {} threads, grouped by {}\n", launch.process_count,
                     f.measure.nthreads, f.group_by)
      << fmt::format("backend: {}; mode: {}; size: {}; iterations: {}\n", f.backend, f.mode, f.size,
                     f.measure.iters);
  return kExitOk;
}

// The diagnoses' one rule (docs/output.md) over the report's findings: 1 a culprit named (a
// CRITICAL finding), 4 nobody named but not cleared either (inconclusive or ambiguous: an
// undecided finding), 0 cleared.
int ExitCode(const LocateReport& report) {
  return ExitCodeOf(OutcomeOf(report.findings, /*strict=*/false));
}

// The hosts of the ranks measured: the nodes a locate covered.
std::vector<std::string> HostsOf(const LocateReport& report) {
  std::vector<std::string> hosts;
  for (const RankInfo& rank : report.ranks) hosts.push_back(rank.hostname);
  return hosts;
}

// After the report: record it (--db), then act on it (--drain, --resume).
int Finish(const LocateFlags& f, const std::optional<db::StoreUrl>& store,
           const LocateReport& report, const CommandContext& ctx) {
  const int recorded =
      RecordResults(store, RecordOfLocate(report, ctx.command_line), ctx, ExitCode(report));
  return ApplyDrain(f.drain, "locate", report.findings, HostsOf(report), ctx, recorded);
}

int Execute(const LocateFlags& f, const CommandContext& ctx) {
  const std::vector<std::string>& args = ctx.command_line;
  // Every process checks every value, so that a bad one stops the whole job at once.
  FindFormat(LocateFormats(), f.format);
  CheckSimulationFlags(f);
  CheckDrainFlags(f.drain, Env::Process());
  LocateOptions options = ToLocateOptions(f);
  const std::optional<db::StoreUrl> store = StoreOf(f.db, Env::Process());
  LocateReport report;
  if (f.simulate > 0) {
    SimulatedClusterOptions sim;
    sim.nodes = f.simulate;
    sim.rails = f.rails;
    sim.noise = f.noise;
    sim.transient_rate = f.transients;
    sim.stall_rate = f.stalls;
    sim.seed = f.seed;
    for (const std::string& text : f.inject) sim.faults.push_back(ParseSimulatedFault(text));
    sim.late_ranks = f.late_ranks;
    if (!f.fat_tree.empty()) sim.fat_tree = ParseFatTree(f.fat_tree);
    if (!f.noise_from.empty()) sim.recorded_noise = LoadRecordedNoise(f.noise_from);
    SimulatedCluster cluster(sim);
    if (options.topology.empty()) options.topology = cluster.FabricTopology();
    Outputs outputs(f, ctx.out);
    ShowProgress(options, ctx);
    report = Locate(options, cluster.Layout(), cluster);
    EndProgress(options, ctx);
    report.version = kVersion;
    report.backend = "simulated";
    report.args = args;
    outputs.Write(report);
    return Finish(f, store, report, ctx);
  }

  LocateJobOptions job;
  job.grouping = ParseNodeGrouping(f.group_by);
  RunOptions& m = job.measure;
  m.backend = f.backend;
  m.min_bytes = m.max_bytes = ParseSize(f.size, "-b/--size");
  Require(m.max_bytes > 0, "-b/--size must be above 0");
  f.measure.ApplyTo(m);
  m.command_line = args;
  const Env env = Env::Process();
  const LaunchInfo launch = DetectLaunch(env, f.launcher);
  AnnounceLaunch(launch, ctx.err);
  if (f.dry_run) return PrintPlan(f, launch, ctx.out);
  auto backend = MakeBackend(m.backend, {.library = {}, .runtime_library = {}, .env = env});
  // Only the first process reports and touches the output files.
  std::unique_ptr<Outputs> outputs;
  if (launch.process_rank == 0) {
    outputs = std::make_unique<Outputs>(f, ctx.out);
    ShowProgress(options, ctx);
  }
  job.locate = options;
  if (!(options.expect_gbs > 0))
    job.expectation_on_rank0 = DetectedExpectation(f.root, m.max_bytes);
  job.point_to_point = !f.communicator_per_pair;
  job.fastest_iteration = !f.mean_iteration;
  report = RunLocateJob(job, *backend, launch, env);
  if (!outputs || report.ranks.empty()) return kExitOk;
  EndProgress(options, ctx);
  outputs->Write(report);
  return Finish(f, store, report, ctx);
}

}  // namespace

CommandAction SetupLocateCommand(CLI::App& app) {
  auto flags = std::make_shared<LocateFlags>();
  AddFlags(app, *flags);
  app.footer(
      ExitCodesHelp({.clear = "nobody named (everything decided fine)",
                     .failed = "a culprit named",
                     .inconclusive = "inconclusive or ambiguous (nobody named, not cleared)"}) +
      "\nAcross hosts, start one process per host as for `run` (mpirun, srun, or RANK/WORLD_SIZE/"
      "MASTER_ADDR/MASTER_PORT); docs/locate.md.");
  return [flags](const CommandContext& ctx) { return Execute(*flags, ctx); };
}

}  // namespace fabricscope::cli
