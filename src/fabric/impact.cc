// What the fabric does to one job: its collective's flows routed through the forwarding
// tables, the findings that lie on those routes, and the busbw the simulator predicts.
#include <algorithm>
#include <set>
#include <string_view>

#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/fabric_links.h"

namespace fabricscope::fabric {
namespace {

// The ports ("leaf1[5]") and nodes ("leaf1", "h3") the job's flows cross.
struct JobFootprint {
  std::set<std::string> ports;
  std::set<std::string> nodes;
};

std::string NodeOfPort(const std::string& port) { return port.substr(0, port.find('[')); }

JobFootprint FootprintOf(const JobImpact& job) {
  JobFootprint f;
  for (const LinkLoad& l : job.load.links) {
    if (l.flows <= 0) continue;
    for (const std::string& port : {l.from, l.to}) {
      f.ports.insert(port);
      f.nodes.insert(NodeOfPort(port));
    }
  }
  for (const std::string& h : job.hosts) f.nodes.insert(h);
  return f;
}

// The "A[p]" parts of a finding's where ("leaf1[5] <-> spine1[1]", "leaf1[5] -> spine1[1]",
// "leaf1[7]"); no parts for one that names no port.
std::vector<std::string> PortsOf(const std::string& subject) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < subject.size()) {
    const size_t close = subject.find(']', start);
    if (close == std::string::npos) break;
    const size_t open = subject.rfind('[', close);
    if (open == std::string::npos || open < start) break;
    size_t begin = subject.rfind(' ', open);
    begin = begin == std::string::npos || begin < start ? start : begin + 1;
    out.push_back(subject.substr(begin, close + 1 - begin));
    start = close + 1;
  }
  return out;
}

// Whether `text` names one of the nodes' ports ("leaf1[" but not "leaf10[").
bool NamesPortOf(const std::string& text, const std::set<std::string>& nodes) {
  return std::any_of(nodes.begin(), nodes.end(), [&](const std::string& n) {
    size_t at = text.find(n + "[");
    while (at != std::string::npos) {
      const bool starts = at == 0 || text[at - 1] == ' ' || text[at - 1] == ',';
      if (starts) return true;
      at = text.find(n + "[", at + 1);
    }
    return false;
  });
}

bool OnLinksOrPorts(const Finding& f, const JobFootprint& job) {
  const auto ports = PortsOf(f.where);
  if (ports.empty()) return false;
  if (std::any_of(ports.begin(), ports.end(),
                  [&](const std::string& p) { return job.ports.contains(p); })) {
    return true;
  }
  // A link the job does not use between two switches it does (the twin of a link down, a
  // degraded parallel link), or a down port of one of its switches: capacity it lost.
  return CategoryOf(f.source) == "link" &&
         std::all_of(ports.begin(), ports.end(),
                     [&](const auto& p) { return job.nodes.contains(NodeOfPort(p)); });
}

// Whether a finding bears on the job: it names a link, port or switch the job's flows cross.
bool OnPath(const Finding& f, const JobImpact& impact, const JobFootprint& job) {
  const std::string_view category = CategoryOf(f.source);
  if (category == "subnet-manager") return true;
  if (f.source == "unroutable") return !impact.load.unroutable.empty();
  if (f.source == "unused-spine") return impact.load.limit_factor > 1 + 1e-9;
  if (f.source == "hosts-per-leaf" || f.source == "missing-host") return false;
  if (f.source == "dead-node") {
    return !impact.load.unroutable.empty() || NamesPortOf(f.what, job.nodes);
  }
  if (category == "cabling") return job.nodes.contains(f.where.substr(0, f.where.find(' ')));
  return OnLinksOrPorts(f, job);
}

// Whether the finding names the hottest link (either direction, either end).
bool NamesHottest(const Finding& f, const JobImpact& job) {
  if (job.load.links.empty()) return false;
  const LinkLoad& hot = job.load.links.front();
  const auto ports = PortsOf(f.where);
  return std::any_of(ports.begin(), ports.end(),
                     [&](const std::string& p) { return p == hot.from || p == hot.to; }) ||
         (f.source == "route-imbalance" && f.where == hot.from + " -> " + hot.to);
}

}  // namespace

double JobImpact::RoutedFraction() const {
  if (prediction && prediction->host_gbs > 0) {
    return prediction->as_routed.busbw_gbs / prediction->host_gbs;
  }
  return load.limit_factor > 0 ? 1.0 / load.limit_factor : 1.0;
}

std::vector<std::string> HcasOfHosts(const Fabric& fabric, const std::vector<std::string>& hosts,
                                     std::vector<std::string>* missing) {
  std::vector<std::string> out;
  for (const std::string& host : hosts) {
    const Node* exact = fabric.FindByName(host);
    if (exact != nullptr && exact->kind == NodeKind::kHca) {
      out.push_back(exact->name);
      continue;
    }
    const auto prefixed = std::find_if(
        fabric.nodes.begin(), fabric.nodes.end(),
        [&](const Node& n) { return n.kind == NodeKind::kHca && n.name.starts_with(host + " "); });
    if (prefixed != fabric.nodes.end()) {
      out.push_back(prefixed->name);
    } else if (missing != nullptr) {
      missing->push_back(host);
    }
  }
  return out;
}

JobImpact ImpactOnJob(const FabricReport& report, const std::vector<std::string>& hosts,
                      bool ring) {
  JobImpact job;
  const Fabric& fabric = report.fabric;
  std::vector<std::string> hcas = HcasOfHosts(fabric, hosts, &job.missing);
  job.hosts_from = "the run's host names";
  if (hosts.empty() || !job.missing.empty() || hcas.size() < 2) {
    hcas.clear();
    job.hosts_from = "every HCA of the fabric";
  }
  const RoutingAnalysis routing = AnalyzeRouting(fabric, hcas);
  job.hosts = routing.hosts;
  job.load = ring ? routing.ring : routing.alltoall;
  job.collective = ring ? "all_reduce (ring)" : "alltoall";
  try {
    job.prediction = PredictOnFabric(fabric, {job.hosts, ring ? "all_reduce" : "alltoall", 1.0});
  } catch (const UsageError& e) {
    job.prediction_error = e.what();
  }
  const JobFootprint footprint = FootprintOf(job);
  for (const Finding& f : report.findings) {
    (OnPath(f, job, footprint) ? job.on_path : job.elsewhere).push_back(f);
  }
  // The finding on the hottest link leads: it is the one that sets the collective's pace.
  std::stable_partition(job.on_path.begin(), job.on_path.end(),
                        [&](const Finding& f) { return NamesHottest(f, job); });
  return job;
}

}  // namespace fabricscope::fabric
