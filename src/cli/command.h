// The CLI's subcommands as a registry: name -> purpose + flag setup + action.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/finding.h"

namespace fabricscope::cli {

// Which of the process's standard streams are terminals: progress lines only for someone
// watching, and no waiting for a log typed in by hand. Main asks isatty; tests say none.
struct Terminals {
  bool in = false;
  bool out = false;
  bool err = false;
};

// What an action knows about how it was called, and where it writes: every command writes
// its report to `out` (or its --output file) and its diagnostics, announcements and progress
// to `err`, never to std::cout or std::cerr itself.
struct CommandContext {
  std::string prog;                       // argv[0]'s file name
  std::vector<std::string> command_line;  // prog and every argument, as typed (or defaulted)
  std::ostream& out;                      // std::cout from main
  std::ostream& err;                      // std::cerr from main
  Terminals terminals;
};

// Runs a parsed command; returns the process exit code. May throw fabricscope::Error, which
// main converts: usage and unsupported -> 2, anything else -> 3.
using CommandAction = std::function<int(const CommandContext&)>;

// One subcommand. `setup` declares its flags on `app` (storage owned by the returned
// action) and returns what to run once the command line has been parsed.
struct Command {
  std::string_view name;
  std::string_view description;
  std::function<CommandAction(CLI::App& app)> setup;
};

// Every subcommand, in the order `--help` lists them.
const std::vector<Command>& Commands();

// The whole command line as main runs it: argv[0]'s file name picks a nccl-tests *_perf entry
// point or the subcommands of Commands(); --help, parse errors and the errors a command
// throws become text on `out`/`err` and an exit code. main passes std::cout and std::cerr,
// in-process tests string streams.
int RunCommandLine(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
                   Terminals terminals = {});

// Exit codes shared by every command: 0 success (OK), 1 a result is wrong or failed a
// threshold, 2 bad usage or unsupported request, 3 a failure while running, and for the
// diagnoses (locate, watch) 4: the evidence did not decide and nobody was named
// (docs/output.md, "Diagnoses: one exit rule").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitRuntime = 3;
inline constexpr int kExitInconclusive = 4;

// A diagnosis's outcome (fabricscope/finding.h's one rule) as its exit code: 0, 1 or 4.
inline int ExitCodeOf(Outcome outcome) {
  constexpr int kCodes[] = {kExitOk, kExitFailed, kExitInconclusive};  // Outcome's order
  return kCodes[static_cast<int>(outcome)];
}

}  // namespace fabricscope::cli
