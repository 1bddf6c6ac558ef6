// Routing of one connection through the fat-tree: up to the lowest common tier and down,
// each switch picking among its live equal-cost next hops by a seeded hash (ECMP) or by
// load (adaptive routing).
#include <string>

#include "fabricscope/fabric_sim.h"
#include "fabricscope/sim_hash.h"

namespace fabricscope::sim {
namespace {

// Picks one of `candidates`: by hash, or the least `cost`, ties broken in hash order.
template <typename Cost>
int Pick(const std::vector<int>& candidates, Routing routing, uint64_t hash, Cost cost) {
  const size_t start = hash % candidates.size();
  if (routing == Routing::kEcmp) return candidates[start];
  int best = candidates[start];
  double best_cost = cost(best);
  for (size_t i = 1; i < candidates.size(); ++i) {
    const int c = candidates[(start + i) % candidates.size()];
    const double v = cost(c);
    if (v < best_cost) {
      best = c;
      best_cost = v;
    }
  }
  return best;
}

}  // namespace

std::vector<int> Fabric::Route(int src_node, int src_rail, int dst_node, int dst_rail, uint64_t key,
                               Routing routing, uint64_t seed, const std::vector<double>& load,
                               std::string* why) const {
  const int plane = PlaneOf(src_rail);
  auto fail = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return std::vector<int>{};
  };
  if (PlaneOf(dst_rail) != plane) {
    return fail("rails " + std::to_string(src_rail) + " and " + std::to_string(dst_rail) +
                " are separate networks in a rail-only fabric");
  }
  auto alive = [&](int link) {
    return link >= 0 && links_[static_cast<size_t>(link)].capacity_gbs > 0;
  };
  auto cost = [&](int link) { return load.empty() ? 0.0 : load[static_cast<size_t>(link)]; };
  const int la = LeafOf(src_node, src_rail);
  const int lb = LeafOf(dst_node, dst_rail);
  std::vector<int> path = {NicLink(src_node, src_rail, true)};
  const int down = NicLink(dst_node, dst_rail, false);
  if (la == lb) {
    path.push_back(down);
    return path;
  }
  const std::string leaf_a = PlanePrefix(plane) + "leaf" + std::to_string(la);
  const std::string leaf_b = PlanePrefix(plane) + "leaf" + std::to_string(lb);
  const int pod_a = options_.tiers == 3 ? la / options_.leaves_per_pod : 0;
  const int pod_b = options_.tiers == 3 ? lb / options_.leaves_per_pod : 0;
  // Each switch hashes with its own identity mixed in, as switches do.
  const uint64_t leaf_hash = Mix(seed, key, 1 + static_cast<uint64_t>(plane) * 1000003 + la);

  std::vector<int> candidates;
  if (pod_a == pod_b) {
    for (int k = 0; k < up_; ++k) {
      if (alive(LeafLink(plane, la, k, true)) && alive(LeafLink(plane, lb, k, false))) {
        candidates.push_back(k);
      }
    }
    if (candidates.empty()) {
      return fail("every uplink path from " + leaf_a + " to " + leaf_b + " has failed");
    }
    const int k = Pick(candidates, routing, leaf_hash, [&](int c) {
      return cost(LeafLink(plane, la, c, true)) + cost(LeafLink(plane, lb, c, false));
    });
    path.push_back(LeafLink(plane, la, k, true));
    path.push_back(LeafLink(plane, lb, k, false));
    path.push_back(down);
    return path;
  }

  // Across pods: leaf -> aggregation k -> core (k, j) -> aggregation k of the other pod.
  auto core_ok = [&](int k, int j) {
    return alive(AggLink(plane, pod_a, k, j, true)) && alive(AggLink(plane, pod_b, k, j, false));
  };
  for (int k = 0; k < up_; ++k) {
    if (!alive(LeafLink(plane, la, k, true)) || !alive(LeafLink(plane, lb, k, false))) continue;
    for (int j = 0; j < agg_up_; ++j) {
      if (core_ok(k, j)) {
        candidates.push_back(k);
        break;
      }
    }
  }
  if (candidates.empty()) {
    return fail("every path from " + leaf_a + " (pod " + std::to_string(pod_a) + ") to " + leaf_b +
                " (pod " + std::to_string(pod_b) + ") has a failed link");
  }
  const int k = Pick(candidates, routing, leaf_hash, [&](int c) {
    return cost(LeafLink(plane, la, c, true)) + cost(LeafLink(plane, lb, c, false));
  });
  std::vector<int> cores;
  for (int j = 0; j < agg_up_; ++j) {
    if (core_ok(k, j)) cores.push_back(j);
  }
  const uint64_t agg_hash =
      Mix(seed, key,
          2 + static_cast<uint64_t>(plane) * 1000003 + static_cast<uint64_t>(pod_a) * 4099 + k);
  const int j = Pick(cores, routing, agg_hash, [&](int c) {
    return cost(AggLink(plane, pod_a, k, c, true)) + cost(AggLink(plane, pod_b, k, c, false));
  });
  path.push_back(LeafLink(plane, la, k, true));
  path.push_back(AggLink(plane, pod_a, k, j, true));
  path.push_back(AggLink(plane, pod_b, k, j, false));
  path.push_back(LeafLink(plane, lb, k, false));
  path.push_back(down);
  return path;
}

}  // namespace fabricscope::sim
