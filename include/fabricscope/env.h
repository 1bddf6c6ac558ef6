// The environment variables fabricscope reads: one registry of them (docs/env.md is checked
// against it), and Env, the one class that reads the process environment. Everything else is
// handed an Env, so a test passes a fake environment instead of calling setenv.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fabricscope {

// One variable fabricscope reads, or a family of them it reads by name pattern.
struct EnvVariable {
  std::string_view name;           // "MASTER_PORT"; a family ends in '*': "NCCL_*"
  std::string_view default_value;  // what applies when it is unset, as docs/env.md says it
  std::string_view meaning;
  std::string_view read_by;  // the commands (and the profiler plugin) that read it
};

// Every variable and family, in docs/env.md's order.
std::span<const EnvVariable> EnvVariables();

// The registry entry named exactly `name` ("NCCL_*" for a family); null when there is none.
const EnvVariable* FindEnvVariable(std::string_view name);

// Whether processes of one job that differ in variable `name` run a different benchmark: false
// for what only logs, dumps, profiles or names a local interface (NCCL_DEBUG*, NCCL_*_DUMP_FILE,
// NCCL_PROFILER_PLUGIN, NCCL_INSPECTOR_*, NCCL_RAS_*, NCCL_SOCKET_IFNAME and GLOO's, whose
// interface names differ between hosts of one job), true for everything else. Used where the
// ranks of a job are compared (run's rendezvous, doctor's drift).
bool VariableShapesRun(std::string_view name);

// A read-only set of environment variables: the process's, copied once by Process(), or given
// (tests, a fake environment). Copies share the variables. Reads are checked against the
// registry: a name it does not list is a programming error (std::logic_error), so the table
// cannot miss a variable the program reads.
class Env {
 public:
  using Variables = std::map<std::string, std::string>;

  Env();  // nothing set
  explicit Env(Variables variables);

  // The process environment, as it is now: the only place that reads it.
  static Env Process();

  // The value of a registered variable; nullopt when it is unset.
  std::optional<std::string> Get(std::string_view name) const;
  // Every set variable of a registered family (Family("NCCL_*")), as (name, value) in name
  // order.
  std::vector<std::pair<std::string, std::string>> Family(std::string_view family) const;

 private:
  std::shared_ptr<const Variables> variables_;
};

}  // namespace fabricscope
