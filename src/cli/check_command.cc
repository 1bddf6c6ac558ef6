#include "cli/check_command.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/db_flags.h"
#include "cli/drain_flags.h"
#include "cli/flags.h"
#include "cli/output.h"
#include "cli/records.h"
#include "cli/run_command.h"
#include "fabricscope/backend.h"
#include "fabricscope/check.h"
#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/finding.h"
#include "fabricscope/joined.h"
#include "fabricscope/launch.h"
#include "fabricscope/parse.h"
#include "fabricscope/platform.h"
#include "fabricscope/report.h"
#include "fabricscope/sizes.h"
#include "fabricscope/strings.h"

namespace fabricscope::cli {
namespace {

// The flags as typed. Options are kept to tell "given" from "left at the default".
struct CheckFlags {
  std::vector<std::string> inputs;  // result files, and after "--" the run's flags
  std::string platform;
  GenericPlatformOptions generic;
  double latency_floor = 0;
  int nodes = 0;
  std::string root = "/";
  std::string judge_from;
  std::string sharp;  // --sharp yes|no: in-network reduction on the fabric
  std::string format = "text";
  std::string output;
  std::string collective;
  std::string fabric;        // --fabric DIR: saved infiniband-diags outputs
  std::string fabric_hosts;  // --fabric-hosts: the run's HCAs in rank order
  bool strict = false;
  bool dry_run = false;
  DbFlags db;
  DrainFlags drain;
  std::vector<CLI::Option*> generic_options;
  CLI::Option* nodes_option = nullptr;
  CLI::Option* latency_option = nullptr;
  CLI::Option* root_option = nullptr;
};

bool AnyGiven(const std::vector<CLI::Option*>& options) {
  return std::any_of(options.begin(), options.end(),
                     [](const CLI::Option* o) { return o->count() > 0; });
}

// What the flags say of the platform, for check's ChoosePlatform.
PlatformRequest RequestOf(const CheckFlags& flags) {
  PlatformRequest request{.name = flags.platform,
                          .generic = std::nullopt,
                          .root = flags.root,
                          .root_given = flags.root_option->count() > 0};
  if (AnyGiven(flags.generic_options)) {
    request.generic = flags.generic;
    if (flags.latency_option->count() > 0) request.generic->latency_floor_us = flags.latency_floor;
  }
  return request;
}

// `runs`: the results read from files, whose logs can say their platform; empty when the
// benchmark runs here.
PlatformChoice ChoosePlatform(const CheckFlags& flags, const std::vector<RunResult>& runs) {
  return ChoosePlatform(Catalog::Builtin(), RequestOf(flags), runs);
}

// The benchmark through the run command's path. Its table goes to stderr (or the run's own
// --output), so that stdout carries the verdict alone. Empty on processes other than the
// first of a multi-process job: they measure, the first one judges.
std::optional<RunResult> RunBenchmark(const std::vector<std::string>& args,
                                      const CommandContext& ctx) {
  CLI::App app{"the flags of fabricscope run", ctx.prog + " check --"};
  RunFlags flags;
  AddRunFlags(app, flags, false);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    throw UsageError("the flags after -- are those of '" + ctx.prog + " run --help'");
  } catch (const CLI::ParseError& e) {
    throw UsageError(std::string("after --: ") + e.what() + " (the flags after -- are those of '" +
                     ctx.prog + " run --help')");
  }
  if (flags.run_cycles == 0) {
    throw UsageError("-N 0 runs forever, and check judges a run that ended: give -N 1 or more");
  }
  std::vector<std::string> command_line = {ctx.prog, "run"};
  command_line.insert(command_line.end(), args.begin(), args.end());
  // The table goes to stderr (or --output), so that stdout carries the verdicts alone.
  return PerformRun(flags, std::move(command_line), ctx, RunTable::kStderr);
}

// What the inputs held: their runs and what else the logs say (the failure signatures).
struct CheckInputs {
  std::vector<RunResult> runs;
  std::vector<PasteEvidence> pastes;
  bool errors = false;  // an input had an error that left part of it unread
};

// Whether `d` is the reader's "no benchmark results" error or its trailer warning, which a
// paste the failure signatures can judge does not deserve: the paste is read, not refused.
bool ReadAnyway(const Diagnostic& d) {
  return d.message.starts_with("no benchmark results found") ||
         d.message.starts_with("a trailer line with no table before it");
}

// Reads every input, printing the readers' diagnostics on ctx.err. A log with no table is
// judged on what else it says (NCCL's lines, a trailer, PyTorch's errors); only an input of
// which nothing can be judged is an error.
CheckInputs ReadInputs(std::vector<std::string> paths, const CheckFlags& flags,
                       const CommandContext& ctx) {
  if (paths.empty()) {
    if (ctx.terminals.in) {
      throw UsageError(
          "nothing to check: give result files, pipe a log in (fabricscope check < job.log), "
          "or run the benchmark: fabricscope check [--platform NAME] -- -b 1M -e 1G -f 2");
    }
    paths.push_back("-");
  }
  PasteReader reader;
  // The failure signatures read the lines beside the table reader, on a second core when
  // there is one (docs/analyze.md: what it gains).
  std::optional<BackgroundObserver> background;
  if (std::thread::hardware_concurrency() > 1) background.emplace(reader);
  ParseOptions options;
  options.collective = flags.collective;
  options.observer = background ? static_cast<LineObserver*>(&*background) : &reader;
  CheckInputs in;
  std::vector<ParsedResults> parsed;
  parsed.reserve(paths.size());
  for (const std::string& path : paths) parsed.push_back(ReadResultsFile(path, options));
  if (background) background->Finish();
  std::vector<PasteEvidence> pastes = reader.Take();
  for (ParsedResults& p : parsed) {
    const auto paste = std::find_if(pastes.begin(), pastes.end(),
                                    [&](const PasteEvidence& e) { return e.source == p.source; });
    const bool judgeable = paste != pastes.end() && paste->Judgeable();
    for (const Diagnostic& d : p.diagnostics) {
      if (judgeable && ReadAnyway(d)) {
        ctx.err << p.source << ": note: no nccl-tests table in it; judged on its "
                << paste->nccl_lines << " NCCL lines, " << paste->hits.size()
                << " known failure lines" << (paste->trailers.empty() ? "" : " and its trailer")
                << "\n";
        continue;
      }
      ctx.err << d.ToString() << "\n";
      if (d.severity == Diagnostic::Severity::kError) in.errors = true;
    }
    for (RunResult& run : p.runs) in.runs.push_back(std::move(run));
  }
  ApplyNcclRanks(in.runs, pastes);
  for (PasteEvidence& paste : pastes) {
    // all_reduce_bench's figures are judged as rows when the input held no table of its own.
    const bool tables = std::any_of(in.runs.begin(), in.runs.end(), [&](const RunResult& r) {
      return r.source.starts_with(paste.source + ":") && !r.rows.empty();
    });
    if (!tables) {
      for (RunResult& run : RunsFromFigures(paste)) in.runs.push_back(std::move(run));
    }
    if (paste.Judgeable()) in.pastes.push_back(std::move(paste));
  }
  if (in.runs.empty() && in.pastes.empty()) {
    throw UsageError(
        "no results could be read from the inputs (see the errors above): "
        "nothing to check");
  }
  return in;
}

const OutputFormats<CheckReport>& CheckOutputFormats() {
  static const OutputFormats<CheckReport> formats = FormatsFrom<CheckReport>(
      CheckFormats(), [](const CheckFormat& format, const CheckReport& report, std::ostream& out) {
        out << format.render(report);
      });
  return formats;
}

// --dry-run: the platform the verdicts would be judged against and, with -- RUN FLAGS, the
// run's plan; exits 0 without measuring or reading anything.
int PrintCheckPlan(const PlatformChoice& choice, std::vector<std::string> run_args,
                   const CommandContext& ctx) {
  ctx.out << "# fabricscope check: dry run, nothing is judged\n"
          << "platform: "
          << (choice.platform ? choice.platform->name + " (" + choice.origin + ")"
                              : "none (" + choice.unavailable + ")")
          << "\n";
  if (!run_args.empty()) {
    run_args.emplace_back("--dry-run");
    RunBenchmark(run_args, ctx);
  }
  return kExitOk;
}

// --fabric-hosts A,B,C as a list.
std::vector<std::string> FabricHosts(const CheckFlags& flags) {
  return Split(flags.fabric_hosts, ',');
}

// --fabric DIR, read as `fabricscope fabric --from DIR` reads it (DIR/earlier too).
std::optional<fabric::FabricReport> ReadFabric(const CheckFlags& flags) {
  if (flags.fabric.empty()) {
    if (!flags.fabric_hosts.empty()) {
      throw UsageError("--fabric-hosts names the run's HCAs in the fabric: give --fabric DIR too");
    }
    return std::nullopt;
  }
  fabric::RunOptions options;
  options.from = flags.fabric;
  fabric::FabricReport report;
  try {
    report = fabric::RunFabric(options);
  } catch (const UsageError& e) {
    throw UsageError(std::string("--fabric: ") + e.what());
  }
  std::vector<std::string> missing;
  fabric::HcasOfHosts(report.fabric, FabricHosts(flags), &missing);
  if (!missing.empty()) {
    throw UsageError("--fabric-hosts names '" + missing.front() + "', which is not an HCA of " +
                     flags.fabric +
                     " (give node descriptions as iblinkinfo prints them, e.g. 'CA: NAME:')");
  }
  return report;
}

// The hosts of the tests judged: the nodes a check covered.
std::vector<std::string> HostsOf(const CheckReport& report) {
  std::vector<std::string> hosts;
  for (const TestVerdict& test : report.tests) {
    hosts.insert(hosts.end(), test.hosts.begin(), test.hosts.end());
  }
  return hosts;
}

int ExecuteCheck(const CheckFlags& flags, const CommandContext& ctx) {
  const OutputFormat<CheckReport>& format = FindFormat(CheckOutputFormats(), flags.format);
  CheckDrainFlags(flags.drain, Env::Process());
  // CLI11 hands everything after "--" to the positional list: those are the run's flags.
  const auto dashes = std::find(ctx.command_line.begin(), ctx.command_line.end(), "--");
  const bool run_mode = dashes != ctx.command_line.end();
  const std::vector<std::string> run_args =
      run_mode ? std::vector<std::string>(dashes + 1, ctx.command_line.end())
               : std::vector<std::string>{};
  const std::vector<std::string> files(
      flags.inputs.begin(), flags.inputs.end() - static_cast<std::ptrdiff_t>(std::min(
                                                     run_args.size(), flags.inputs.size())));
  if (run_mode && !files.empty()) {
    throw UsageError("give result files or '-- RUN FLAGS' to run the benchmark, not both (" +
                     files.front() + " came before --)");
  }

  CheckOptions options;
  if (flags.nodes_option->count() > 0) {
    if (flags.nodes < 1) throw UsageError("--nodes must be 1 or more");
    options.nodes = flags.nodes;
  }
  if (!flags.judge_from.empty()) options.judge_from = ParseSize(flags.judge_from, "--judge-from");
  if (flags.sharp == "yes") {
    options.sharp = true;
  } else if (flags.sharp == "no") {
    options.sharp = false;
  } else if (!flags.sharp.empty()) {
    throw UsageError("--sharp is '" + flags.sharp +
                     "': give yes (the fabric has in-network reduction, SHARP) or no");
  }
  // Read before the results or the run, so that a bad directory costs no measurement.
  std::optional<fabric::FabricReport> fabric_report = ReadFabric(flags);
  if (fabric_report) {
    options.fabric = &*fabric_report;
    options.fabric_hosts = FabricHosts(flags);
  }
  if (flags.dry_run) return PrintCheckPlan(ChoosePlatform(flags, {}), run_args, ctx);
  const std::optional<db::StoreUrl> store = StoreOf(flags.db, Env::Process());
  bool errors = false;
  std::vector<RunResult> runs;
  std::vector<PasteEvidence> pastes;
  PlatformChoice choice;
  if (run_mode) {
    choice = ChoosePlatform(flags, {});
    std::optional<RunResult> run = RunBenchmark(run_args, ctx);
    if (!run) return kExitOk;
    runs.push_back(std::move(*run));
  } else {
    // Flag errors first: a bad --platform is reported before any input is read.
    if (!flags.platform.empty() || AnyGiven(flags.generic_options))
      choice = ChoosePlatform(flags, {});
    CheckInputs in = ReadInputs(files, flags, ctx);
    errors = in.errors;
    runs = std::move(in.runs);
    pastes = std::move(in.pastes);
    if (!choice.platform) choice = ChoosePlatform(flags, runs);
  }
  const CheckReport report = Check(runs, choice, options, pastes);
  Output output(ctx.out, flags.output, "the verdicts");
  format.render(report, output.stream());
  output.Close();
  // A verdict is always decided (the figures are what they are): never 4.
  const int exit_code =
      errors ? kExitUsage : ExitCodeOf(OutcomeOf(report.status, /*undecided=*/false, flags.strict));
  // The record holds every test's findings and the pastes' diagnoses: what --drain acts on.
  const db::Record record = RecordOfCheck(report, runs, ctx.command_line);
  const int recorded = RecordResults(store, record, ctx, exit_code);
  return ApplyDrain(flags.drain, "check", record.findings, HostsOf(report), ctx, recorded);
}

}  // namespace

CommandAction SetupCheckCommand(CLI::App& app) {
  auto flags = std::make_shared<CheckFlags>();
  CheckFlags& f = *flags;
  app.add_option("results", f.inputs,
                 "result files or pasted logs (anything analyze reads, a pure NCCL log, a PyTorch "
                 "error, all_reduce_bench.py's output; - for stdin); or, after --, the flags of "
                 "fabricscope run to measure here and judge");
  const std::string names = Joined(Catalog::Builtin().Names());
  app.add_option(
         "--platform", f.platform,
         "judge against this catalog platform (or an alias): " + names +
             "; default: the platform the logs say (GPU, NICs; see the 'from:' lines), else "
             "this node's")
      ->type_name("NAME");
  f.generic_options = {
      app.add_option("--gpus-per-node", f.generic.gpus_per_node,
                     "generic platform: GPUs (ranks) per node")
          ->capture_default_str(),
      app.add_option("--intra-node-busbw", f.generic.intra_node_busbw,
                     "generic platform: GB/s a healthy single-node ring reaches"),
      app.add_option("--nics", f.generic.nics, "generic platform: GPU-fabric NICs per node"),
      app.add_option("--nic-rate", f.generic.nic_rate_gbps,
                     "generic platform: line rate of one NIC, Gb/s"),
      app.add_option("--transport", f.generic.transport,
                     "generic platform: IB, RoCE, gIB, TCPX, TCPXO, EFA or TCP")
          ->capture_default_str(),
      app.add_option("--ring-efficiency", f.generic.ring_efficiency,
                     "generic platform: fraction of line rate a healthy ring reaches")
          ->capture_default_str(),
  };
  f.latency_option = app.add_option("--latency-floor", f.latency_floor,
                                    "generic platform: 2-node small-message time, us")
                         ->check(Checked<double>([](double us) { return us > 0; },
                                                 "give a positive number of microseconds"));
  f.generic_options.push_back(f.latency_option);
  f.nodes_option = app.add_option(
      "--nodes", f.nodes,
      "node count of the results (default: their host names, else ranks / GPUs per node)");
  f.root_option =
      app.add_option("--root", f.root,
                     "detect the platform from the node tree under DIR (sys/, proc/) rather "
                     "than from the logs")
          ->type_name("DIR")
          ->capture_default_str();
  app.add_option("--judge-from", f.judge_from,
                 "judge busbw from this size up (K/M/G) instead of where the platform's band "
                 "starts (1 GB for most)")
      ->type_name("SIZE");
  app.add_option("--sharp", f.sharp,
                 "yes|no: whether the fabric has in-network reduction (InfiniBand SHARP, NCCL's "
                 "CollNet), which decides the bands across racks; default: the run's NCCL log "
                 "says, else both are named")
      ->type_name("yes|no");
  AddFormatOption(app, f.format, CheckOutputFormats());
  app.add_option("--output", f.output, "write the verdicts to FILE instead of stdout")
      ->type_name("FILE");
  app.add_option("--collective", f.collective,
                 "the collective of logs that do not name it (otherwise inferred)");
  app.add_option("--fabric", f.fabric,
                 "the InfiniBand fabric the runs crossed: a directory of saved infiniband-diags "
                 "outputs, as `fabricscope fabric --from DIR` reads it; a run below its "
                 "expectation is pointed at the link or switch on its routes that explains it")
      ->type_name("DIR");
  // One argument split here: a list option would take the result files after it too.
  app.add_option("--fabric-hosts", f.fabric_hosts,
                 "with --fabric: the run's HCAs in rank order, as the fabric names them "
                 "(default: the run's host names, matched to HCA node descriptions)")
      ->type_name("HCA,...");
  app.add_flag("--strict", f.strict, "a WARN fails too (exit 1)");
  AddDbFlag(app, f.db);
  app.add_flag("--dry-run", f.dry_run,
               "print the platform and, with -- RUN FLAGS, the run's plan; exit 0 without "
               "running or judging");
  AddDrainFlags(app, f.drain);
  app.footer(ExitCodesHelp({.clear = "OK (and WARN unless --strict)", .failed = "CRITICAL"}) +
             "\nExamples:\n"
             "  fabricscope check --platform a3-ultragpu-8g all_gather.log\n"
             "  fabricscope check --gpus-per-node 8 --intra-node-busbw 370 --nics 8 --nic-rate 400 "
             "job.log\n"
             "  fabricscope check -- --collective all_gather -b 1M -e 8G -f 2\n"
             "  fabricscope check --fabric /var/tmp/fabric job.log   # point a slow run at a link\n"
             "  kubectl logs trainer-0 | fabricscope check            # the cause of a failed job "
             "(docs/failures.md)\n"
             "  fabricscope check --drain -- -b 1G -e 8G   # a single-node test that fails "
             "drains its node (docs/slurm.md)");
  return [flags](const CommandContext& ctx) { return ExecuteCheck(*flags, ctx); };
}

}  // namespace fabricscope::cli
