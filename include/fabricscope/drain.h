// Node service actions: the nodes a diagnosis blames taken out of service (drained), and the
// nodes it cleared returned (resumed), through a scheduler's own command line: Slurm's
// scontrol, Kubernetes' kubectl, or a dry run that prints the commands (docs/slurm.md).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/finding.h"

namespace fabricscope {

// The longest reason DrainReason writes: Slurm keeps a node's reason whole at any length, but
// sinfo -R and the operators reading it want a line (Slurm's own reasons are a few words).
inline constexpr size_t kMaxDrainReason = 200;

// Whether `finding` blames a node that --drain takes out of service: CRITICAL, decided, about a
// node or one of its NICs (element "node" or "nic"), with its host named. Links, switches,
// rails and sets of nodes never are: a link has two ends and only one may be at fault.
bool BlamesNode(const Finding& finding);

// A host name as a scheduler names the node: up to the first '.' ("n2.cluster.local" -> "n2"),
// which is Slurm's NodeName (and a Kubernetes node's name where nodes are named by their short
// host name).
std::string NodeNameOf(std::string_view host);

// The reason a node is drained with: "fabricscope <command>: <source>: <where>: <what>" (no
// "<where>: " when the finding has none), on one line (newlines and tabs become spaces),
// without double quotes (they become single ones: the reason travels inside Reason="..."),
// cut to kMaxDrainReason characters (ending in "...").
std::string DrainReason(std::string_view command, const Finding& finding);

// Several findings blaming one node: the first one's reason, the others' "<source>: <what>"
// after it joined by "; ", all cut to kMaxDrainReason.
std::string DrainReason(std::string_view command, const std::vector<const Finding*>& findings);

// What a service says of a node.
struct NodeState {
  bool drained = false;   // not schedulable: DRAIN, DRAINED, DRAINING, DOWN, FAIL (Slurm)
  std::string state{};    // as the service says it: "IDLE+DRAIN"; "" unknown
  std::string reason{};   // the reason it was drained with; "" none
  std::string command{};  // the command that read it
  std::string error{};    // why it could not be read; "" it was
};

// One command a service ran, or would run.
struct ServiceCall {
  std::string command;  // as a line to paste into a shell
  bool ran = false;     // false: a dry run, nothing was run
  std::string error{};  // "" it succeeded (or would run); else the command and its stderr
};

// A scheduler's view of its nodes: read a node's state, drain it, resume it. Each call runs the
// scheduler's command line (a timeout each) and never throws for what the command did: a
// failure is the call's `error`.
class NodeService {
 public:
  virtual ~NodeService() = default;
  virtual NodeState State(const std::string& node) = 0;
  // `source`: the finding's source ("nccl_env"), for a service that records it apart.
  virtual ServiceCall Drain(const std::string& node, const std::string& source,
                            const std::string& reason) = 0;
  virtual ServiceCall Resume(const std::string& node) = 0;
};

// How services run their commands.
struct NodeServiceOptions {
  double timeout_seconds = 30;  // each command's
};

// A --drain MODE: its name, what it does, and how to make it.
struct NodeServiceEntry {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<NodeService> (*make)(const NodeServiceOptions& options);
  std::string_view tool;  // the program it runs ("scontrol"); "" none needed
};

// Every service, in the order --help lists them: slurm, dry-run, kubernetes.
const std::vector<NodeServiceEntry>& NodeServices();

// The entry named `name`; throws UsageError naming the services for an unknown one.
const NodeServiceEntry& FindNodeService(std::string_view name);

// What happened to one node, or why a finding's element was not drained.
enum class ServiceAction {
  kDrained,     // taken out of service with `reason`
  kWouldDrain,  // dry run: `command` would drain it
  kResumed,     // returned to service
  kWouldResume,
  kLeftAlone,   // drained by someone else (or another command): not touched; `reason` says why
  kNotDrained,  // a blamed link, switch, rail or node set: not a node (node is "")
  kFailed,      // the service's command failed: `error`
};

// "drained", "would drain", "resumed", "would resume", "left alone", "not drained", "failed".
std::string_view ServiceActionName(ServiceAction action);

// One action's record, for the command line to print (one line each on stderr).
struct ServiceRecord {
  std::string node;  // the node name; "" for kNotDrained
  ServiceAction action = ServiceAction::kFailed;
  std::string reason{};   // the drain reason, or why it was left alone / not drained
  std::string command{};  // the command line run (or that would run); "" none
  std::string error{};    // kFailed: the command and its stderr
};

// "fabricscope: drained node n2: fabricscope doctor: ib_ports: ...", "fabricscope: failed on
// node n2: ...", "fabricscope: would drain node n2: scontrol update ...": the one line of a
// record.
std::string ServiceRecordLine(const ServiceRecord& record);

// What one run of a command found and covered.
struct ServiceRequest {
  std::string command;                       // "doctor", "check", "locate", "watch"
  std::vector<Finding> findings{};           // the run's findings
  std::vector<std::string> covered_hosts{};  // the hosts the run covered (host names)
  bool drain = true;                         // drain the nodes its findings blame
  bool resume = false;  // return the covered nodes it cleared that this command drained
};

// Drains (request.drain) every node a finding blames, once each (its findings' reasons joined,
// in the order found), unless a reason not starting with "fabricscope " already holds it (an
// operator's drain: left alone); notes every CRITICAL finding on a link, switch, rail or node
// set as not drained. Resumes (request.resume) every covered node no CRITICAL finding blames
// whose drain reason starts with "fabricscope <command>:"; a node drained by someone else or
// by another fabricscope command is left alone. Records in that order.
std::vector<ServiceRecord> ApplyService(NodeService& service, const ServiceRequest& request);

}  // namespace fabricscope
