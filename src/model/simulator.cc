// The flow-level event loop: fair rates, advance to the next flow that finishes, repeat;
// then times, bandwidths and the load every link carried.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/fabric_sim.h"
#include "fabricscope/max_min.h"
#include "model/flows.h"

namespace fabricscope::sim {
namespace {

// A flow is done when less than this share of its bytes is left (rounding of rate x time).
constexpr double kDoneFraction = 1e-9;

std::vector<std::vector<int>> GroupsOf(const Fabric& fabric, const SimOptions& options) {
  const int nodes = fabric.options().nodes;
  if (options.groups.empty()) {
    std::vector<int> all(static_cast<size_t>(nodes));
    for (int i = 0; i < nodes; ++i) all[static_cast<size_t>(i)] = i;
    return {all};
  }
  std::vector<char> used(static_cast<size_t>(nodes), 0);
  for (size_t g = 0; g < options.groups.size(); ++g) {
    if (options.groups[g].empty()) {
      throw UsageError("group " + std::to_string(g) + " has no node");
    }
    for (int n : options.groups[g]) {
      if (n < 0 || n >= nodes) {
        throw UsageError("group " + std::to_string(g) + " names node " + std::to_string(n) +
                         ", but the fabric has nodes 0.." + std::to_string(nodes - 1));
      }
      if (used[static_cast<size_t>(n)]) {
        throw UsageError(
            "node " + std::to_string(n) +
            " is in two groups (or twice in one): a GPU runs one collective at a time");
      }
      used[static_cast<size_t>(n)] = 1;
    }
  }
  return options.groups;
}

// The failed link that holds a flow at rate 0.
std::string StallReason(const Fabric& fabric, const FlowSet& flows, size_t f) {
  for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
    const Link& link = fabric.link(static_cast<size_t>(flows.links[i]));
    if (link.capacity_gbs <= 0) {
      return "link " + link.Name() + " has failed and the traffic over it has no other path";
    }
  }
  return "a flow gets no bandwidth";
}

void CheckOptions(const SimOptions& options) {
  if (options.bytes == 0) throw UsageError("the simulated size must be positive");
  if (options.qps_per_connection < 1 || options.qps_per_connection > 64) {
    throw UsageError("--qps must be between 1 and 64");
  }
  if (options.channels < 0 || options.channels > 256) {
    throw UsageError("--channels must be between 1 and 256 (0 = two per NIC)");
  }
  if (options.in_network_reduction && options.collective != Collective::kAllReduce) {
    throw UsageError("in-network reduction (--in-network) applies to all_reduce only");
  }
}

// Where the event loop left the flows and links.
struct Progress {
  std::vector<double> remaining;  // bytes per flow not yet moved
  std::vector<double> finish_us;  // per flow
  std::vector<double> peak;       // the highest concurrent rate per link
};

// The event loop: fair rates, advance to the next flow that finishes, repeat; stops (and
// marks `result` stalled) when a flow gets no bandwidth.
Progress RunEvents(const Fabric& fabric, const FlowPlan& plan, SimResult& result) {
  const size_t nlinks = fabric.link_count();
  std::vector<double> capacity(nlinks);
  for (size_t l = 0; l < nlinks; ++l) capacity[l] = fabric.link(l).capacity_gbs;
  const size_t nflows = plan.flows.size();
  Progress p{plan.bytes, std::vector<double>(nflows, 0.0), std::vector<double>(nlinks, 0.0)};
  std::vector<char> active(nflows, 1);
  std::vector<double> rates;
  std::vector<double> load(nlinks, 0.0);
  MaxMinWorkspace workspace;
  double now_us = 0;
  size_t left = nflows;
  while (left > 0 && !result.stalled) {
    MaxMinRates(capacity, plan.flows, active, rates, workspace);
    ++result.events;
    std::fill(load.begin(), load.end(), 0.0);
    double step_us = std::numeric_limits<double>::infinity();
    for (size_t f = 0; f < nflows; ++f) {
      if (!active[f]) continue;
      if (!(rates[f] > 0)) {
        result.stalled = true;
        result.stall_reason = StallReason(fabric, plan.flows, f);
        break;
      }
      // GB/s = 1e3 bytes/us.
      step_us = std::min(step_us, p.remaining[f] / (rates[f] * 1e3));
      for (size_t i = plan.flows.offsets[f]; i < plan.flows.offsets[f + 1]; ++i) {
        load[static_cast<size_t>(plan.flows.links[i])] += plan.flows.coefs[i] * rates[f];
      }
    }
    if (result.stalled) break;
    for (size_t l = 0; l < nlinks; ++l) p.peak[l] = std::max(p.peak[l], load[l]);
    if (!std::isfinite(step_us)) step_us = 0;  // flows without links finish at once
    now_us += step_us;
    for (size_t f = 0; f < nflows; ++f) {
      if (!active[f]) continue;
      p.remaining[f] -= std::isfinite(rates[f]) ? rates[f] * 1e3 * step_us : p.remaining[f];
      if (p.remaining[f] <= kDoneFraction * plan.bytes[f]) {
        active[f] = 0;
        p.finish_us[f] = now_us;
        --left;
      }
    }
  }
  return p;
}

// Times and bandwidths per group and overall: the slowest group sets the collective's.
void SummarizeGroups(const Fabric& fabric, const SimOptions& options,
                     const std::vector<std::vector<int>>& groups, const FlowPlan& plan,
                     const Progress& progress, SimResult& result) {
  const auto& fo = fabric.options();
  const CollectiveSpec& spec = SpecOf(options.collective);
  const double inf = std::numeric_limits<double>::infinity();
  result.groups.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    result.groups[g].nranks = static_cast<int>(groups[g].size()) * fo.gpus_per_node;
  }
  std::vector<double> transfer(groups.size(), 0.0);
  for (size_t f = 0; f < plan.flows.size(); ++f) {
    const auto g = static_cast<size_t>(plan.group[f]);
    transfer[g] = std::max(transfer[g], result.stalled ? inf : progress.finish_us[f]);
  }
  const double bytes = static_cast<double>(options.bytes);
  for (size_t g = 0; g < groups.size(); ++g) {
    GroupResult& gr = result.groups[g];
    gr.time_us = options.latency_us + transfer[g];
    gr.algbw = gr.time_us > 0 && std::isfinite(gr.time_us) ? bytes / (1e3 * gr.time_us) : 0;
    gr.busbw = gr.algbw * spec.bus_factor(gr.nranks);
    result.transfer_us = std::max(result.transfer_us, transfer[g]);
  }
  result.time_us = options.latency_us + result.transfer_us;
  const auto slowest = std::max_element(
      result.groups.begin(), result.groups.end(),
      [](const GroupResult& a, const GroupResult& b) { return a.time_us < b.time_us; });
  result.algbw = slowest->algbw;
  result.busbw = slowest->busbw;
}

// The links that carried traffic, busiest first, and the load per tier.
void SummarizeLinks(const Fabric& fabric, const FlowPlan& plan, const Progress& progress,
                    SimResult& result) {
  const size_t nlinks = fabric.link_count();
  std::vector<double> carried(nlinks, 0.0);
  for (size_t f = 0; f < plan.flows.size(); ++f) {
    const double moved = plan.bytes[f] - std::max(0.0, progress.remaining[f]);
    for (size_t i = plan.flows.offsets[f]; i < plan.flows.offsets[f + 1]; ++i) {
      carried[static_cast<size_t>(plan.flows.links[i])] += plan.flows.coefs[i] * moved;
    }
  }
  constexpr size_t kTiers = 7;
  result.tiers.resize(kTiers);
  for (size_t t = 0; t < kTiers; ++t) result.tiers[t].tier = static_cast<LinkTier>(t);
  for (size_t l = 0; l < nlinks; ++l) {
    const Link& link = fabric.link(l);
    TierLoad& tier = result.tiers[static_cast<size_t>(link.tier)];
    ++tier.links;
    if (plan.link_connections[l] <= 0 && carried[l] <= 0) continue;
    LinkLoad ll;
    ll.link = l;
    ll.name = link.Name();
    ll.tier = link.tier;
    ll.capacity_gbs = link.capacity_gbs;
    ll.peak_gbs = progress.peak[l];
    ll.utilization = link.capacity_gbs > 0 ? progress.peak[l] / link.capacity_gbs : 0;
    ll.gigabytes = carried[l] / 1e9;
    ll.connections = plan.link_connections[l];
    ++tier.used;
    tier.max_utilization = std::max(tier.max_utilization, ll.utilization);
    tier.mean_utilization += ll.utilization;
    tier.max_connections = std::max(tier.max_connections, ll.connections);
    result.links.push_back(std::move(ll));
  }
  for (auto& tier : result.tiers) {
    if (tier.used > 0) tier.mean_utilization /= static_cast<double>(tier.used);
  }
  result.tiers.erase(std::remove_if(result.tiers.begin(), result.tiers.end(),
                                    [](const TierLoad& t) { return t.links == 0; }),
                     result.tiers.end());
  std::stable_sort(result.links.begin(), result.links.end(),
                   [](const LinkLoad& a, const LinkLoad& b) {
                     if (a.utilization != b.utilization) return a.utilization > b.utilization;
                     return a.connections > b.connections;
                   });
}

}  // namespace

SimResult Simulate(const Fabric& fabric, const SimOptions& options) {
  CheckOptions(options);
  const auto groups = GroupsOf(fabric, options);
  const FlowPlan plan = PlanFlows(fabric, options, groups);

  SimResult result;
  result.latency_us = options.latency_us;
  result.flows = plan.flows.size();
  result.connections = plan.connections;
  result.link_uses = plan.flows.links.size();
  if (!plan.unroutable.empty()) {
    result.stalled = true;
    result.stall_reason = plan.unroutable;
  }
  const Progress progress = RunEvents(fabric, plan, result);
  SummarizeGroups(fabric, options, groups, plan, progress, result);
  SummarizeLinks(fabric, plan, progress, result);
  return result;
}

}  // namespace fabricscope::sim
