// Routing balance: destinations per switch out-port (as check_lft_balance counts them), and
// the load a ring all_reduce and an all-to-all put on each link when routed through the
// forwarding tables as programmed, against the same flows spread evenly.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include "fabric/text_lines.h"
#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/fabric_links.h"
#include "fabricscope/fabric_routes.h"

namespace fabricscope::fabric {
namespace {

const ForwardingTable* TableOf(const Fabric& fabric, const std::string& name) {
  for (const auto& t : fabric.tables) {
    if (t.switch_name == name) return &t;
  }
  return nullptr;
}

const Port* PortOf(const Node& node, int number) {
  for (const auto& p : node.ports) {
    if (p.number == number) return &p;
  }
  return nullptr;
}

double PortGbps(const Port& a, const Port* b) {
  const int lanes = b != nullptr ? std::min(a.lanes, b->lanes) : a.lanes;
  const double speed = b != nullptr ? std::min(a.lane_gbps, b->lane_gbps) : a.lane_gbps;
  return DataGbps(lanes, speed);
}

}  // namespace

Hop HopFrom(const Fabric& fabric, const Node& node, int port_number) {
  Hop hop;
  const Port* port = PortOf(node, port_number);
  if (port == nullptr || port->peer_lid == 0) return hop;
  const Node* peer = fabric.FindByLid(port->peer_lid);
  if (peer == nullptr) return hop;
  hop.from = PortName(node.name, port_number);
  hop.to = PortName(peer->name, port->peer_port);
  hop.capacity_gbps = PortGbps(*port, PortOf(*peer, port->peer_port));
  hop.next = peer;
  return hop;
}

std::vector<Hop> TraceRoute(const Fabric& fabric, const Node& src, const Node& dst,
                            std::string* why) {
  std::vector<Hop> path;
  if (src.ports.empty()) {
    *why = src.name + " has no port";
    return {};
  }
  Hop hop = HopFrom(fabric, src, src.ports.front().number);
  for (int hops = 0; hops < 32; ++hops) {
    if (hop.next == nullptr) {
      *why = "the route from " + src.name + " to " + dst.name + " leaves " +
             (hop.from.empty() ? src.name : hop.from) + " towards no answering node";
      return {};
    }
    path.push_back(hop);
    const Node& at = *hop.next;
    if (&at == &dst) return path;
    if (at.kind != NodeKind::kSwitch) break;
    const ForwardingTable* table = TableOf(fabric, at.name);
    if (table == nullptr || !table->out_port.contains(dst.lid)) {
      *why = "no forwarding entry on " + at.name + " for " + dst.name + " (LID " +
             std::to_string(dst.lid) + ")";
      return {};
    }
    const int out = table->out_port.at(dst.lid);
    hop = HopFrom(fabric, at, out);
    if (hop.next == nullptr) hop.from = PortName(at.name, out);
  }
  *why = "the route from " + src.name + " to " + dst.name + " loops or ends at the wrong node";
  return {};
}

namespace {

std::vector<PortBalance> Balance(const Fabric& fabric) {
  std::vector<PortBalance> out;
  for (const auto& node : fabric.nodes) {
    if (node.kind != NodeKind::kSwitch) continue;
    const ForwardingTable* table = TableOf(fabric, node.name);
    for (const auto& port : node.ports) {
      const Node* peer = port.peer_lid > 0 ? fabric.FindByLid(port.peer_lid) : nullptr;
      if (peer == nullptr || peer->kind != NodeKind::kSwitch) continue;
      int count = 0;
      if (table != nullptr) {
        for (const auto& [lid, out_port] : table->out_port) {
          if (out_port == port.number && table->to_hca.at(lid)) ++count;
        }
      }
      out.push_back(PortBalance{node.name, port.number, peer->name, count});
    }
  }
  return out;
}

double HostGbps(const Fabric& fabric, const std::vector<const Node*>& hosts) {
  std::vector<double> rates;
  for (const Node* h : hosts) {
    if (h->ports.empty()) continue;
    const Hop hop = HopFrom(fabric, *h, h->ports.front().number);
    if (hop.next != nullptr) rates.push_back(hop.capacity_gbps);
  }
  return rates.empty() ? 0 : Majority(rates);
}

// Loads per directed link of the flows over their paths.
std::map<std::string, LinkLoad> LoadsOf(const std::vector<Flow>& flows,
                                        const std::vector<std::vector<Hop>>& paths) {
  std::map<std::string, LinkLoad> loads;
  for (size_t i = 0; i < flows.size(); ++i) {
    for (const auto& hop : paths[i]) {
      LinkLoad& l = loads[hop.from + "->" + hop.to];
      l.from = hop.from;
      l.to = hop.to;
      l.capacity_gbps = hop.capacity_gbps;
      l.flows += flows[i].weight;
    }
  }
  return loads;
}

}  // namespace

std::vector<std::vector<Hop>> RoutedPaths(const Fabric& fabric, const std::vector<Flow>& flows,
                                          std::string* unroutable) {
  std::vector<std::vector<Hop>> paths;
  for (const auto& f : flows) {
    std::string why;
    paths.push_back(TraceRoute(fabric, *f.src, *f.dst, &why));
    if (!why.empty() && unroutable->empty()) *unroutable = why;
  }
  return paths;
}

namespace {

// Up and down links between each pair of adjacent switches.
using SwitchLinks = std::map<std::pair<std::string, std::string>, std::vector<Hop>>;

SwitchLinks LinksBetweenSwitches(const Fabric& fabric) {
  SwitchLinks between;
  for (const auto& node : fabric.nodes) {
    if (node.kind != NodeKind::kSwitch) continue;
    for (const auto& p : node.ports) {
      const Hop hop = HopFrom(fabric, node, p.number);
      if (hop.next != nullptr && hop.next->kind == NodeKind::kSwitch && p.state == "Active") {
        between[{node.name, hop.next->name}].push_back(hop);
      }
    }
  }
  return between;
}

// The leaf-spine-leaf hops whose busier link stays least loaded after adding `weight`.
std::vector<Hop> LeastLoaded(const SwitchLinks& between, const std::string& src_leaf,
                             const std::string& dst_leaf, double weight,
                             const std::map<std::string, double>& load) {
  auto level = [&](const Hop& hop) {
    const auto it = load.find(hop.from + "->" + hop.to);
    const double now = it == load.end() ? 0 : it->second;
    return (now + weight) / std::max(hop.capacity_gbps, 1e-9);
  };
  std::vector<Hop> best_pair;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [key, ups] : between) {
    if (key.first != src_leaf) continue;
    const auto downs = between.find({key.second, dst_leaf});
    if (downs == between.end()) continue;
    for (const auto& u : ups) {
      for (const auto& d : downs->second) {
        const double l = std::max(level(u), level(d));
        if (l < best) {
          best = l;
          best_pair = {u, d};
        }
      }
    }
  }
  return best_pair;
}

}  // namespace

std::vector<std::vector<Hop>> BalancedPaths(const Fabric& fabric, const std::vector<Flow>& flows) {
  const SwitchLinks between = LinksBetweenSwitches(fabric);
  std::map<std::string, double> load;
  std::vector<std::vector<Hop>> paths;
  for (const auto& f : flows) {
    std::vector<Hop> path;
    const Hop up = HopFrom(fabric, *f.src, f.src->ports.front().number);
    const Port& dst_port = f.dst->ports.front();
    const Hop into_dst = HopFrom(fabric, *f.dst, dst_port.number);
    if (up.next != nullptr && into_dst.next != nullptr) {
      path.push_back(up);
      if (up.next != into_dst.next) {
        for (const auto& hop :
             LeastLoaded(between, up.next->name, into_dst.next->name, f.weight, load)) {
          path.push_back(hop);
        }
      }
      path.push_back(HopFrom(fabric, *into_dst.next, dst_port.peer_port));
    }
    for (const auto& hop : path) load[hop.from + "->" + hop.to] += f.weight;
    paths.push_back(std::move(path));
  }
  return paths;
}

std::vector<Flow> CollectiveFlows(const std::vector<const Node*>& hosts, bool ring) {
  std::vector<Flow> flows;
  if (hosts.size() < 2) return flows;
  const double share = 1.0 / static_cast<double>(hosts.size() - 1);
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (ring) {
      flows.push_back(Flow{hosts[i], hosts[(i + 1) % hosts.size()], 1.0});
      continue;
    }
    for (size_t j = 0; j < hosts.size(); ++j) {
      if (i != j) flows.push_back(Flow{hosts[i], hosts[j], share});
    }
  }
  return flows;
}

namespace {

double Factor(const std::map<std::string, LinkLoad>& loads, double host_gbps) {
  double factor = 1;
  for (const auto& [name, l] : loads) {
    if (l.capacity_gbps > 0) factor = std::max(factor, l.flows * host_gbps / l.capacity_gbps);
  }
  return factor;
}

CollectiveLoad LoadOf(const Fabric& fabric, const std::string& collective,
                      const std::vector<Flow>& flows, double host_gbps) {
  CollectiveLoad load;
  load.collective = collective;
  const auto routed = LoadsOf(flows, RoutedPaths(fabric, flows, &load.unroutable));
  for (const auto& [name, l] : routed) load.links.push_back(l);
  std::sort(load.links.begin(), load.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    const double la = a.flows / std::max(a.capacity_gbps, 1e-9);
    const double lb = b.flows / std::max(b.capacity_gbps, 1e-9);
    if (la != lb) return la > lb;
    return NaturalLess(a.from, b.from);
  });
  load.limit_factor = Factor(routed, host_gbps);
  load.balanced_factor = Factor(LoadsOf(flows, BalancedPaths(fabric, flows)), host_gbps);
  return load;
}

}  // namespace

std::vector<const Node*> RingHosts(const Fabric& fabric, const std::vector<std::string>& names,
                                   std::vector<std::string>* missing) {
  std::vector<const Node*> hosts;
  if (names.empty()) {
    for (const auto& n : fabric.nodes) {
      if (n.kind == NodeKind::kHca && !n.ports.empty()) hosts.push_back(&n);
    }
    std::sort(hosts.begin(), hosts.end(),
              [](const Node* a, const Node* b) { return NaturalLess(a->name, b->name); });
    return hosts;
  }
  for (const auto& name : names) {
    const Node* n = fabric.FindByName(name);
    if (n != nullptr && n->kind == NodeKind::kHca && !n->ports.empty()) {
      hosts.push_back(n);
    } else if (missing != nullptr) {
      missing->push_back(name);
    }
  }
  return hosts;
}

RoutingAnalysis AnalyzeRouting(const Fabric& fabric, const std::vector<std::string>& names) {
  RoutingAnalysis analysis;
  analysis.balance = Balance(fabric);
  const auto hosts = RingHosts(fabric, names, nullptr);
  for (const Node* h : hosts) analysis.hosts.push_back(h->name);
  if (hosts.size() < 2 || fabric.tables.empty()) return analysis;
  const double host_gbps = HostGbps(fabric, hosts);
  const std::vector<Flow> ring = CollectiveFlows(hosts, true);
  const std::vector<Flow> alltoall = CollectiveFlows(hosts, false);
  analysis.ring = LoadOf(fabric, "all_reduce (ring)", ring, host_gbps);
  analysis.alltoall = LoadOf(fabric, "alltoall", alltoall, host_gbps);
  return analysis;
}

namespace {

std::string FactorText(const CollectiveLoad& load) {
  if (load.links.empty()) return load.collective + ": not routed";
  const LinkLoad& hot = load.links.front();
  return fmt::format(
      "{}: hottest link {} -> {} carries {:.3g} flows, limiting it to 1/{:.2f} of "
      "the host line rate (1/{:.2f} with balanced routes)",
      load.collective, hot.from, hot.to, hot.flows, load.limit_factor, load.balanced_factor);
}

}  // namespace

std::vector<Finding> RoutingFindings(const Fabric& fabric, const RoutingAnalysis& routing) {
  std::vector<Finding> out;
  std::map<std::string, int> per_spine;
  std::map<std::string, std::vector<std::string>> evidence;
  for (const auto& b : routing.balance) {
    const Node* from = fabric.FindByName(b.switch_name);
    if (from == nullptr || !IsLeaf(fabric, *from)) continue;
    per_spine[b.peer] += b.destinations;
    evidence[b.peer].push_back(
        fmt::format("{}: {} host destinations", PortName(b.switch_name, b.port), b.destinations));
  }
  if (fabric.tables.empty()) return out;
  bool unused = false;
  for (const auto& [spine, count] : per_spine) {
    if (count > 0) continue;
    unused = true;
    std::vector<std::string> lines = evidence[spine];
    lines.push_back(FactorText(routing.ring));
    lines.push_back(FactorText(routing.alltoall));
    out.push_back(
        {.severity = Severity::kCritical,
         .source = "unused-spine",
         .what = fmt::format("the forwarding tables send no host traffic through {}: "
                             "its links idle while the others carry everything (ring "
                             "all_reduce limited to 1/{:.2f}, all-to-all to 1/{:.2f})",
                             spine, routing.ring.limit_factor, routing.alltoall.limit_factor),
         .where = spine,
         .evidence = lines,
         .fix = "route with an engine that spreads over every spine (opensm -R ftree, "
                "or updn / minhop on a fat-tree), then re-run fabricscope fabric"});
  }
  for (const CollectiveLoad* load : {&routing.ring, &routing.alltoall}) {
    if (unused || load->links.empty()) continue;
    if (load->limit_factor <= load->balanced_factor * 1.25) continue;
    const LinkLoad& hot = load->links.front();
    out.push_back({.severity = Severity::kWarn,
                   .source = "route-imbalance",
                   .what = fmt::format("routed as programmed, {} is limited to 1/{:.2f} of the "
                                       "line rate by {} -> {}; balanced routes would give 1/{:.2f}",
                                       load->collective, load->limit_factor, hot.from, hot.to,
                                       load->balanced_factor),
                   .where = hot.from + " -> " + hot.to,
                   .evidence = {FactorText(*load)},
                   .fix = "re-route with a fat-tree aware engine (opensm -R ftree) or check the "
                          "uplinks of the switches involved"});
  }
  if (!routing.ring.unroutable.empty() || !routing.alltoall.unroutable.empty()) {
    const std::string why =
        routing.ring.unroutable.empty() ? routing.alltoall.unroutable : routing.ring.unroutable;
    out.push_back({.severity = Severity::kCritical,
                   .source = "unroutable",
                   .what = "a flow between two hosts cannot be routed: " + why,
                   .where = "forwarding tables",
                   .fix = "make the SM re-sweep (opensm: kill -HUP, or 'ibportstate' on a "
                          "changed port) and check its log"});
  }
  return out;
}

PairPath TracePair(const Fabric& fabric, const std::string& src, const std::string& dst,
                   const std::string& ibtracert, const std::string& origin) {
  PairPath path;
  path.src = src;
  path.dst = dst;
  const Node* a = fabric.FindByName(src);
  const Node* b = fabric.FindByName(dst);
  for (const auto& [name, node] : {std::pair{src, a}, std::pair{dst, b}}) {
    if (node == nullptr || node->kind != NodeKind::kHca || node->ports.empty()) {
      throw UsageError("--path names '" + name +
                       "', which is not an HCA of the fabric (give node descriptions as "
                       "iblinkinfo prints them, e.g. 'CA: NAME:')");
    }
  }
  for (const auto& hop : TraceRoute(fabric, *a, *b, &path.why)) {
    path.hops.push_back(hop.from + " -> " + hop.to);
  }
  // ibtracert: "From ca {GUID} portnum 1 lid 10-10 "h4"", then "[6] -> switch port
  // {GUID}[2] lid 2-2 "spine1"" per hop.
  static const std::regex from_re(R"re(^From \S+ \{[^}]*\} portnum (\d+) lid \S+ "(.*)"$)re");
  static const std::regex hop_re(
      R"re(^\[(\d+)\] -> \S+ port \{[^}]*\}\[(\d+)\] lid \S+ "(.*)"$)re");
  std::string at;
  std::vector<std::string> unused;
  ForEachLineSafe(ibtracert, origin, unused, [&](const std::string& line, size_t number) {
    std::smatch m;
    if (std::regex_match(line, m, from_re)) {
      at = m[2];
      path.evidence.push_back(Evidence(origin, number, line));
    } else if (std::regex_match(line, m, hop_re) && !at.empty()) {
      path.traced_hops.push_back(PortName(at, Int(m[1])) + " -> " + PortName(m[3], Int(m[2])));
      at = m[3];
      path.evidence.push_back(Evidence(origin, number, line));
    }
  });
  return path;
}

}  // namespace fabricscope::fabric
