#include "doctor/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

extern char** environ;

namespace fabricscope::doctor::testing {

std::string Slurp(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Child Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::filesystem::path& dir, const std::string& tag) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool drop = false;
    for (std::string_view prefix :
         {"NCCL_", "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "MASTER_", "OMPI_", "PMI_", "SLURM_"}) {
      drop = drop || entry.starts_with(prefix);
    }
    if (!drop) env_strings.emplace_back(entry);
  }
  for (const auto& [key, value] : env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);

  Child c;
  c.out = dir / (tag + ".out");
  c.err = dir / (tag + ".err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&c.pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot start " << argv[0];
  return c;
}

Outcome Wait(Child& child, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  Outcome o;
  while (child.pid > 0) {
    int status = 0;
    if (::waitpid(child.pid, &status, WNOHANG) == child.pid) {
      child.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "process " << child.pid << " still running after " << limit.count() << " s";
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, nullptr, 0);
      child.exit_code = 137;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  o.exit_code = child.exit_code;
  o.out = Slurp(child.out);
  o.err = Slurp(child.err);
  return o;
}

Outcome RunFabricscope(const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& env,
                       const std::filesystem::path& dir) {
  std::vector<std::string> argv = {FABRICSCOPE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c = Spawn(argv, env, dir, "run");
  return Wait(c);
}

}  // namespace fabricscope::doctor::testing
