// Runs the real fabricscope binary (or mpirun) as a child process, without a shell: chosen
// arguments and environment, output captured in files, never waiting past a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace fabricscope::doctor::testing {

// A started process and where its output goes.
struct Child {
  pid_t pid = -1;
  int exit_code = -1;
  std::filesystem::path out, err;
};

// What a finished process left.
struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

// Starts `argv` with this process's environment minus every NCCL_*, RANK, WORLD_SIZE,
// MASTER_* and OMPI_* variable, plus `env`. Output goes to `dir`/<tag>.out and .err.
Child Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::filesystem::path& dir, const std::string& tag);

// Waits for `child`; kills it and fails the test after `limit`.
Outcome Wait(Child& child, std::chrono::seconds limit = std::chrono::seconds(60));

// Spawn + Wait of the fabricscope binary with `args`.
Outcome RunFabricscope(const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& env,
                       const std::filesystem::path& dir);

std::string Slurp(const std::filesystem::path& file);

}  // namespace fabricscope::doctor::testing
