// Private: NCCL's variables as data (name, effect, a lint rule where a value can hurt), and
// the lint of a node's settings against them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/node_probes.h"
#include "fabricscope/doctor.h"

namespace fabricscope::doctor {

// One variable's value and where it came from.
struct EnvSetting {
  std::string value;
  std::string source;  // "environment" or "/etc/nccl.conf:3"
};
using EnvSettings = std::map<std::string, EnvSetting>;

// What a rule looks at besides the value.
struct LintContext {
  const EnvSettings& env;
  const IbScan& ib;
  std::vector<std::string> interfaces;  // /sys/class/net
  const Root& root;
};

// Appends findings about one variable's value.
using LintRule = void (*)(const std::string& name, const EnvSetting& setting,
                          const LintContext& context, std::vector<Finding>& out);

// A variable NCCL (or a tool around it) reads.
struct NcclVariable {
  std::string_view name;
  std::string_view effect;
  LintRule rule = nullptr;         // nullptr: any value is fine
  std::string_view replaced_by{};  // for names NCCL renamed
};

// Every known variable, sorted by name.
const std::vector<NcclVariable>& NcclVariables();

// A variable as NCCL's source reads it (data/nccl/env-variables.json, generated from
// NVIDIA/nccl by scripts/gen-nccl-env.py): the releases that read it, its kind, the names a
// level accepts, where it is read at the newest release that reads it.
struct GeneratedVariable {
  std::string name;
  std::string first;  // the first release tag of the table that reads it ("v2.18.6-1")
  std::string last;   // the last
  std::string kind;   // "int64", "string", "level", ...
  std::vector<std::string> accepted;  // a level's names (LOC, NVL, NVB, C2C, PIX, ...)
  std::string file;
  int line = 0;
  std::string plugin;  // the bundled plugin that reads it; "" for NCCL itself
};

// The generated table and the newest release it was generated from.
struct GeneratedVariables {
  std::vector<GeneratedVariable> variables;  // sorted by name
  std::string newest;                        // "v2.30.7-1"
  const GeneratedVariable* Find(std::string_view name) const;
};
const GeneratedVariables& NcclSourceVariables();

// Prefixes of variables read by network plugins and tools rather than NCCL itself.
const std::vector<std::pair<std::string_view, std::string_view>>& NcclVariablePrefixes();

// The NCCL_* variables NCCL would see: /etc/nccl.conf (or NCCL_CONF_FILE) under the root,
// overridden by `environment`.
EnvSettings CollectNcclSettings(const Root& root,
                                const std::map<std::string, std::string>& environment);

// Findings for every setting: harmful values, devices that do not exist, unknown names.
std::vector<Finding> LintNcclSettings(const LintContext& context);

// The known name closest to `name` (a likely typo), or empty.
std::string ClosestVariable(std::string_view name);

}  // namespace fabricscope::doctor
