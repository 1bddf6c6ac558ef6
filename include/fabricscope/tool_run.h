// Running an outside program (infiniband-diags, scontrol, kubectl): found on PATH, no shell,
// stdin from /dev/null, both outputs captured, killed with its process group after a timeout.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/env.h"

namespace fabricscope {

// How one run ended and what it wrote.
struct ToolRun {
  bool started = false;    // false: not found on PATH, or it could not be spawned
  bool timed_out = false;  // killed after the timeout
  int exit_code = -1;      // 128 + signal when a signal ended it
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] looked up on PATH as execvp does) and waits for it, at most
// `timeout_seconds`; then kills it and its process group.
ToolRun RunTool(const std::vector<std::string>& argv, double timeout_seconds);

// The file `name` is found as on `env`'s PATH (as execvp looks it up: the first executable
// file of that name); "" when there is none. A name with a '/' is itself, when executable.
std::string FindOnPath(std::string_view name, const Env& env);

// `argv` as one line a person can paste into a shell: words with spaces, quotes or shell
// characters are single-quoted.
std::string CommandLineOf(const std::vector<std::string>& argv);

}  // namespace fabricscope
