#include "model/flows.h"

#include <algorithm>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/sim_hash.h"

namespace fabricscope::sim {
namespace {

using Entries = std::vector<std::pair<int, double>>;

// Builds flows and keeps the running connection count per link (balanced routing reads it).
class Planner {
 public:
  Planner(const Fabric& fabric, const SimOptions& options) : fabric_(fabric), options_(options) {
    plan_.link_connections.assign(fabric.link_count(), 0.0);
  }

  // An NVLink hop inside a node (nothing when NVLink is not modelled).
  void NvlinkHop(Entries& e, int node, int from_gpu, int to_gpu) const {
    const int up = fabric_.GpuLink(node, from_gpu, true);
    if (up < 0) return;
    e.emplace_back(up, 1.0);
    e.emplace_back(fabric_.GpuLink(node, to_gpu, false), 1.0);
  }

  // A connection between NICs, split over the QPs (each hashed on its own).
  void NetHop(Entries& e, int src, int dst, int rail, uint64_t group, uint64_t channel,
              uint64_t hop) {
    const int qps = options_.qps_per_connection;
    const double share = 1.0 / qps;
    for (int q = 0; q < qps; ++q) {
      std::string why;
      const uint64_t key = ConnectionKey(group, channel, hop, static_cast<uint64_t>(q));
      const std::vector<int> path = fabric_.Route(src, rail, dst, rail, key, options_.routing,
                                                  options_.seed, plan_.link_connections, &why);
      ++plan_.connections;
      if (path.empty()) {
        if (plan_.unroutable.empty()) {
          plan_.unroutable = "node " + std::to_string(src) + " NIC " + std::to_string(rail) +
                             " cannot reach node " + std::to_string(dst) + ": " + why;
        }
        continue;
      }
      for (int link : path) {
        e.emplace_back(link, share);
        plan_.link_connections[static_cast<size_t>(link)] += share;
      }
    }
  }

  void AddFlow(Entries entries, double bytes, int group) {
    plan_.flows.Add(std::move(entries));
    plan_.bytes.push_back(bytes);
    plan_.group.push_back(group);
  }

  // Ring (closed) or chain (rooted collectives) channels over the nodes of a group.
  void Rings(const std::vector<int>& nodes, int g, double bytes_per_channel, bool closed,
             int channels) {
    const auto& fo = fabric_.options();
    const int ppn = fo.gpus_per_node;
    const int nics = fo.nics_per_node;
    const int count = static_cast<int>(nodes.size());
    for (int c = 0; c < channels; ++c) {
      const int rail = c % nics;
      const int entry_gpu = rail * ppn / nics;  // the GPU next to the channel's NIC
      Entries e;
      for (int node : nodes) {
        for (int i = 0; i + 1 < ppn; ++i) {
          NvlinkHop(e, node, (entry_gpu + i) % ppn, (entry_gpu + i + 1) % ppn);
        }
        if (count == 1 && ppn > 1 && closed) {
          NvlinkHop(e, node, (entry_gpu + ppn - 1) % ppn, entry_gpu);
        }
      }
      const int hops = count == 1 ? 0 : closed ? count : count - 1;
      for (int h = 0; h < hops; ++h) {
        NetHop(e, nodes[static_cast<size_t>(h)], nodes[static_cast<size_t>((h + 1) % count)], rail,
               static_cast<uint64_t>(g), static_cast<uint64_t>(c), static_cast<uint64_t>(h));
      }
      AddFlow(std::move(e), bytes_per_channel, g);
    }
  }

  // SHARP: each node's NIC sends its data up a tree of switches and receives the result.
  void AggregationTrees(const std::vector<int>& nodes, int g, double bytes_per_channel,
                        int channels) {
    const auto& fo = fabric_.options();
    const int nics = fo.nics_per_node;
    for (int c = 0; c < channels; ++c) {
      const int rail = c % nics;
      const int plane = fabric_.PlaneOf(rail);
      Entries e;
      std::vector<int> leaves;
      for (int node : nodes) {
        e.emplace_back(fabric_.NicLink(node, rail, true), 1.0);
        e.emplace_back(fabric_.NicLink(node, rail, false), 1.0);
        plan_.link_connections[static_cast<size_t>(fabric_.NicLink(node, rail, true))] += 1;
        plan_.link_connections[static_cast<size_t>(fabric_.NicLink(node, rail, false))] += 1;
        leaves.push_back(fabric_.LeafOf(node, rail));
      }
      ++plan_.connections;
      std::sort(leaves.begin(), leaves.end());
      leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
      if (leaves.size() > 1 && !TreeAbove(e, leaves, plane, g, c)) {
        if (plan_.unroutable.empty()) {
          plan_.unroutable = "channel " + std::to_string(c) +
                             ": no aggregation switch reaches every leaf over live links";
        }
      }
      AddFlow(std::move(e), bytes_per_channel, g);
    }
  }

  FlowPlan Take() { return std::move(plan_); }

 private:
  bool Alive(int link) const {
    return link >= 0 && fabric_.link(static_cast<size_t>(link)).capacity_gbs > 0;
  }

  // The switches above `leaves` that join them: one aggregation index k in every pod
  // (the spine k on 2 tiers), and one core (k, j) when they span pods.
  bool TreeAbove(Entries& e, const std::vector<int>& leaves, int plane, int g, int c) {
    const auto& fo = fabric_.options();
    const int per_pod = fo.tiers == 3 ? fo.leaves_per_pod : 1 << 30;
    std::vector<int> pods;
    pods.reserve(leaves.size());
    for (int leaf : leaves) pods.push_back(leaf / per_pod);
    pods.erase(std::unique(pods.begin(), pods.end()), pods.end());
    const int cores_per_group =
        fabric_.spines_per_plane() > 0 ? fabric_.cores_per_plane() / fabric_.spines_per_plane() : 0;
    const uint64_t h =
        Mix(options_.seed,
            ConnectionKey(static_cast<uint64_t>(g), static_cast<uint64_t>(c), 0xffff, 0), 7);
    const int up = fabric_.spines_per_plane();
    for (int t = 0; t < up; ++t) {
      const int k = static_cast<int>((h + static_cast<uint64_t>(t)) % static_cast<uint64_t>(up));
      bool ok = true;
      for (int leaf : leaves) {
        ok = ok && Alive(fabric_.LeafLink(plane, leaf, k, true)) &&
             Alive(fabric_.LeafLink(plane, leaf, k, false));
      }
      if (!ok) continue;
      int core = -1;
      if (pods.size() > 1) {
        for (int s = 0; s < cores_per_group && core < 0; ++s) {
          const int j = static_cast<int>((h / 7 + static_cast<uint64_t>(s)) %
                                         static_cast<uint64_t>(cores_per_group));
          bool all = true;
          for (int pod : pods) {
            all = all && Alive(fabric_.AggLink(plane, pod, k, j, true)) &&
                  Alive(fabric_.AggLink(plane, pod, k, j, false));
          }
          if (all) core = j;
        }
        if (core < 0) continue;
      }
      auto use = [&](int link) {
        e.emplace_back(link, 1.0);
        plan_.link_connections[static_cast<size_t>(link)] += 1;
      };
      for (int leaf : leaves) {
        use(fabric_.LeafLink(plane, leaf, k, true));
        use(fabric_.LeafLink(plane, leaf, k, false));
      }
      if (core >= 0) {
        for (int pod : pods) {
          use(fabric_.AggLink(plane, pod, k, core, true));
          use(fabric_.AggLink(plane, pod, k, core, false));
        }
      }
      return true;
    }
    return false;
  }

  const Fabric& fabric_;
  const SimOptions& options_;
  FlowPlan plan_;
};

}  // namespace

FlowPlan PlanFlows(const Fabric& fabric, const SimOptions& options,
                   const std::vector<std::vector<int>>& groups) {
  const auto& fo = fabric.options();
  const int channels = options.channels > 0 ? options.channels : std::max(2, 2 * fo.nics_per_node);
  const double s = static_cast<double>(options.bytes);
  Planner planner(fabric, options);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& nodes = groups[gi];
    const int g = static_cast<int>(gi);
    const double n = static_cast<double>(nodes.size()) * fo.gpus_per_node;
    const double per_channel = s / channels;
    switch (options.collective) {
      case Collective::kAllReduce:
        if (options.in_network_reduction && nodes.size() > 1) {
          planner.AggregationTrees(nodes, g, per_channel, channels);
        } else {
          planner.Rings(nodes, g, 2 * (n - 1) / n * per_channel, true, channels);
        }
        break;
      case Collective::kAllGather:
      case Collective::kReduceScatter:
        planner.Rings(nodes, g, (n - 1) / n * per_channel, true, channels);
        break;
      case Collective::kBroadcast:
      case Collective::kReduce:
        planner.Rings(nodes, g, per_channel, false, channels);
        break;
      case Collective::kSendRecv: {
        const int count = static_cast<int>(nodes.size());
        const int ppn = fo.gpus_per_node;
        for (int i = 0; i < count; ++i) {
          const int shift = ((options.peer_shift % count) + count) % count;
          const int src = nodes[static_cast<size_t>(i)];
          const int dst = nodes[static_cast<size_t>((i + shift) % count)];
          for (int gpu = 0; gpu < ppn; ++gpu) {
            Entries e;
            if (src == dst) {
              planner.NvlinkHop(e, src, gpu, (gpu + 1) % ppn);
            } else {
              planner.NetHop(e, src, dst, gpu * fo.nics_per_node / ppn, static_cast<uint64_t>(g),
                             static_cast<uint64_t>(gpu), static_cast<uint64_t>(i));
            }
            planner.AddFlow(std::move(e), s, g);
          }
        }
        break;
      }
      default:
        throw UsageError(
            "the simulator breaks all_reduce, all_gather, reduce_scatter, "
            "broadcast, reduce and sendrecv into flows; " +
            std::string(SpecOf(options.collective).name) + " is not one of them");
    }
  }
  return planner.Take();
}

}  // namespace fabricscope::sim
