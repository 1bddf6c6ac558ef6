// The fabricscope binary: the command line on the process's standard streams.
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"

// The whole command line; main only keeps an exception from leaving the program.
static int RunMain(int argc, char** argv) {
  // A peer that dies mid-transfer must surface as an error naming it, not kill this
  // process silently: Gloo's sockets would otherwise raise SIGPIPE on the next write.
  std::signal(SIGPIPE, SIG_IGN);
  const fabricscope::cli::Terminals terminals{isatty(STDIN_FILENO) != 0, isatty(STDOUT_FILENO) != 0,
                                              isatty(STDERR_FILENO) != 0};
  return fabricscope::cli::RunCommandLine(std::vector<std::string>(argv, argv + argc), std::cout,
                                          std::cerr, terminals);
}

int main(int argc, char** argv) {
  // An exception from setting up the command line (before RunMain's own handlers) is an
  // error like any other, not std::terminate.
  try {
    return RunMain(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fabricscope: error: " << e.what() << "\n";
    return fabricscope::cli::kExitRuntime;
  }
}
