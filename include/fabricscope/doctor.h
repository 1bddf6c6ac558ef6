// `fabricscope doctor`: node configuration checks, their findings, and drift across nodes.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/finding.h"
#include "fabricscope/launch.h"

namespace fabricscope::doctor {

// The outcome of one check: at least one finding, each with the check's name as its
// `source`. A check that cannot run here (no GPU, no RDMA device, no log given) ends in one
// INFO finding that says why.
struct CheckResult {
  std::string name;
  std::string description;
  std::vector<Finding> findings;
  Severity severity() const;  // the worst finding
};

// Everything the doctor found on one node, plus the facts compared across nodes.
struct NodeReport {
  int rank = 0;
  std::string host;
  std::string root;
  std::vector<CheckResult> checks;
  // Configuration values that should agree across the nodes of a cluster (driver, port
  // rates, MTU, NCCL variables, ...): the input of FindDrift.
  std::map<std::string, std::string> facts;
  Severity severity() const;  // CRITICAL, WARN, or OK (INFO findings count as OK)
};

// One node's value of a drifted fact.
struct NodeValue {
  int rank = 0;
  std::string host;
  std::string value;  // "(absent)" when the node does not have the fact at all
};

// A fact on which some nodes differ from the majority. The record keeps the majority and
// every outlier's value for programs; DriftFinding says the same as a finding.
struct Drift {
  std::string key;
  Severity severity = Severity::kWarn;
  std::string majority;  // the majority value; empty when no value has a majority
  int majority_count = 0;
  int node_count = 0;
  std::vector<NodeValue> outliers;  // the nodes that differ (every node when no majority)
};

// The reports of all nodes of a job (one node without a launcher) and their drift.
struct ClusterReport {
  std::vector<NodeReport> nodes;
  std::vector<Drift> drift;
  Severity severity() const;  // worst of every node and every drift (OK, WARN, CRITICAL)
};

// What to inspect and how.
struct DoctorOptions {
  std::string root = "/";  // every probe reads under this directory
  std::string nccl_log;    // a log written with NCCL_DEBUG=INFO; empty: no log check
  std::string topo_file;   // `nvidia-smi topo -m` output or NCCL topology XML; empty: none
  bool lint_env = true;    // lint `env` (and the root's /etc/nccl.conf)
  std::map<std::string, std::string> env;  // the NCCL_* variables to lint
  std::vector<std::string> checks;         // check names or prefixes to run; empty: all
  int rank = 0;                            // this node's place in a job, for the report
  // The catalog platform this node is (name or alias, --platform); empty: detected from the
  // node (DMI, GPUs), as check does. Its NIC rate is what the GPU-fabric ports should run.
  std::string platform;
};

// A check as the registry lists it.
struct CheckInfo {
  std::string_view name;
  std::string_view description;
};

// Every check, in the order they run and are reported.
std::vector<CheckInfo> ListChecks();

// Runs the selected checks on one node. Throws UsageError for a root that is not a
// directory, an unknown check name or platform, or a --nccl-log / --topo-file that cannot be read
// or parsed (naming the file and line).
NodeReport RunDoctor(const DoctorOptions& options);

// The facts on which nodes differ from the majority. NCCL variables that differ are
// CRITICAL (NCCL expects the same tuning on every rank); other facts WARN.
std::vector<Drift> FindDrift(const std::vector<NodeReport>& nodes);

// A drifted fact as a finding: source "drift", where the fact's key, the majority and the
// outliers in `what`, one line of evidence per outlier ("rank 2 (node-c): 200 Gb/sec"), and
// the node and majority counts as figures.
Finding DriftFinding(const Drift& drift);

// The JSON form of one node's report: the --format json node object and the wire format
// reports travel in to process 0. FromJson throws UsageError for a malformed document.
std::string NodeReportToJson(const NodeReport& report);
NodeReport NodeReportFromJson(const std::string& json);

// Under a launcher (env or MPI) every process sends its report to process 0 through the
// rendezvous store; process 0 returns every node's report and the drift, the others their
// own report alone. One process: its report. Throws TimeoutError naming the ranks that
// did not report within `timeout`.
ClusterReport GatherReports(const NodeReport& mine, const LaunchInfo& launch,
                            std::chrono::milliseconds timeout);

// Writes a cluster report in one format.
class DoctorReporter {
 public:
  virtual ~DoctorReporter() = default;
  virtual void Write(const ClusterReport& report) = 0;
};

// How much a reporter shows.
struct ReportStyle {
  bool verbose = false;  // every finding of every node, and the evidence of OK and INFO ones
};

// A --format choice.
struct DoctorReporterEntry {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<DoctorReporter> (*make)(std::ostream& out, const ReportStyle& style);
};

// Every --format of doctor, in the order --help lists them.
const std::vector<DoctorReporterEntry>& DoctorReporters();

// Throws UsageError naming the formats for an unknown one.
std::unique_ptr<DoctorReporter> MakeDoctorReporter(std::string_view format, std::ostream& out,
                                                   const ReportStyle& style);

}  // namespace fabricscope::doctor
