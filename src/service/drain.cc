// Which findings blame a node, the reason a node is drained with, and drain and resume over a
// NodeService.
#include "fabricscope/drain.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "service/services.h"

namespace fabricscope {
namespace {

// One line, no double quotes: the reason travels inside Reason="..." and is read on a line of
// sinfo -R.
std::string OneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else if (c == '"') {
      out += '\'';
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string Cut(std::string text) {
  if (text.size() <= kMaxDrainReason) return text;
  text.resize(kMaxDrainReason - 3);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text + "...";
}

std::string SourceAndWhat(const Finding& f, bool with_where) {
  std::string part = f.source + ": ";
  if (with_where && !f.where.empty()) part += f.where + ": ";
  return part + f.what;
}

std::string OurPrefix() { return "fabricscope "; }
std::string CommandPrefix(std::string_view command) {
  return OurPrefix() + std::string(command) + ":";
}

// Why a CRITICAL finding that does not blame a node is not drained; "" for one that does not
// need saying (not CRITICAL, or it does blame a node).
std::string NotDrainedWhy(const Finding& f) {
  if (f.severity != Severity::kCritical || BlamesNode(f)) return "";
  const std::string what = " (" + f.source + ")";
  if (!f.decided) return "undecided" + (f.where.empty() ? "" : ": " + f.where) + what;
  if (f.element == "link") {
    const std::string ends = f.nodes.size() == 2 ? f.nodes[0] + "<->" + f.nodes[1] : f.where;
    return "link " + ends + " is not a node" + what;
  }
  if (f.element == "nodes") {
    return "nodes " + Joined(f.nodes) + " are a set of nodes, not one" + what;
  }
  if (f.element == "switch" || f.element == "rail") {
    return f.element + " " + f.where + " is not a node" + what;
  }
  if (f.element == "fabric") return "the fabric is not a node" + what;
  if (f.element == "node" || f.element == "nic") {
    return f.element + " finding names no host" + what;
  }
  return "it names no node" + what;
}

// The blamed nodes in the order first found, each with its findings.
struct Blamed {
  std::string node;
  std::vector<const Finding*> findings;
};

std::vector<Blamed> BlamedNodes(const std::vector<Finding>& findings) {
  std::vector<Blamed> blamed;
  for (const Finding& f : findings) {
    if (!BlamesNode(f)) continue;
    for (const std::string& host : f.nodes) {
      const std::string node = NodeNameOf(host);
      if (node.empty()) continue;
      auto it = std::find_if(blamed.begin(), blamed.end(),
                             [&](const Blamed& b) { return b.node == node; });
      if (it == blamed.end()) it = blamed.insert(blamed.end(), Blamed{node, {}});
      it->findings.push_back(&f);
    }
  }
  return blamed;
}

// The nodes any CRITICAL finding names, whatever its element: none of them passed.
std::set<std::string> NodesWithCritical(const std::vector<Finding>& findings) {
  std::set<std::string> nodes;
  for (const Finding& f : findings) {
    if (f.severity != Severity::kCritical) continue;
    for (const std::string& host : f.nodes) nodes.insert(NodeNameOf(host));
  }
  return nodes;
}

ServiceRecord Failed(const std::string& node, const std::string& command,
                     const std::string& error) {
  return {.node = node,
          .action = ServiceAction::kFailed,
          .reason = "",
          .command = command,
          .error = error};
}

ServiceRecord DrainOne(NodeService& service, const Blamed& b, const std::string& command) {
  const NodeState state = service.State(b.node);
  if (!state.error.empty()) return Failed(b.node, state.command, state.error);
  if (state.drained && !state.reason.starts_with(OurPrefix())) {
    return {.node = b.node,
            .action = ServiceAction::kLeftAlone,
            .reason = "drained by someone else: " +
                      (state.reason.empty() ? "(no reason given)" : state.reason),
            .command = "",
            .error = ""};
  }
  const std::string reason = DrainReason(command, b.findings);
  const ServiceCall call = service.Drain(b.node, b.findings.front()->source, reason);
  if (!call.error.empty()) return Failed(b.node, call.command, call.error);
  return {.node = b.node,
          .action = call.ran ? ServiceAction::kDrained : ServiceAction::kWouldDrain,
          .reason = reason,
          .command = call.command,
          .error = ""};
}

// A covered node that passed: resumed when this command drained it; a record only when it is
// drained at all (or its state could not be read).
std::optional<ServiceRecord> ResumeOne(NodeService& service, const std::string& node,
                                       const std::string& command) {
  const NodeState state = service.State(node);
  if (!state.error.empty()) return Failed(node, state.command, state.error);
  if (!state.drained) return std::nullopt;
  if (!state.reason.starts_with(CommandPrefix(command))) {
    const bool ours = state.reason.starts_with(OurPrefix());
    return ServiceRecord{.node = node,
                         .action = ServiceAction::kLeftAlone,
                         .reason = (ours ? "drained by another fabricscope command: "
                                         : "drained by someone else: ") +
                                   (state.reason.empty() ? "(no reason given)" : state.reason),
                         .command = "",
                         .error = ""};
  }
  const ServiceCall call = service.Resume(node);
  if (!call.error.empty()) return Failed(node, call.command, call.error);
  return ServiceRecord{
      .node = node,
      .action = call.ran ? ServiceAction::kResumed : ServiceAction::kWouldResume,
      .reason = "fabricscope " + command + " passed on it (drained: " + state.reason + ")",
      .command = call.command,
      .error = ""};
}

}  // namespace

bool BlamesNode(const Finding& finding) {
  return finding.severity == Severity::kCritical && finding.decided &&
         (finding.element == "node" || finding.element == "nic") &&
         std::any_of(finding.nodes.begin(), finding.nodes.end(),
                     [](const std::string& host) { return !NodeNameOf(host).empty(); });
}

std::string NodeNameOf(std::string_view host) {
  return std::string(host.substr(0, host.find('.')));
}

std::string DrainReason(std::string_view command, const Finding& finding) {
  return Cut(OneLine(CommandPrefix(command) + " " + SourceAndWhat(finding, true)));
}

std::string DrainReason(std::string_view command, const std::vector<const Finding*>& findings) {
  if (findings.empty()) return Cut(CommandPrefix(command));
  std::string reason = CommandPrefix(command) + " " + SourceAndWhat(*findings.front(), true);
  for (size_t i = 1; i < findings.size() && reason.size() < kMaxDrainReason; ++i) {
    reason += "; " + SourceAndWhat(*findings[i], false);
  }
  return Cut(OneLine(reason));
}

const std::vector<NodeServiceEntry>& NodeServices() {
  static const std::vector<NodeServiceEntry> services = {
      {"slurm",
       "scontrol update NodeName=N State=DRAIN Reason=\"...\" (State=RESUME to return it); "
       "the state read with scontrol show node",
       service::MakeSlurmService, "scontrol"},
      {"dry-run", "print the scontrol lines slurm would run, run none of them",
       service::MakeDryRunService, ""},
      {"kubernetes",
       "kubectl: a NoSchedule taint fabricscope.io/fault=SOURCE and a FabricscopeFault node "
       "condition (not tested against a real API server)",
       service::MakeKubernetesService, "kubectl"},
  };
  return services;
}

const NodeServiceEntry& FindNodeService(std::string_view name) {
  const auto& services = NodeServices();
  const auto it = std::find_if(services.begin(), services.end(),
                               [&](const NodeServiceEntry& e) { return e.name == name; });
  if (it == services.end()) {
    throw UsageError("unknown --drain mode '" + std::string(name) + "': give " + NamesOf(services) +
                     " (as --drain=MODE; a bare --drain is slurm)");
  }
  return *it;
}

std::string_view ServiceActionName(ServiceAction action) {
  switch (action) {
    case ServiceAction::kDrained:
      return "drained";
    case ServiceAction::kWouldDrain:
      return "would drain";
    case ServiceAction::kResumed:
      return "resumed";
    case ServiceAction::kWouldResume:
      return "would resume";
    case ServiceAction::kLeftAlone:
      return "left alone";
    case ServiceAction::kNotDrained:
      return "not drained";
    case ServiceAction::kFailed:
      break;
  }
  return "failed";
}

std::string ServiceRecordLine(const ServiceRecord& r) {
  switch (r.action) {
    case ServiceAction::kDrained:
      return fmt::format("fabricscope: drained node {}: {}", r.node, r.reason);
    case ServiceAction::kWouldDrain:
    case ServiceAction::kWouldResume:
      return fmt::format("fabricscope: dry run: would {} node {}: {}",
                         r.action == ServiceAction::kWouldDrain ? "drain" : "resume", r.node,
                         r.command);
    case ServiceAction::kResumed:
      return fmt::format("fabricscope: resumed node {}: {}", r.node, r.reason);
    case ServiceAction::kLeftAlone:
      return fmt::format("fabricscope: left alone node {}: {}", r.node, r.reason);
    case ServiceAction::kNotDrained:
      return fmt::format("fabricscope: not drained: {}", r.reason);
    case ServiceAction::kFailed:
      break;
  }
  return fmt::format("fabricscope: error: node {}: {}", r.node, r.error);
}

std::vector<ServiceRecord> ApplyService(NodeService& service, const ServiceRequest& request) {
  std::vector<ServiceRecord> records;
  if (request.drain) {
    for (const Blamed& b : BlamedNodes(request.findings)) {
      records.push_back(DrainOne(service, b, request.command));
    }
    for (const Finding& f : request.findings) {
      const std::string why = NotDrainedWhy(f);
      if (why.empty()) continue;
      records.push_back({.node = "",
                         .action = ServiceAction::kNotDrained,
                         .reason = why,
                         .command = "",
                         .error = ""});
    }
  }
  if (request.resume) {
    const std::set<std::string> failed = NodesWithCritical(request.findings);
    std::set<std::string> seen;
    for (const std::string& host : request.covered_hosts) {
      const std::string node = NodeNameOf(host);
      if (node.empty() || failed.contains(node) || !seen.insert(node).second) continue;
      if (auto record = ResumeOne(service, node, request.command)) {
        records.push_back(std::move(*record));
      }
    }
  }
  return records;
}

}  // namespace fabricscope
