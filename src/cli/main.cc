// The fabricscope command line: subcommands from the registry, and the nccl-tests names
// dispatched on argv[0].
#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/run_command.h"
#include "fabricscope/collective.h"
#include "fabricscope/error.h"
#include "fabricscope/version.h"

namespace {

using fabricscope::cli::kExitRuntime;
using fabricscope::cli::kExitUsage;

int ExitCodeOf(const fabricscope::Error& e) {
  switch (e.code()) {
    case fabricscope::ErrorCode::kUsage:
    case fabricscope::ErrorCode::kUnsupported:
      return kExitUsage;
    default:
      return kExitRuntime;
  }
}

}  // namespace

// The whole command line; main only keeps an exception from leaving the program.
static int RunMain(int argc, char** argv) {
  // A peer that dies mid-transfer must surface as an error naming it, not kill this
  // process silently: Gloo's sockets would otherwise raise SIGPIPE on the next write.
  std::signal(SIGPIPE, SIG_IGN);
  const std::string prog = std::filesystem::path(argv[0]).filename().string();
  std::vector<std::string> args(argv + 1, argv + argc);

  // Called as all_reduce_perf & co: the run command with that collective, nccl-tests style.
  const fabricscope::CollectiveSpec* perf = nullptr;
  for (const auto& spec : fabricscope::Collectives()) {
    if (spec.perf_binary == prog) perf = &spec;
  }

  CLI::App app{"fabricscope: benchmark, validate and diagnose GPU-cluster networks", prog};
  app.set_version_flag("--version", std::string("fabricscope ") + fabricscope::kVersion);
  std::map<const CLI::App*, fabricscope::cli::CommandAction> actions;
  if (perf != nullptr) {
    app.description(std::string("fabricscope as nccl-tests' ") + std::string(perf->perf_binary) +
                    ": " + std::string(perf->description));
    actions[&app] = fabricscope::cli::SetupPerfCommand(app, std::string(perf->name));
  } else {
    app.require_subcommand(1);
    for (const auto& command : fabricscope::cli::Commands()) {
      CLI::App* sub =
          app.add_subcommand(std::string(command.name), std::string(command.description));
      actions[sub] = command.setup(*sub);
    }
    if (!args.empty() && !args[0].starts_with("-") &&
        app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == args[0]; }).empty()) {
      std::cerr << prog << ": error: unknown command '" << args[0] << "'\nRun '" << prog
                << " --help' for the commands.\n";
      return kExitUsage;
    }
    if (args.size() == 1 && args[0] == "run") {
      const std::vector<std::string> local = fabricscope::cli::LocalDefaultArgs();
      std::cerr << "# fabricscope run without arguments: a local all_reduce sweep over " << local[1]
                << " thread ranks through Gloo (as: fabricscope run";
      for (const auto& a : local) std::cerr << " " << a;
      std::cerr << "); give any flag for nccl-tests' defaults\n";
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
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << prog << ": error: " << e.what() << "\n"
              << "Run '" << help_hint << " --help' for the flags.\n";
    return kExitUsage;
  }

  const CLI::App* chosen = &app;
  if (perf == nullptr) chosen = app.get_subcommands().front();
  fabricscope::cli::CommandContext context{prog, {prog}};
  context.command_line.insert(context.command_line.end(), args.begin(), args.end());
  try {
    return actions.at(chosen)(context);
  } catch (const fabricscope::Error& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return ExitCodeOf(e);
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return kExitRuntime;
  }
}

int main(int argc, char** argv) {
  // An exception from setting up the command line (before RunMain's own handlers) is an
  // error like any other, not std::terminate.
  try {
    return RunMain(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fabricscope: error: " << e.what() << "\n";
    return kExitRuntime;
  }
}
