// Findings on links, error counters, cabling and the subnet manager.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>

#include "fabricscope/fabric.h"
#include "fabricscope/fabric_links.h"
#include "fabricscope/strings.h"

namespace fabricscope::fabric {

std::string PortName(const std::string& node, int port) {
  return node + "[" + std::to_string(port) + "]";
}

std::string LinkEnds::Name() const {
  const std::string left = PortName(a->name, a_port->number);
  if (b == nullptr) return left + " <-> (no answer)";
  return left + " <-> " + PortName(b->name, b_port->number);
}

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i;
      size_t je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string na = a.substr(i, ie - i);
      const std::string nb = b.substr(j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

bool IsLeaf(const Fabric& fabric, const Node& node) {
  if (node.kind != NodeKind::kSwitch) return false;
  return std::any_of(node.ports.begin(), node.ports.end(), [&](const Port& p) {
    const Node* peer = p.peer_lid > 0 ? fabric.FindByLid(p.peer_lid) : nullptr;
    return peer != nullptr && peer->kind == NodeKind::kHca;
  });
}

std::vector<LinkEnds> ActiveLinks(const Fabric& fabric) {
  std::vector<LinkEnds> links;
  for (const auto& node : fabric.nodes) {
    for (const auto& port : node.ports) {
      if (port.peer_unreachable && port.lanes > 0) {
        links.push_back(LinkEnds{&node, &port, nullptr, nullptr});
        continue;
      }
      if (port.peer_lid == 0) continue;
      const Node* peer = fabric.FindByLid(port.peer_lid);
      const Port* peer_port = nullptr;
      if (peer != nullptr) {
        for (const auto& p : peer->ports) {
          if (p.number == port.peer_port) peer_port = &p;
        }
      }
      if (peer_port != nullptr && NaturalLess(peer->name, node.name)) continue;  // seen there
      if (peer_port == nullptr) peer = nullptr;
      links.push_back(LinkEnds{&node, &port, peer, peer_port});
    }
  }
  return links;
}

namespace {

// Every kind of finding and its family, the one place that says which is which.
struct KindFamily {
  std::string_view kind;
  std::string_view category;
};
constexpr KindFamily kKindFamilies[] = {
    {"link-width", "link"},         {"link-speed", "link"},        {"link-down", "link"},
    {"link-mismatch", "link"},      {"error-counter", "counters"}, {"error-growth", "counters"},
    {"missing-uplink", "cabling"},  {"missing-spine", "cabling"},  {"hosts-per-leaf", "cabling"},
    {"missing-host", "cabling"},    {"dead-node", "cabling"},      {"unused-spine", "routing"},
    {"route-imbalance", "routing"}, {"unroutable", "routing"},     {"no-sm", "subnet-manager"},
};

}  // namespace

std::string_view CategoryOf(std::string_view kind) {
  for (const KindFamily& k : kKindFamilies) {
    if (k.kind == kind) return k.category;
  }
  return "";
}

namespace {

std::vector<std::string> EndsEvidence(const LinkEnds& link) {
  std::vector<std::string> out = {link.a_port->evidence};
  if (link.b_port != nullptr) out.push_back(link.b_port->evidence);
  return out;
}

// The rate the fabric is judged against: --expect, else the majority of active links.
LinkRate ExpectedRate(const std::vector<LinkEnds>& links, const FindingOptions& options) {
  if (options.expect) return *options.expect;
  std::vector<int> lanes;
  std::vector<double> speeds;
  for (const auto& l : links) {
    if (l.a_port->lanes == 0) continue;
    lanes.push_back(l.a_port->lanes);
    speeds.push_back(l.a_port->lane_gbps);
  }
  return LinkRate{Majority(lanes), Majority(speeds)};
}

void CheckRate(const LinkEnds& link, const LinkRate& expected, bool from_expect,
               std::vector<Finding>& out) {
  const Port& a = *link.a_port;
  const int lanes = link.b_port != nullptr ? std::min(a.lanes, link.b_port->lanes) : a.lanes;
  const double speed =
      link.b_port != nullptr ? std::min(a.lane_gbps, link.b_port->lane_gbps) : a.lane_gbps;
  if (lanes == 0) return;
  const std::string against = from_expect ? "--expect" : "the fabric's majority";
  const std::string now = RateName(lanes, speed);
  const std::string want = RateName(expected.lanes, expected.lane_gbps);
  if (lanes < expected.lanes) {
    out.push_back({.severity = Severity::kCritical,
                   .source = "link-width",
                   .what = fmt::format("runs at {} where {} is {}: {:.0f}% of its bandwidth", now,
                                       against, want, 100.0 * lanes / expected.lanes),
                   .where = link.Name(),
                   .evidence = EndsEvidence(link),
                   .fix = "reseat or replace the cable (or transceiver) of this link, then check "
                          "both ends with 'iblinkinfo'; 'ibportstate LID PORT reset' retrains it"});
  }
  if (speed + 1e-9 < expected.lane_gbps) {
    out.push_back({.severity = Severity::kCritical,
                   .source = "link-speed",
                   .what = fmt::format("runs at {} where {} is {}: {:.0f}% of its bandwidth", now,
                                       against, want, 100.0 * speed / expected.lane_gbps),
                   .where = link.Name(),
                   .evidence = EndsEvidence(link),
                   .fix = "check the cable's rating and both ports' enabled speeds ('ibportstate "
                          "LID PORT query'); replace a cable that cannot carry the speed"});
  }
}

void CheckEnds(const LinkEnds& link, std::vector<Finding>& out) {
  if (link.b_port == nullptr) return;
  const Port& a = *link.a_port;
  const Port& b = *link.b_port;
  if (a.lanes == b.lanes && a.lane_gbps == b.lane_gbps && a.state == b.state) return;
  out.push_back({.severity = Severity::kWarn,
                 .source = "link-mismatch",
                 .what = fmt::format("the two ends disagree: {} {} against {} {}",
                                     RateName(a.lanes, a.lane_gbps), a.state,
                                     RateName(b.lanes, b.lane_gbps), b.state),
                 .where = link.Name(),
                 .evidence = EndsEvidence(link),
                 .fix = "retrain the link ('ibportstate LID PORT reset' on one end) and re-read "
                        "it"});
}

// A port that was up in the baseline and is not now, or one whose physical link is up but
// that the SM did not activate.
void CheckDownPorts(const Fabric& fabric, const FindingOptions& options,
                    std::vector<Finding>& out) {
  std::set<std::string> reported;  // both ends of a link down are one finding
  for (const auto& node : fabric.nodes) {
    for (const auto& port : node.ports) {
      if (port.state == "Active" || port.state.empty()) continue;
      if (reported.contains(PortName(node.name, port.number))) continue;
      const Port* before = nullptr;
      const Node* earlier =
          options.baseline != nullptr ? options.baseline->FindByName(node.name) : nullptr;
      if (earlier != nullptr) {
        for (const auto& p : earlier->ports) {
          if (p.number == port.number && p.state == "Active") before = &p;
        }
      }
      const std::string subject = PortName(node.name, port.number);
      if (before != nullptr) {
        reported.insert(PortName(before->peer_name, before->peer_port));
        out.push_back(
            {.severity = Severity::kCritical,
             .source = "link-down",
             .what = fmt::format("{}/{} now; the baseline had it Active at {} to {}", port.state,
                                 port.physical, RateName(before->lanes, before->lane_gbps),
                                 PortName(before->peer_name, before->peer_port)),
             .where = subject + " <-> " + PortName(before->peer_name, before->peer_port),
             .evidence = {port.evidence, before->evidence},
             .fix = "check the cable at both ends (seated, not damaged), then the port: "
                    "'ibportstate LID PORT enable'; a port that keeps polling needs a "
                    "new cable or transceiver"});
      } else if (port.physical == "LinkUp" || port.physical == "Disabled") {
        out.push_back(
            {.severity = Severity::kCritical,
             .source = "link-down",
             .what = fmt::format("{}/{}: cabled, but not active", port.state, port.physical),
             .where = subject,
             .evidence = {port.evidence},
             .fix = port.physical == "Disabled"
                        ? "enable it: 'ibportstate LID PORT enable'"
                        : "the subnet manager did not activate it: check 'sminfo' and the SM's "
                          "log"});
      }
    }
  }
}

}  // namespace

std::vector<Finding> LinkFindings(const Fabric& fabric, const FindingOptions& options) {
  std::vector<Finding> out;
  const auto links = ActiveLinks(fabric);
  const LinkRate expected = ExpectedRate(links, options);
  for (const auto& link : links) {
    if (link.a_port->peer_unreachable) continue;  // a dead node: CablingFindings
    CheckRate(link, expected, options.expect.has_value(), out);
    CheckEnds(link, out);
  }
  CheckDownPorts(fabric, options, out);
  return out;
}

namespace {

constexpr const char* kErrorCounters[] = {"SymbolErrorCounter",
                                          "LinkErrorRecoveryCounter",
                                          "LinkDownedCounter",
                                          "PortRcvErrors",
                                          "PortRcvRemotePhysicalErrors",
                                          "PortRcvSwitchRelayErrors",
                                          "PortXmitDiscards",
                                          "PortXmitConstraintErrors",
                                          "PortRcvConstraintErrors",
                                          "LocalLinkIntegrityErrors",
                                          "ExcessiveBufferOverrunErrors",
                                          "VL15Dropped"};

bool IsErrorCounter(const std::string& name) {
  return std::any_of(std::begin(kErrorCounters), std::end(kErrorCounters),
                     [&](const char* c) { return name == c; });
}

const PortCounters* FindCounters(const Fabric& fabric, const PortCounters& like) {
  for (const auto& c : fabric.counters) {
    if (c.node == like.node && c.port == like.port) return &c;
  }
  return nullptr;
}

std::string CounterFix(const std::map<std::string, uint64_t>& errors) {
  if (errors.contains("SymbolErrorCounter") || errors.contains("LinkErrorRecoveryCounter") ||
      errors.contains("LinkDownedCounter") || errors.contains("LocalLinkIntegrityErrors")) {
    return "physical-layer errors: reseat or replace the cable or transceiver of this port; "
           "clear the counters ('perfquery -R LID PORT') and read again to see if they grow";
  }
  if (errors.contains("PortXmitDiscards")) {
    return "discards: congestion or a port stuck; check the routing balance and the peer";
  }
  return "clear the counters ('perfquery -R LID PORT') and read again with --interval";
}

}  // namespace

std::vector<Finding> CounterFindings(const Fabric& fabric, const FindingOptions& options) {
  std::vector<Finding> out;
  for (const auto& c : fabric.counters) {
    std::map<std::string, uint64_t> errors;
    std::map<std::string, uint64_t> growth;
    const PortCounters* before =
        options.earlier != nullptr ? FindCounters(*options.earlier, c) : nullptr;
    for (const auto& [name, value] : c.counters) {
      if (!IsErrorCounter(name) || value == 0) continue;
      errors[name] = value;
      const uint64_t was =
          before != nullptr && before->counters.contains(name) ? before->counters.at(name) : 0;
      if (options.earlier != nullptr && value > was) growth[name] = value - was;
    }
    if (errors.empty()) continue;
    const std::string subject = PortName(c.node, c.port);
    auto list = [](const std::map<std::string, uint64_t>& m) {
      std::vector<std::string> parts;
      parts.reserve(m.size());
      for (const auto& [k, v] : m) parts.push_back(fmt::format("{}={}", k, v));
      return fmt::format("{}", fmt::join(parts, ", "));
    };
    if (!growth.empty()) {
      std::vector<std::string> evidence = {c.evidence};
      if (before != nullptr) evidence.push_back(before->evidence);
      out.push_back({.severity = Severity::kCritical,
                     .source = "error-growth",
                     .what = fmt::format("error counters grew {}: {}",
                                         options.interval_seconds > 0
                                             ? fmt::format("over {:g} s", options.interval_seconds)
                                             : std::string("since the earlier read"),
                                         list(growth)),
                     .where = subject,
                     .evidence = evidence,
                     .fix = CounterFix(growth)});
    } else {
      out.push_back({.severity = Severity::kWarn,
                     .source = "error-counter",
                     .what = "error counters set: " + list(errors),
                     .where = subject,
                     .evidence = {c.evidence},
                     .fix = CounterFix(errors)});
    }
  }
  return out;
}

namespace {

struct LeafView {
  const Node* leaf = nullptr;
  int hosts = 0;
  int uplinks = 0;
  std::set<std::string> spines;
  std::vector<const Port*> down_ports;
};

bool WasActive(const Fabric* baseline, const std::string& node, int port) {
  const Node* n = baseline != nullptr ? baseline->FindByName(node) : nullptr;
  if (n == nullptr) return false;
  return std::any_of(n->ports.begin(), n->ports.end(),
                     [&](const Port& p) { return p.number == port && p.state == "Active"; });
}

// A port down now that the baseline had up is cabled: LinkFindings names it, so it still
// counts as an uplink here.
std::vector<LeafView> Leaves(const Fabric& fabric, const Fabric* baseline) {
  std::vector<LeafView> leaves;
  for (const auto& node : fabric.nodes) {
    if (!IsLeaf(fabric, node)) continue;
    LeafView view{&node, 0, 0, {}, {}};
    for (const auto& p : node.ports) {
      const Node* peer = p.peer_lid > 0 ? fabric.FindByLid(p.peer_lid) : nullptr;
      if (p.peer_unreachable && p.lanes > 0) ++view.uplinks;
      if (peer == nullptr) {
        if (!p.peer_unreachable && p.state == "Down") {
          if (WasActive(baseline, node.name, p.number)) {
            ++view.uplinks;
          } else {
            view.down_ports.push_back(&p);
          }
        }
        continue;
      }
      if (peer->kind == NodeKind::kHca) {
        ++view.hosts;
      } else {
        ++view.uplinks;
        view.spines.insert(peer->name);
      }
    }
    leaves.push_back(view);
  }
  return leaves;
}

// The dead node as a healthy read (--baseline) knew it: the node whose LID the tables still
// route to, else the peer the baseline had on the ports that lead to it now.
const Node* DeadNodeInBaseline(const Fabric& fabric, const Fabric* baseline,
                               const std::set<int>& lost) {
  if (baseline == nullptr) return nullptr;
  if (lost.size() == 1) {
    if (const Node* n = baseline->FindByLid(*lost.begin()); n != nullptr) return n;
  }
  for (const auto& node : fabric.nodes) {
    const Node* before = baseline->FindByName(node.name);
    if (before == nullptr) continue;
    for (const auto& p : node.ports) {
      if (!p.peer_unreachable) continue;
      for (const auto& q : before->ports) {
        if (q.number != p.number || q.peer_lid == 0) continue;
        if (const Node* peer = baseline->FindByLid(q.peer_lid); peer != nullptr) return peer;
      }
    }
  }
  return nullptr;
}

void DeadNodeFindings(const Fabric& fabric, const FindingOptions& options,
                      std::vector<Finding>& out) {
  std::vector<std::string> ports;
  std::vector<std::string> evidence;
  for (const auto& node : fabric.nodes) {
    for (const auto& p : node.ports) {
      if (!p.peer_unreachable) continue;
      ports.push_back(PortName(node.name, p.number));
      evidence.push_back(p.evidence);
    }
  }
  if (ports.empty()) return;
  // The forwarding tables still list the LIDs the SM assigned: those without a node now are
  // the nodes that stopped answering.
  std::set<int> lost;
  for (const auto& t : fabric.tables) {
    for (const auto& [lid, name] : t.destination) {
      if (name.empty() && fabric.FindByLid(lid) == nullptr) lost.insert(lid);
    }
  }
  const std::string lids =
      lost.empty() ? "" : fmt::format(" (LID {} in the forwarding tables)", fmt::join(lost, ", "));
  std::string subject = "the node behind " + ports.front();
  if (lost.size() == 1) subject = "LID " + std::to_string(*lost.begin());
  std::string message = fmt::format(
      "ports {} are up, but the node behind them does not answer: a dead or hung switch{}",
      fmt::join(ports, ", "), lids);
  if (const Node* known = DeadNodeInBaseline(fabric, options.baseline, lost); known != nullptr) {
    subject = known->name;
    message += fmt::format("; the baseline names it {} (GUID {}, LID {})", known->name, known->guid,
                           known->lid);
    evidence.push_back(fmt::format("baseline: {} {} GUID {} LID {}",
                                   known->kind == NodeKind::kSwitch ? "switch" : "HCA", known->name,
                                   known->guid, known->lid));
  } else {
    // A node that does not answer gives the tools no description: only a healthy read can.
    const std::string lid = lost.size() == 1 ? std::to_string(*lost.begin()) : "LID";
    message += fmt::format(
        "; the tools give no name for a node that no longer answers, so it is known only by "
        "{}: name it with 'fabricscope fabric --baseline DIR' (a read of the healthy fabric "
        "saved with --save DIR), or 'saquery -O {}' while the SM still holds its record",
        lost.empty() ? "the ports that lead to it" : "LID " + lid, lid);
  }
  out.push_back({.severity = Severity::kCritical,
                 .source = "dead-node",
                 .what = message,
                 .where = subject,
                 .evidence = evidence,
                 .fix = "power-cycle or replace the switch; until then take it out of routing "
                        "(disable its ports with ibportstate) so the SM routes around it"});
}

void UplinkFindings(const std::vector<LeafView>& leaves, std::vector<Finding>& out) {
  std::vector<int> uplinks;
  std::vector<int> hosts;
  std::map<std::string, int> spine_leaves;
  for (const auto& l : leaves) {
    uplinks.push_back(l.uplinks);
    hosts.push_back(l.hosts);
    for (const auto& s : l.spines) ++spine_leaves[s];
  }
  const int want_uplinks = Majority(uplinks);
  const int want_hosts = Majority(hosts);
  for (const auto& l : leaves) {
    std::vector<std::string> evidence;
    for (const Port* p : l.down_ports) evidence.push_back(p->evidence);
    if (l.uplinks < want_uplinks) {
      out.push_back({.severity = Severity::kWarn,
                     .source = "missing-uplink",
                     .what = fmt::format("{} uplinks where the other leaves have {}: its hosts "
                                         "share less bandwidth into the spines",
                                         l.uplinks, want_uplinks),
                     .where = l.leaf->name,
                     .evidence = evidence,
                     .fix = "cable the missing uplink (a Down/Polling port listed as evidence is "
                            "a candidate), or check the cable in it"});
    }
    for (const auto& [spine, count] : spine_leaves) {
      if (!l.spines.contains(spine) && count * 2 > static_cast<int>(leaves.size())) {
        out.push_back({.severity = Severity::kCritical,
                       .source = "missing-spine",
                       .what = fmt::format("{} has no link to {}, which {} other leaves reach",
                                           l.leaf->name, spine, count),
                       .where = l.leaf->name + " -> " + spine,
                       .evidence = evidence,
                       .fix = "cable the leaf to every spine"});
      }
    }
    if (l.hosts != want_hosts) {
      out.push_back({.severity = Severity::kInfo,
                     .source = "hosts-per-leaf",
                     .what = fmt::format("{} hosts where most leaves have {}", l.hosts, want_hosts),
                     .where = l.leaf->name,
                     .fix = "expected for a partly filled leaf; otherwise check the host cables"});
    }
  }
}

}  // namespace

std::vector<Finding> CablingFindings(const Fabric& fabric, const FindingOptions& options) {
  std::vector<Finding> out;
  DeadNodeFindings(fabric, options, out);
  UplinkFindings(Leaves(fabric, options.baseline), out);
  for (const auto& host : options.hosts) {
    const Node* n = fabric.FindByName(host);
    if (n == nullptr || n->kind != NodeKind::kHca) {
      out.push_back({.severity = Severity::kCritical,
                     .source = "missing-host",
                     .what = host + " is on the expected list but not in the fabric",
                     .where = host,
                     .fix = "check the host's HCA port ('ibstat' on the host) and its cable; the "
                            "name must match the HCA's node description"});
    }
  }
  return out;
}

std::vector<Finding> SubnetManagerFindings(const Fabric& fabric, const FindingOptions&) {
  std::vector<Finding> out;
  if (fabric.sm.queried && !fabric.sm.present) {
    out.push_back({.severity = Severity::kCritical,
                   .source = "no-sm",
                   .what = "no subnet manager answered sminfo: no routes are programmed or updated",
                   .where = "subnet manager",
                   .fix = "start opensm (systemctl start opensm) or the switch's SM"});
  }
  return out;
}

}  // namespace fabricscope::fabric
