#include "cli/fabric_command.h"

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/db_flags.h"
#include "cli/flags.h"
#include "cli/output.h"
#include "cli/records.h"
#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/finding.h"
#include "fabricscope/joined.h"

namespace fabricscope::cli {
namespace {

// The flags as typed.
struct FabricFlags {
  fabric::RunOptions run;
  std::string expect;
  std::string format = "text";
  std::string output;
  bool verbose = false;
  bool strict = false;
  DbFlags db;
};

// What fabric hands its format: the report, and whether to list every destination.
struct FabricRecord {
  const fabric::FabricReport& report;
  bool verbose = false;
};

const OutputFormats<FabricRecord>& FabricFormats() {
  static const OutputFormats<FabricRecord> formats = FormatsFrom<FabricRecord>(
      fabric::FabricReporters(),
      [](const fabric::FabricReporter& entry, const FabricRecord& record, std::ostream& out) {
        out << entry.write(record.report, record.verbose);
      });
  return formats;
}

int ExecuteFabric(FabricFlags flags, const CommandContext& ctx) {
  const OutputFormat<FabricRecord>& format = FindFormat(FabricFormats(), flags.format);
  if (!flags.expect.empty())
    flags.run.analyze.findings.expect = fabric::ParseLinkRate(flags.expect);
  if (!(flags.run.collect.timeout_seconds > 0 && flags.run.collect.timeout_seconds <= 3600)) {
    throw UsageError("--tool-timeout must be a number of seconds from 0 to 3600");
  }
  if (!(flags.run.interval_seconds >= 0 && flags.run.interval_seconds <= 86400)) {
    throw UsageError("--interval must be a number of seconds from 0 to 86400");
  }
  const std::optional<db::StoreUrl> store = StoreOf(flags.db, Env::Process());
  const fabric::FabricReport report = fabric::RunFabric(flags.run);
  Output output(ctx.out, flags.output);
  format.render({report, flags.verbose}, output.stream());
  output.Close();
  // Every fabric finding is decided (the tools' outputs say what they say): never 4.
  const int code = ExitCodeOf(OutcomeOf(report.findings, flags.strict));
  return RecordResults(store, RecordOfFabric(report, ctx.command_line), ctx, code);
}

}  // namespace

CommandAction SetupFabricCommand(CLI::App& app) {
  auto flags = std::make_shared<FabricFlags>();
  app.add_option("--from", flags->run.from,
                 "read saved outputs from this directory instead of running the tools: one file "
                 "per tool (" +
                     Joined(fabric::ToolNames(),
                            [](const std::string& t) {
                              return t.find('.') == std::string::npos ? t + ".txt" : t;
                            }) +
                     "), and DIR/earlier/ for counter growth");
  app.add_option("--save", flags->run.save,
                 "also write the tools' outputs to this directory, for a later --from or "
                 "--baseline");
  app.add_option("--baseline", flags->run.baseline,
                 "a saved read of the healthy fabric: a port up there and down now is a cabled "
                 "link down");
  app.add_option("--expect", flags->expect,
                 "the rate every link should run at, e.g. 4xNDR (default: the fabric's majority)");
  app.add_option("--hosts", flags->run.analyze.findings.hosts,
                 "the job's hosts in rank order (HCA node descriptions, comma-separated): each "
                 "must be in the fabric, and the collective loads use this ring order (default: "
                 "every HCA in name order)")
      ->delimiter(',');
  app.add_option("--path", flags->run.path,
                 "two hosts (A,B): the route A takes to B through the forwarding tables, and as "
                 "ibtracert sees it (live; with --from: FROM/ibtracert.txt)")
      ->delimiter(',');
  app.add_option("--interval", flags->run.interval_seconds,
                 "read the error counters twice, this many seconds apart, and report growth");
  app.add_option("--sm-log", flags->run.collect.sm_log,
                 "the subnet manager's log (e.g. /var/log/opensm.log), for its routing engine");
  app.add_option("--tool-timeout", flags->run.collect.timeout_seconds,
                 "seconds each infiniband-diags tool may take")
      ->capture_default_str();
  AddFormatOption(app, flags->format, FabricFormats());
  app.add_option("--output", flags->output, "write the report to this file instead of stdout");
  app.add_flag("-v,--verbose", flags->verbose, "also list destinations per switch out-port");
  app.add_flag("--strict", flags->strict, "exit 1 on WARN too (default: only on CRITICAL)");
  AddDbFlag(app, flags->db);
  app.footer(
      "Runs ibnetdiscover, iblinkinfo, ibqueryerrors, dump_fts and sminfo from PATH (no shell, "
      "each with --tool-timeout), or reads their saved outputs (--from).\n" +
      ExitCodesHelp({.clear = "no CRITICAL finding",
                     .failed = "a CRITICAL finding (or a WARN with --strict)",
                     .runtime = "the fabric could not be read"}));
  return [flags](const CommandContext& ctx) { return ExecuteFabric(*flags, ctx); };
}

}  // namespace fabricscope::cli
