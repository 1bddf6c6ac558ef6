#include "cli/doctor_command.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/db_flags.h"
#include "cli/drain_flags.h"
#include "cli/flags.h"
#include "cli/output.h"
#include "cli/records.h"
#include "fabricscope/doctor.h"
#include "fabricscope/error.h"
#include "fabricscope/finding.h"
#include "fabricscope/launch.h"

namespace fabricscope::cli {
namespace {

// The flags as typed.
struct DoctorFlags {
  std::string root = "/";
  std::string nccl_log;
  std::string topo_file;
  std::string platform;
  bool env = true;
  std::vector<std::string> checks;
  bool list = false;
  std::string format = "text";
  std::string output;
  bool strict = false;
  bool verbose = false;
  std::string launcher = "auto";
  double timeout = 60;
  DbFlags db;
  DrainFlags drain;
};

// The variables doctor lints: NCCL's, and those of RCCL, the network plugins and ROCm.
std::map<std::string, std::string> NcclEnvironment(const Env& env) {
  std::map<std::string, std::string> out;
  for (const char* family : {"NCCL_*", "RCCL_*", "HSA_*", "OFI_NCCL_*", "FI_*"}) {
    for (auto& [name, value] : env.Family(family)) out.emplace(std::move(name), std::move(value));
  }
  return out;
}

int ListChecks(std::ostream& out) {
  size_t width = 0;
  for (const auto& c : doctor::ListChecks()) width = std::max(width, c.name.size());
  for (const auto& c : doctor::ListChecks()) {
    out << c.name << std::string(width + 2 - c.name.size(), ' ') << c.description << "\n";
  }
  return kExitOk;
}

// What doctor hands its format: the cluster's report, and how much of it to show.
struct DoctorRecord {
  const doctor::ClusterReport& report;
  doctor::ReportStyle style;
};

const OutputFormats<DoctorRecord>& DoctorFormats() {
  static const OutputFormats<DoctorRecord> formats = FormatsFrom<DoctorRecord>(
      doctor::DoctorReporters(),
      [](const doctor::DoctorReporterEntry& entry, const DoctorRecord& record, std::ostream& out) {
        entry.make(out, record.style)->Write(record.report);
      });
  return formats;
}

int ExecuteDoctor(const DoctorFlags& flags, const CommandContext& ctx) {
  if (flags.list) return ListChecks(ctx.out);
  if (flags.timeout <= 0) {
    throw UsageError("--timeout must be a positive number of seconds (got " +
                     std::to_string(flags.timeout) + ")");
  }
  const Env env = Env::Process();
  const std::optional<db::StoreUrl> store = StoreOf(flags.db, env);
  const LaunchInfo launch = DetectLaunch(env, flags.launcher);
  AnnounceLaunch(launch, ctx.err);
  // Refuse a bad --format before any work, and on every process alike.
  const OutputFormat<DoctorRecord>& format = FindFormat(DoctorFormats(), flags.format);
  CheckDrainFlags(flags.drain, env);

  doctor::DoctorOptions options;
  options.root = flags.root;
  options.nccl_log = flags.nccl_log;
  options.topo_file = flags.topo_file;
  options.platform = flags.platform;
  options.lint_env = flags.env;
  if (flags.env) options.env = NcclEnvironment(env);
  options.checks = flags.checks;
  options.rank = launch.process_rank;
  const doctor::NodeReport mine = doctor::RunDoctor(options);

  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.timeout * 1000));
  const doctor::ClusterReport cluster = doctor::GatherReports(mine, launch, timeout);
  // Every process answers for what it reports: rank 0 for the cluster, the others for their node.
  const Severity worst = launch.process_rank == 0 ? cluster.severity() : mine.severity();
  // Every finding is decided: the doctor reads files, it does not measure.
  const int exit_code = ExitCodeOf(OutcomeOf(worst, /*undecided=*/false, flags.strict));
  if (launch.process_rank != 0) return exit_code;
  Output output(ctx.out, flags.output);
  format.render({cluster, {flags.verbose}}, output.stream());
  output.Close();
  // Rank 0 alone records and acts, once, on the whole cluster's findings.
  // The record holds every finding (the drift's too) and every node: what --drain acts on.
  const db::Record record = RecordOfDoctor(cluster, ctx.command_line);
  const int recorded = RecordResults(store, record, ctx, exit_code);
  return ApplyDrain(flags.drain, "doctor", record.findings, record.hosts, ctx, recorded);
}

}  // namespace

CommandAction SetupDoctorCommand(CLI::App& app) {
  auto flags = std::make_shared<DoctorFlags>();
  app.add_option("--root", flags->root,
                 "read every file under this directory instead of / (a copied node tree)")
      ->capture_default_str();
  app.add_option("--nccl-log", flags->nccl_log,
                 "a log written with NCCL_DEBUG=INFO: the transport NCCL chose per connection");
  app.add_option("--topo-file", flags->topo_file,
                 "`nvidia-smi topo -m` output or an NCCL topology XML, for GPU-NIC affinity "
                 "(default: NCCL_TOPO_FILE when set)");
  app.add_option("--platform", flags->platform,
                 "the catalog platform this node is (name or alias, see fabricscope check "
                 "--help): its NIC rate is what the GPU-fabric ports must run at (default: "
                 "detected from the node's DMI name and GPUs, as check does)")
      ->type_name("NAME");
  app.add_flag("--env,!--no-env", flags->env,
               "lint the NCCL_* variables of this environment and /etc/nccl.conf (default on)");
  app.add_option("--check", flags->checks,
                 "run only these checks (names or prefixes, comma-separated; see --list)")
      ->delimiter(',');
  app.add_flag("--list", flags->list, "list the checks and exit");
  AddFormatOption(app, flags->format, DoctorFormats());
  app.add_option("--output", flags->output, "write the report to this file instead of stdout");
  app.add_flag("--strict", flags->strict, "exit 1 on WARN too (default: only on CRITICAL)");
  AddDbFlag(app, flags->db);
  app.add_flag("-v,--verbose", flags->verbose,
               "every finding of every node, and the evidence of OK and INFO findings too");
  app.add_option("--launcher", flags->launcher,
                 "auto, single, mpi or env: under mpi/env every node's report goes to rank 0, "
                 "which points out the nodes that differ from the majority")
      ->capture_default_str();
  app.add_option("--timeout", flags->timeout, "seconds rank 0 waits for the other nodes' reports")
      ->capture_default_str();
  AddDrainFlags(app, flags->drain);
  app.footer(ExitCodesHelp({.clear = "every finding OK, INFO or WARN",
                            .failed = "a CRITICAL finding or drift (or a WARN with --strict)"}) +
             " INFO: a check that does not apply here or could not read what it needs, and "
             "says why.\n--drain: the nodes of CRITICAL findings of their own checks (or their "
             "NICs', or drift's outliers) are drained as 'fabricscope doctor: CHECK: ...'; "
             "--resume returns the nodes that passed (docs/slurm.md: doctor as Slurm's "
             "HealthCheckProgram).");
  return [flags](const CommandContext& ctx) { return ExecuteDoctor(*flags, ctx); };
}

}  // namespace fabricscope::cli
