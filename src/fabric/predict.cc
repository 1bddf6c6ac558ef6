// The collective's busbw on a discovered fabric: flows routed through the forwarding tables
// (or balanced), shared max-min fairly over every link by the simulator's water-filling.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/fabric_routes.h"
#include "fabricscope/max_min.h"

namespace fabricscope::fabric {
namespace {

// Max-min rates of `flows` over `paths`; a ring is one coupled flow over all its hops (it
// moves at its slowest hop), an all-to-all one flow per pair.
RoutedPrediction Share(const std::vector<Flow>& flows, const std::vector<std::vector<Hop>>& paths,
                       bool ring, double efficiency, const std::string& routing) {
  std::map<std::string, int> link_id;
  std::vector<double> capacity;
  std::vector<std::string> names;
  sim::FlowSet set;
  std::vector<std::pair<int, double>> ring_entries;
  for (size_t i = 0; i < flows.size(); ++i) {
    std::vector<std::pair<int, double>> entries;
    for (const auto& hop : paths[i]) {
      const std::string name = hop.from + " -> " + hop.to;
      auto [it, added] = link_id.emplace(name, static_cast<int>(capacity.size()));
      if (added) {
        capacity.push_back(hop.capacity_gbps * efficiency / 8.0);
        names.push_back(name);
      }
      // A ring flow carries the full rate on every hop; an all-to-all flow its share.
      entries.emplace_back(it->second, ring ? 1.0 : flows[i].weight);
    }
    if (ring) {
      ring_entries.insert(ring_entries.end(), entries.begin(), entries.end());
    } else {
      set.Add(entries);
    }
  }
  if (ring) set.Add(ring_entries);
  std::vector<double> rates;
  sim::MaxMinWorkspace workspace;
  sim::MaxMinRates(capacity, set, std::vector<char>(set.size(), 1), rates, workspace);
  RoutedPrediction out;
  out.routing = routing;
  // The slowest flow sets the collective's pace; per unit of weight for an all-to-all.
  double slowest = std::numeric_limits<double>::infinity();
  for (size_t f = 0; f < set.size(); ++f) slowest = std::min(slowest, rates[f]);
  if (!std::isfinite(slowest)) return out;
  // busbw: a ring hop's rate; for an all-to-all, (n-1) flows of weight 1/(n-1) each -> the
  // per-weight rate is a host's send rate.
  out.busbw_gbs = slowest;
  // The bottleneck: on the slowest flow's path, the link with the most flow per capacity.
  size_t slow = 0;
  for (size_t f = 0; f < set.size(); ++f) {
    if (rates[f] < rates[slow]) slow = f;
  }
  std::vector<double> coef_sum(capacity.size(), 0);
  for (size_t i = 0; i < set.links.size(); ++i) {
    coef_sum[static_cast<size_t>(set.links[i])] += set.coefs[i];
  }
  double tightest = -1;
  for (size_t i = set.offsets[slow]; i < set.offsets[slow + 1]; ++i) {
    const auto l = static_cast<size_t>(set.links[i]);
    const double level = coef_sum[l] / capacity[l];
    if (level > tightest + 1e-12) {
      tightest = level;
      out.bottleneck = names[l];
      out.bottleneck_flows = coef_sum[l];
    }
  }
  return out;
}

}  // namespace

FabricPrediction PredictOnFabric(const Fabric& fabric, const PredictOptions& options) {
  const bool ring = options.collective == "all_reduce";
  if (!ring && options.collective != "alltoall") {
    throw UsageError("--fabric predicts all_reduce (ring) or alltoall, not '" + options.collective +
                     "'");
  }
  if (fabric.tables.empty()) {
    throw UsageError(
        "the fabric directory has no forwarding tables: save 'dump_fts' output as "
        "dump_fts.txt beside iblinkinfo.txt");
  }
  std::vector<std::string> missing;
  const auto hosts = RingHosts(fabric, options.hosts, &missing);
  if (!missing.empty()) {
    throw UsageError("--hosts names " + missing.front() + ", which is not an HCA of the fabric");
  }
  if (hosts.size() < 2) throw UsageError("the fabric has fewer than two hosts to run a collective");
  FabricPrediction p;
  p.collective = ring ? "all_reduce (ring)" : "alltoall";
  for (const Node* h : hosts) p.hosts.push_back(h->name);
  const auto flows = CollectiveFlows(hosts, ring);
  const auto routed = RoutedPaths(fabric, flows, &p.unroutable);
  const Hop first = HopFrom(fabric, *hosts.front(), hosts.front()->ports.front().number);
  p.host_gbs = first.capacity_gbps * options.efficiency / 8.0;
  if (p.unroutable.empty()) {
    p.as_routed = Share(flows, routed, ring, options.efficiency, "as routed");
  } else {
    p.as_routed.routing = "as routed";
  }
  p.balanced = Share(flows, BalancedPaths(fabric, flows), ring, options.efficiency, "balanced");
  return p;
}

std::string FormatPredictionText(const FabricPrediction& p) {
  std::string out = fmt::format(
      "# fabricscope model --fabric: {} over {} hosts, host link {:.2f} GB/s\n"
      "# {:<10} {:>12} {:>8}  {}\n",
      p.collective, p.hosts.size(), p.host_gbs, "routing", "busbw(GB/s)", "of host", "bottleneck");
  for (const RoutedPrediction* r : {&p.as_routed, &p.balanced}) {
    if (r->busbw_gbs <= 0) {
      out += fmt::format("  {:<10} {:>12} {:>8}  {}\n", r->routing, "-", "-", p.unroutable);
      continue;
    }
    out +=
        fmt::format("  {:<10} {:>12.2f} {:>7.0f}%  {} ({:.3g} flows)\n", r->routing, r->busbw_gbs,
                    100.0 * r->busbw_gbs / p.host_gbs, r->bottleneck, r->bottleneck_flows);
  }
  return out;
}

std::string FormatPredictionJson(const FabricPrediction& p) {
  auto routed = [](const RoutedPrediction& r) {
    return nlohmann::json{{"routing", r.routing},
                          {"busbw_gbs", r.busbw_gbs},
                          {"bottleneck", r.bottleneck},
                          {"bottleneck_flows", r.bottleneck_flows}};
  };
  return nlohmann::json{{"collective", p.collective},       {"hosts", p.hosts},
                        {"host_gbs", p.host_gbs},           {"unroutable", p.unroutable},
                        {"as_routed", routed(p.as_routed)}, {"balanced", routed(p.balanced)}}
             .dump(2) +
         "\n";
}

}  // namespace fabricscope::fabric
