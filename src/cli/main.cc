// The fabricscope command line: subcommands, and the nccl-tests names dispatched on argv[0].
#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cli/run_command.h"
#include "fabricscope/collective.h"
#include "fabricscope/error.h"
#include "fabricscope/version.h"

namespace {

// Exit codes: 0 success, 1 wrong results (or bandwidth under NCCL_TESTS_MIN_BW),
// 2 bad usage or unsupported request, 3 a failure while running.
constexpr int kExitUsage = 2;
constexpr int kExitFailure = 3;

// What `fabricscope run` does with no arguments at all: a short local sweep that shows
// something meaningful on a laptop (nccl-tests' own defaults give one 32 MB size on 1 rank).
// Up to 4 ranks, but no more than the cores: Gloo's ranks wait on sockets, and more ranks
// than cores turn microseconds of latency into scheduler ticks.
std::vector<std::string> LocalDefault() {
  const unsigned cores = std::thread::hardware_concurrency();
  const unsigned ranks = std::clamp(cores, 2u, 4u);
  return {"-t", std::to_string(ranks), "-b", "8", "-e", "64M", "-f", "4"};
}

int Fail(int code, const std::string& prog, const std::string& message) {
  std::cerr << prog << ": error: " << message << "\n";
  return code;
}

int ExitCodeOf(const fabricscope::Error& e) {
  switch (e.code()) {
    case fabricscope::ErrorCode::kUsage:
    case fabricscope::ErrorCode::kUnsupported:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
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
  fabricscope::cli::RunFlags flags;
  CLI::App* run = &app;
  if (perf != nullptr) {
    app.description(std::string("fabricscope as nccl-tests' ") + std::string(perf->perf_binary) +
                    ": " + std::string(perf->description));
    flags.collective = std::string(perf->name);
    fabricscope::cli::AddRunFlags(app, flags, true);
  } else {
    app.require_subcommand(1);
    run = app.add_subcommand("run",
                             "the collective benchmark: nccl-tests flags and output (also "
                             "callable as all_reduce_perf, all_gather_perf, ...)");
    fabricscope::cli::AddRunFlags(*run, flags, false);
  }

  if (perf == nullptr && !args.empty() && !args[0].starts_with("-") &&
      app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == args[0]; }).empty()) {
    std::cerr << prog << ": error: unknown command '" << args[0] << "'\nRun '" << prog
              << " --help' for the commands.\n";
    return kExitUsage;
  }

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
              << "Run '" << prog << (perf ? "" : " run") << " --help' for the flags.\n";
    return kExitUsage;
  }

  std::vector<std::string> command_line{prog};
  command_line.insert(command_line.end(), args.begin(), args.end());
  if (perf == nullptr && args.size() == 1 && args[0] == "run") {
    const std::vector<std::string> local = LocalDefault();
    std::cerr << "# fabricscope run without arguments: a local all_reduce sweep over " << local[1]
              << " thread ranks through Gloo (as: fabricscope run";
    for (const auto& a : local) std::cerr << " " << a;
    std::cerr << "); give any flag for nccl-tests' defaults\n";
    std::vector<std::string> reversed(local.rbegin(), local.rend());
    reversed.push_back("run");
    flags = fabricscope::cli::RunFlags{};
    app.clear();
    app.parse(reversed);
    command_line.insert(command_line.end(), local.begin(), local.end());
  }

  try {
    return fabricscope::cli::ExecuteRun(flags, command_line);
  } catch (const fabricscope::Error& e) {
    return Fail(ExitCodeOf(e), prog, e.what());
  } catch (const std::exception& e) {
    return Fail(kExitFailure, prog, e.what());
  }
}
