#include "cli/drain_flags.h"

#include <algorithm>

#include "fabricscope/drain.h"
#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/tool_run.h"

namespace fabricscope::cli {
namespace {

// The service --drain or --resume names; "" when neither was given.
// What CLI11 stores for a flag given without a value: a bare --drain, which is Slurm.
constexpr std::string_view kBareFlag = "true";

std::string ModeOf(const DrainFlags& flags) {
  if (flags.drain == kBareFlag) return "slurm";
  if (!flags.drain.empty()) return flags.drain;
  return flags.resume ? "slurm" : "";
}

// What to give instead of a service whose program is missing.
std::string Instead(std::string_view mode) {
  if (mode == "slurm") {
    return "--drain acts on Slurm nodes (give --drain=dry-run to see the lines, "
           "--drain=kubernetes for a Kubernetes node)";
  }
  return "--drain=kubernetes acts on Kubernetes nodes through kubectl (give --drain=dry-run "
         "to see the scontrol lines, --drain for Slurm)";
}

}  // namespace

void AddDrainFlags(CLI::App& app, DrainFlags& flags) {
  // A flag, not an option with an optional value: `check --drain job.log` must read job.log
  // as a result file, not as a MODE (CLI11 flags take a value only as --drain=MODE).
  app.add_flag("--drain", flags.drain,
               "take the nodes a CRITICAL finding blames (a node's or its NIC's) out of "
               "service, after the report; --drain=MODE: " +
                   NamesOf(NodeServices()) +
                   " (a bare --drain is slurm: scontrol update State=DRAIN); links, switches "
                   "and node sets are never drained; a node drained by someone else is left "
                   "alone (docs/slurm.md)")
      ->check(CLI::Validator(
          [](std::string& mode) -> std::string {
            if (mode == kBareFlag) return "";
            try {
              FindNodeService(mode);
            } catch (const UsageError& e) {
              return e.what();
            }
            return "";
          },
          "", ""));
  app.add_flag("--resume", flags.resume,
               "return the nodes this run covered and cleared that this command drained "
               "earlier (State=RESUME); a node drained by someone else or by another command is "
               "never touched; the service is --drain's MODE, else slurm");
}

void CheckDrainFlags(const DrainFlags& flags, const Env& env) {
  const std::string mode = ModeOf(flags);
  if (mode.empty()) return;
  const NodeServiceEntry& entry = FindNodeService(mode);
  if (entry.tool.empty() || !FindOnPath(entry.tool, env).empty()) return;
  throw UsageError(std::string(flags.drain.empty() ? "--resume" : "--drain") + ": " +
                   std::string(entry.tool) + " not found: " + Instead(mode));
}

int ApplyDrain(const DrainFlags& flags, std::string_view command,
               const std::vector<Finding>& findings, const std::vector<std::string>& covered_hosts,
               const CommandContext& ctx, int exit_code) {
  const std::string mode = ModeOf(flags);
  if (mode.empty()) return exit_code;
  const auto service = FindNodeService(mode).make({});
  const std::vector<ServiceRecord> records =
      ApplyService(*service, {.command = std::string(command),
                              .findings = findings,
                              .covered_hosts = covered_hosts,
                              .drain = !flags.drain.empty(),
                              .resume = flags.resume});
  for (const ServiceRecord& r : records) ctx.err << ServiceRecordLine(r) << "\n";
  const bool failed = std::any_of(records.begin(), records.end(), [](const ServiceRecord& r) {
    return r.action == ServiceAction::kFailed;
  });
  return failed && exit_code == kExitOk ? kExitRuntime : exit_code;
}

}  // namespace fabricscope::cli
