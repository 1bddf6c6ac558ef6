// The fabric report: findings gathered, the two-tier topology, text and JSON.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "fabricscope/fabric.h"
#include "fabricscope/fabric_links.h"

namespace fabricscope::fabric {

Topology TopologyOf(const Fabric& fabric) {
  Topology topology;
  for (const auto& node : fabric.nodes) {
    if (node.kind != NodeKind::kSwitch) continue;
    const bool leaf = IsLeaf(fabric, node);
    (leaf ? topology.leaves : topology.spines).push_back(node.name);
    for (const auto& p : node.ports) {
      const Node* peer = p.peer_lid > 0 ? fabric.FindByLid(p.peer_lid) : nullptr;
      if (peer == nullptr || p.state != "Active") continue;
      if (peer->kind == NodeKind::kHca) {
        topology.host_leaf[peer->name] = node.name;
      } else if (leaf && !IsLeaf(fabric, *peer)) {
        ++topology.uplinks[{node.name, peer->name}];
      }
    }
  }
  std::sort(topology.leaves.begin(), topology.leaves.end(), NaturalLess);
  std::sort(topology.spines.begin(), topology.spines.end(), NaturalLess);
  return topology;
}

Severity FabricReport::worst() const { return Worst(findings); }

namespace {

// One registry entry per family of findings.
struct FindingFamily {
  const char* name;
  std::vector<Finding> (*find)(const Fabric&, const FindingOptions&);
};
constexpr FindingFamily kFamilies[] = {{"link", LinkFindings},
                                       {"counters", CounterFindings},
                                       {"cabling", CablingFindings},
                                       {"subnet-manager", SubnetManagerFindings}};

// "leaf1[5] -> spine1[1]" -> {"leaf1[5]", "spine1[1]"} and the node names.
std::vector<std::string> PartsOf(const std::string& subject) {
  std::vector<std::string> parts;
  const size_t arrow = subject.find(" -> ");
  for (const std::string& port : {subject.substr(0, arrow), subject.substr(arrow + 4)}) {
    parts.push_back(port);
    parts.push_back(port.substr(0, port.find('[')));
  }
  return parts;
}

// A routing imbalance whose hot link is a degraded link, or touches a leaf with missing
// cabling, is that fault's consequence: its figures go to the fault's evidence.
bool FoldIntoCause(const Finding& imbalance, std::vector<Finding>& findings) {
  const auto parts = PartsOf(imbalance.where);
  for (auto& cause : findings) {
    const std::string_view category = CategoryOf(cause.source);
    if (category != "link" && category != "cabling") continue;
    // The same port, or (a link down) the parallel link between the same two switches.
    const std::string& at = cause.where;
    const bool port_match = category == "link" && (at.find(parts[0]) != std::string::npos ||
                                                   at.find(parts[2]) != std::string::npos ||
                                                   (at.find(parts[1] + "[") != std::string::npos &&
                                                    at.find(parts[3] + "[") != std::string::npos));
    const bool node_match = category == "cabling" && (at == parts[1] || at == parts[3]);
    if (port_match || node_match) {
      cause.evidence.push_back("impact: " + imbalance.what);
      return true;
    }
  }
  return false;
}

bool HasKind(const std::vector<Finding>& findings, const std::string& kind) {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return f.source == kind; });
}

}  // namespace

FabricReport Analyze(Fabric fabric, const AnalyzeOptions& options) {
  FabricReport report;
  report.fabric = std::move(fabric);
  const Fabric& f = report.fabric;
  report.topology = TopologyOf(f);
  for (const auto& family : kFamilies) {
    for (auto& finding : family.find(f, options.findings)) {
      report.findings.push_back(std::move(finding));
    }
  }
  report.routing = AnalyzeRouting(f, options.findings.hosts);
  for (auto& finding : RoutingFindings(f, report.routing)) {
    // Routes into a dead switch are that switch's consequence, not a second fault.
    if (finding.source == "unroutable" && HasKind(report.findings, "dead-node")) {
      for (auto& dead : report.findings) {
        if (dead.source == "dead-node") dead.evidence.push_back(finding.what);
      }
      continue;
    }
    if (finding.source == "route-imbalance") {
      if (FoldIntoCause(finding, report.findings)) continue;
      auto same = std::find_if(
          report.findings.begin(), report.findings.end(),
          [&](const Finding& x) { return x.source == finding.source && x.where == finding.where; });
      if (same != report.findings.end()) {  // the ring's and the all-to-all's hot link
        same->what += "; " + finding.what;
        same->evidence.insert(same->evidence.end(), finding.evidence.begin(),
                              finding.evidence.end());
        continue;
      }
    }
    report.findings.push_back(std::move(finding));
  }
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return report;
}

namespace {

void TextSummary(const FabricReport& report, std::ostringstream& out) {
  const Fabric& f = report.fabric;
  size_t switches = 0;
  size_t hcas = 0;
  for (const auto& n : f.nodes) (n.kind == NodeKind::kSwitch ? switches : hcas)++;
  out << fmt::format("fabric: {} switches ({} leaves, {} spines), {} HCAs, {} links\n", switches,
                     report.topology.leaves.size(), report.topology.spines.size(), hcas,
                     ActiveLinks(f).size());
  if (f.sm.present) {
    out << fmt::format(
        "subnet manager: LID {} GUID {} {} priority {}, routing engine {}\n", f.sm.lid, f.sm.guid,
        f.sm.state, f.sm.priority,
        f.sm.routing_engine.empty() ? "unknown (give --sm-log)" : f.sm.routing_engine);
  } else if (!f.sm.queried) {
    out << "subnet manager: not queried (no sminfo output)\n";
  }
  for (const CollectiveLoad* load : {&report.routing.ring, &report.routing.alltoall}) {
    if (load->links.empty()) continue;
    const LinkLoad& hot = load->links.front();
    out << fmt::format(
        "{} over {} hosts: hottest link {} -> {} ({:.3g} flows), limit 1/{:.2f}, "
        "balanced 1/{:.2f}\n",
        load->collective, report.routing.hosts.size(), hot.from, hot.to, hot.flows,
        load->limit_factor, load->balanced_factor);
  }
}

void TextBalance(const FabricReport& report, std::ostringstream& out) {
  out << "\ndestinations per switch out-port (HCA LIDs, as check_lft_balance counts them):\n";
  std::string current;
  for (const auto& b : report.routing.balance) {
    if (b.switch_name != current) {
      out << (current.empty() ? "" : "\n") << "  " << b.switch_name << ":";
      current = b.switch_name;
    }
    out << fmt::format(" {}->{}={}", b.port, b.peer, b.destinations);
  }
  if (!current.empty()) out << "\n";
}

void TextPath(const PairPath& path, std::ostringstream& out) {
  out << "\npath " << path.src << " -> " << path.dst << " through the forwarding tables: ";
  out << (path.hops.empty() ? path.why : fmt::format("{}", fmt::join(path.hops, ", "))) << "\n";
  if (!path.traced_hops.empty()) {
    out << "ibtracert: " << fmt::format("{}", fmt::join(path.traced_hops, ", "))
        << (path.traced_hops == path.hops ? " (the same)"
                                          : " (DIFFERENT: the SM changed the "
                                            "tables since they were read?)")
        << "\n";
  }
  for (const auto& e : path.evidence) out << "  evidence: " << e << "\n";
}

}  // namespace

std::string FormatText(const FabricReport& report, bool verbose) {
  std::ostringstream out;
  TextSummary(report, out);
  if (verbose) TextBalance(report, out);
  out << "\n";
  if (report.findings.empty()) out << "no findings: every link, counter and route is as expected\n";
  // INFO findings (a partly filled leaf) keep their fix for --verbose, as the other
  // diagnoses do; the problems always show theirs.
  FindingTextStyle style;
  style.ok_details = verbose;
  out << FindingsText(report.findings, style);
  if (report.path) TextPath(*report.path, out);
  for (const auto& p : report.fabric.problems) out << "note: " << p << "\n";
  return out.str();
}

namespace {

// In the order written, as the findings' keys are (finding.h).
using Json = nlohmann::ordered_json;

Json NodesJson(const Fabric& fabric) {
  Json nodes = Json::array();
  for (const auto& n : fabric.nodes) {
    Json ports = Json::array();
    for (const auto& p : n.ports) {
      ports.push_back({{"port", p.number},
                       {"lanes", p.lanes},
                       {"lane_gbps", p.lane_gbps},
                       {"rate", RateName(p.lanes, p.lane_gbps)},
                       {"state", p.state},
                       {"physical", p.physical},
                       {"peer", p.peer_name},
                       {"peer_lid", p.peer_lid},
                       {"peer_port", p.peer_port},
                       {"peer_unreachable", p.peer_unreachable}});
    }
    nodes.push_back({{"name", n.name},
                     {"kind", n.kind == NodeKind::kSwitch ? "switch" : "hca"},
                     {"guid", n.guid},
                     {"lid", n.lid},
                     {"ports", ports}});
  }
  return nodes;
}

Json LoadJson(const CollectiveLoad& load) {
  Json links = Json::array();
  for (const auto& l : load.links) {
    links.push_back(
        {{"from", l.from}, {"to", l.to}, {"flows", l.flows}, {"capacity_gbps", l.capacity_gbps}});
  }
  return {{"collective", load.collective},
          {"limit_factor", load.limit_factor},
          {"balanced_factor", load.balanced_factor},
          {"unroutable", load.unroutable},
          {"links", links}};
}

Json TopologyJson(const Topology& t) {
  Json uplinks = Json::array();
  for (const auto& [key, count] : t.uplinks) {
    uplinks.push_back({{"leaf", key.first}, {"spine", key.second}, {"links", count}});
  }
  return {
      {"host_leaf", t.host_leaf}, {"leaves", t.leaves}, {"spines", t.spines}, {"uplinks", uplinks}};
}

}  // namespace

std::string FormatJson(const FabricReport& report) {
  const Fabric& f = report.fabric;
  Json counters = Json::array();
  for (const auto& c : f.counters) {
    counters.push_back({{"node", c.node}, {"port", c.port}, {"counters", c.counters}});
  }
  Json balance = Json::array();
  for (const auto& b : report.routing.balance) {
    balance.push_back({{"switch", b.switch_name},
                       {"port", b.port},
                       {"peer", b.peer},
                       {"destinations", b.destinations}});
  }
  Json out = {{"nodes", NodesJson(f)},
              {"counters", counters},
              {"subnet_manager",
               {{"queried", f.sm.queried},
                {"present", f.sm.present},
                {"lid", f.sm.lid},
                {"guid", f.sm.guid},
                {"state", f.sm.state},
                {"priority", f.sm.priority},
                {"routing_engine", f.sm.routing_engine}}},
              {"topology", TopologyJson(report.topology)},
              {"routing",
               {{"balance", balance},
                {"hosts", report.routing.hosts},
                {"ring", LoadJson(report.routing.ring)},
                {"alltoall", LoadJson(report.routing.alltoall)}}},
              {"findings_version", kFindingsVersion},
              {"findings", FindingsJson(report.findings)},
              {"path", report.path ? Json{{"src", report.path->src},
                                          {"dst", report.path->dst},
                                          {"hops", report.path->hops},
                                          {"why", report.path->why},
                                          {"ibtracert_hops", report.path->traced_hops},
                                          {"evidence", report.path->evidence}}
                                   : Json()},
              {"worst", SeverityName(report.worst())},
              {"sources", f.sources},
              {"problems", f.problems}};
  return out.dump(2) + "\n";
}

}  // namespace fabricscope::fabric
