// The command line: subcommands from the registry, and the nccl-tests names dispatched on
// argv[0]; every output goes to the streams it is given.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/run_command.h"
#include "fabricscope/collective.h"
#include "fabricscope/error.h"
#include "fabricscope/version.h"

namespace fabricscope::cli {
namespace {

int ExitCodeOf(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kUsage:
    case ErrorCode::kUnsupported:
      return kExitUsage;
    default:
      return kExitRuntime;
  }
}

// Called as all_reduce_perf & co: that collective's spec; else nullptr.
const CollectiveSpec* PerfSpecOf(const std::string& prog) {
  for (const auto& spec : Collectives()) {
    if (spec.perf_binary == prog) return &spec;
  }
  return nullptr;
}

}  // namespace

int RunCommandLine(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
                   Terminals terminals) {
  const std::string prog =
      argv.empty() ? "fabricscope" : std::filesystem::path(argv[0]).filename().string();
  std::vector<std::string> args(argv.empty() ? argv.end() : argv.begin() + 1, argv.end());

  // Called as all_reduce_perf & co: the run command with that collective, nccl-tests style.
  const CollectiveSpec* perf = PerfSpecOf(prog);
  CLI::App app{"fabricscope: benchmark, validate and diagnose GPU-cluster networks", prog};
  app.set_version_flag("--version", std::string("fabricscope ") + kVersion);
  std::map<const CLI::App*, CommandAction> actions;
  if (perf != nullptr) {
    app.description(std::string("fabricscope as nccl-tests' ") + std::string(perf->perf_binary) +
                    ": " + std::string(perf->description));
    actions[&app] = SetupPerfCommand(app, std::string(perf->name));
  } else {
    app.require_subcommand(1);
    for (const auto& command : Commands()) {
      CLI::App* sub =
          app.add_subcommand(std::string(command.name), std::string(command.description));
      actions[sub] = command.setup(*sub);
    }
    if (!args.empty() && !args[0].starts_with("-") &&
        app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == args[0]; }).empty()) {
      err << prog << ": error: unknown command '" << args[0] << "'\nRun '" << prog
          << " --help' for the commands.\n";
      return kExitUsage;
    }
    if (args.size() == 1 && args[0] == "run") {
      const std::vector<std::string> local = LocalDefaultArgs();
      err << "# fabricscope run without arguments: a local all_reduce sweep over " << local[1]
          << " thread ranks through Gloo (as: fabricscope run";
      for (const auto& a : local) err << " " << a;
      err << "); give any flag for nccl-tests' defaults\n";
      args.insert(args.end(), local.begin(), local.end());
    }
  }

  const std::string help_hint =
      perf != nullptr ? prog
                      : (args.empty() || args[0].starts_with("-") ? prog : prog + " " + args[0]);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << prog << ": error: " << e.what() << "\n"
        << "Run '" << help_hint << " --help' for the flags.\n";
    return kExitUsage;
  }

  const CLI::App* chosen = &app;
  if (perf == nullptr) chosen = app.get_subcommands().front();
  CommandContext context{prog, {prog}, out, err, terminals};
  context.command_line.insert(context.command_line.end(), args.begin(), args.end());
  try {
    return actions.at(chosen)(context);
  } catch (const Error& e) {
    err << prog << ": error: " << e.what() << "\n";
    return ExitCodeOf(e);
  } catch (const std::exception& e) {
    err << prog << ": error: " << e.what() << "\n";
    return kExitRuntime;
  }
}

}  // namespace fabricscope::cli
