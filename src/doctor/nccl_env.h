// Private: NCCL's variables as data (name, effect, a lint rule where a value can hurt), and
// the lint of a node's settings against them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/node_probes.h"
#include "fabricscope/doctor.h"
#include "fabricscope/platform.h"

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
  const Platform* platform;  // --platform or detected; nullptr: unknown
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
  // gen-plugin-env.py's tables: "reads", "sets" (for libfabric or NCCL), "exported" (by a
  // profile script the repository ships); a parameter the source marks "deprecated" or
  // "removed", with its message.
  std::vector<std::string> access;
  std::string status;
  std::string message;
  bool Reads() const;
};

// The generated table of one source and the newest tag it was generated from.
struct GeneratedVariables {
  std::string source;      // "nccl", "rccl", "tcpx", "tcpxo", "aws-ofi-nccl", "rocr"
  std::string repository;  // "NVIDIA/nccl"
  std::vector<GeneratedVariable> variables;  // sorted by name
  std::string newest;                        // "v2.30.7-1"
  std::string oldest;                        // "v2.18.6-1"
  const GeneratedVariable* Find(std::string_view name) const;
};
const GeneratedVariables& NcclSourceVariables();
// The table of `source` (data/nccl/<source>-variables.json); throws for an unknown source.
const GeneratedVariables& SourceVariables(std::string_view source);

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

// Edit distance, for suggesting the variable a typo meant; a typo is at most kTypoEdits edits
// (a letter dropped, doubled, swapped or wrong).
size_t Distance(std::string_view a, std::string_view b);
inline constexpr size_t kTypoEdits = 2;

// The prefixes of the names collected and linted: NCCL_, and the families of NCCL's
// neighbours (RCCL_, HSA_, OFI_NCCL_, FI_) (src/doctor/plugin_env.cc).
const std::vector<std::string_view>& LintedPrefixes();

// Findings for a name of a neighbour's family (NCCL_GPUDIRECTTCPX_*, NCCL_FASTRAK_*,
// OFI_NCCL_*, FI_*, RCCL_*, HSA_*) against its generated tables; false for other names.
bool LintFamilyVariable(const std::string& name, const EnvSetting& setting,
                        const LintContext& context, std::vector<Finding>& out);
// On an AMD platform: an NCCL_* name NCCL reads that RCCL does not (a finding); false
// otherwise.
bool RcclDrops(const std::string& name, const EnvSetting& setting, const LintContext& context,
               std::vector<Finding>& out);
// An NCCL_* name NCCL does not read but RCCL or a network plugin does; false when none does.
bool ReadByOthers(const std::string& name, const EnvSetting& setting, const LintContext& context,
                  std::vector<Finding>& out);

}  // namespace fabricscope::doctor
