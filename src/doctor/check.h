// Private: the check interface, what every check sees of the node, and the registry.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/nccl_env.h"
#include "doctor/nccl_log.h"
#include "doctor/node_probes.h"
#include "fabricscope/doctor.h"
#include "fabricscope/platform.h"

namespace fabricscope::doctor {

// What the checks read, gathered once per node: the probes of shared facts (PCI, RDMA) run
// before any check so that each is read once and every check sees the same snapshot.
struct NodeContext {
  const Root& root;
  const DoctorOptions& options;
  PciScan pci;
  IbScan ib;
  EnvSettings env;                       // NCCL variables: environment over /etc/nccl.conf
  std::optional<NcclLog> nccl_log;       // --nccl-log
  std::optional<PciTopology> topo_file;  // --topo-file, else NCCL_TOPO_FILE
  std::string topo_file_problem;         // NCCL_TOPO_FILE set but unusable
  std::optional<Platform> platform{};    // --platform, else detected; empty: unknown
  std::string platform_from{};           // "--platform", "detected: DMI product name ..."
};

// A finding of a check; RunDoctor fills in `source` (the check's name) afterwards.
Finding MakeFinding(Severity severity, std::string what, std::vector<std::string> evidence = {},
                    std::string fix = "");

// A check's findings and the facts it contributes to drift detection.
class CheckOutput {
 public:
  // The finding added, for the callers that also say `where` it points.
  Finding& Add(Severity severity, std::string what, std::vector<std::string> evidence = {},
               std::string fix = "");
  void Fact(const std::string& key, const std::string& value) { facts_[key] = value; }

  std::vector<Finding>& findings() { return findings_; }
  std::map<std::string, std::string>& facts() { return facts_; }

 private:
  std::vector<Finding> findings_;
  std::map<std::string, std::string> facts_;
};

// One diagnosis. SkipReason is nvbandwidth's filter(): why the check cannot run on this
// node (no GPU, no RDMA device, no log given), reported as an INFO finding; Run does the work.
class Check {
 public:
  virtual ~Check() = default;
  virtual std::optional<std::string> SkipReason(const NodeContext& node) const = 0;
  virtual void Run(const NodeContext& node, CheckOutput& out) const = 0;
};

// A registry entry: name -> description + factory.
struct CheckEntry {
  std::string_view name;
  std::string_view description;
  std::function<std::unique_ptr<Check>()> make;
};

// Every check, in report order.
const std::vector<CheckEntry>& CheckRegistry();

// The factories, one per source file of checks.
std::unique_ptr<Check> MakePciCheck();
std::unique_ptr<Check> MakeNumaCheck();
std::unique_ptr<Check> MakeAffinityCheck();
std::unique_ptr<Check> MakeTopoFileCheck();
std::unique_ptr<Check> MakeGpuDirectCheck();
std::unique_ptr<Check> MakeIbPortsCheck();
std::unique_ptr<Check> MakeMtuCheck();
std::unique_ptr<Check> MakeShmCheck();
std::unique_ptr<Check> MakeMemlockCheck();
std::unique_ptr<Check> MakeNcclEnvCheck();
std::unique_ptr<Check> MakeNcclLogCheck();

// Human-readable byte counts: "64 MiB", "1.5 GiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace fabricscope::doctor
