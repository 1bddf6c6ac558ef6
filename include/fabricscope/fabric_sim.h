// A flow-level simulator of GPU-cluster fabrics: fat-trees of 2 or 3 tiers with
// oversubscription, rail-optimized and rail-only designs, seeded ECMP hashing, failed and
// degraded links, in-network reduction; collectives broken into the flows NCCL generates
// and shared max-min fairly over the links.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/collective.h"

namespace fabricscope::sim {

// How NICs meet the first switch tier.
enum class FabricDesign {
  kClassic,        // a node's NICs on consecutive ports of its leaf (top-of-rack)
  kRailOptimized,  // NIC r of every node of a scalable unit on that unit's rail-r leaf
  kRailOnly,       // as rail-optimized, but each rail is a network of its own
};

// How a switch picks among equal-cost next hops.
enum class Routing {
  kEcmp,      // a seeded hash of the connection: collisions happen as on real switches
  kBalanced,  // the least-loaded next hop: adaptive routing, or a perfect hash
};

// Where a link sits, for per-tier load summaries.
enum class LinkTier { kNvlink, kNicUp, kNicDown, kLeafUp, kLeafDown, kAggUp, kAggDown };

std::string_view DesignName(FabricDesign design);  // "classic", "rail-optimized", "rail-only"
std::string_view RoutingName(Routing routing);     // "ecmp", "balanced"
std::string_view TierName(LinkTier tier);          // "nvlink", "nic-up", ...
FabricDesign ParseDesign(std::string_view name);   // throw UsageError listing the names
Routing ParseRouting(std::string_view name);

// The shape of the cluster and its network.
struct FabricOptions {
  int nodes = 2;
  int gpus_per_node = 8;
  int nics_per_node = 8;
  double nic_gbs = 50;    // GB/s one NIC carries per direction (line rate x efficiency)
  double uplink_gbs = 0;  // GB/s of a switch-to-switch link; 0: nic_gbs
  double nvlink_gbs = 0;  // GB/s a GPU sends into its node's ring; 0: not modelled
  int tiers = 2;          // 2: leaf-spine; 3: leaf-aggregation-core in pods
  FabricDesign design = FabricDesign::kRailOptimized;
  int leaf_ports = 32;               // NIC-facing ports of a leaf
  double leaf_oversubscription = 1;  // leaf down:up ports
  int leaves_per_pod = 32;           // 3 tiers
  double pod_oversubscription = 1;   // aggregation down:up ports (3 tiers)
};

// One directed link.
struct Link {
  std::string from;
  std::string to;
  LinkTier tier = LinkTier::kNicUp;
  double nominal_gbs = 0;
  double capacity_gbs = 0;  // after faults; 0 = failed
  std::string Name() const { return from + "->" + to; }
};

// The topology graph: switches are implicit in the links; routing is structural.
class Fabric {
 public:
  // Throws UsageError for a shape that cannot be built.
  explicit Fabric(const FabricOptions& options);

  const FabricOptions& options() const { return options_; }
  size_t link_count() const { return links_.size(); }
  const Link& link(size_t id) const { return links_[id]; }
  const std::vector<Link>& links() const { return links_; }
  size_t switch_count() const { return switches_; }
  // "a->b"; empty when there is no such link.
  std::optional<size_t> FindLink(std::string_view name) const;

  // Multiplies the capacity of "a->b", or of both directions of "a-b", by `factor` (0 fails
  // it: routing avoids it where another equal-cost path exists). Throws UsageError naming
  // an example of the link names when `name` is unknown.
  void DegradeLink(std::string_view name, double factor);
  // A slow node: every NIC link of `node`, both directions, at `factor` of its capacity.
  void SlowNode(int node, double factor);

  // Routing of one connection between NICs (node, rail) of the same plane: the link ids,
  // or empty with `why` set when every path has failed.
  std::vector<int> Route(int src_node, int src_rail, int dst_node, int dst_rail, uint64_t key,
                         Routing routing, uint64_t seed, const std::vector<double>& load,
                         std::string* why) const;
  // Planes are independent networks: one, or one per rail (rail-only).
  int PlaneOf(int rail) const;
  int NicLink(int node, int rail, bool up) const;
  int GpuLink(int node, int gpu, bool up) const;  // -1 when NVLink is not modelled
  // The leaf a NIC attaches to (index within its plane).
  int LeafOf(int node, int rail) const;
  int leaves_per_plane() const { return leaves_; }
  int spines_per_plane() const { return up_; }  // spines (2 tiers) or aggregations per pod
  int pods_per_plane() const { return pods_; }
  int cores_per_plane() const { return cores_; }
  // Link ids between switch tiers (-1 when absent): leaf <-> spine / aggregation k of its
  // pod, and aggregation k of pod p <-> core j of group k.
  int LeafLink(int plane, int leaf, int k, bool up) const;
  int AggLink(int plane, int pod, int k, int j, bool up) const;

 private:
  int AddLink(std::string from, std::string to, LinkTier tier, double gbs);
  std::string PlanePrefix(int plane) const;

  FabricOptions options_;
  std::vector<Link> links_;
  std::vector<int> nic_links_;   // [(node * nics + rail) * 2 + up]
  std::vector<int> gpu_links_;   // [(node * gpus + gpu) * 2 + up]
  std::vector<int> leaf_links_;  // [((plane * leaves + leaf) * up + k) * 2 + up]
  std::vector<int> agg_links_;   // [(((plane * pods + pod) * up + k) * agg_up + j) * 2 + up]
  int planes_ = 1;
  int leaves_ = 0;  // per plane
  int up_ = 0;      // leaf uplinks: spines per plane, or aggregations per pod
  int pods_ = 1;    // per plane (3 tiers)
  int agg_up_ = 0;  // aggregation uplinks: core groups of size... cores = up_ * agg_up_
  int cores_ = 0;   // per plane
  size_t switches_ = 0;
};

// What to run on the fabric.
struct SimOptions {
  Collective collective = Collective::kAllReduce;
  size_t bytes = size_t{1} << 30;  // nccl-tests' size
  int channels = 0;                // ring channels; 0: two per NIC, as NCCL on 8-NIC nodes
  int qps_per_connection = 1;      // NCCL_IB_QPS_PER_CONNECTION: hashed separately
  Routing routing = Routing::kEcmp;
  uint64_t seed = 1;
  // Concurrent communicators, each a list of nodes in ring order; empty: one of all nodes.
  std::vector<std::vector<int>> groups;
  bool in_network_reduction = false;  // all_reduce through switch aggregation trees (SHARP)
  int peer_shift = 1;                 // sendrecv: node i sends to node i + shift in its group
  double latency_us = 0;              // added to the transfer time (the analytic latency)
};

// Traffic on one link while the collective ran.
struct LinkLoad {
  size_t link = 0;
  std::string name;
  LinkTier tier = LinkTier::kNicUp;
  double capacity_gbs = 0;
  double peak_gbs = 0;     // the highest concurrent rate
  double utilization = 0;  // peak / capacity
  double gigabytes = 0;    // carried in total
  double connections = 0;  // connections routed over it (a QP counts 1 / QPs)
};

// Per tier: how many links carried traffic and the busiest.
struct TierLoad {
  LinkTier tier = LinkTier::kNicUp;
  size_t links = 0;
  size_t used = 0;
  double max_utilization = 0;
  double mean_utilization = 0;  // over used links
  double max_connections = 0;
};

// One communicator's outcome.
struct GroupResult {
  int nranks = 0;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
};

// The simulation's outcome: the slowest group sets the collective's time.
struct SimResult {
  double time_us = 0;  // latency + transfer of the slowest group
  double transfer_us = 0;
  double latency_us = 0;
  double algbw = 0;
  double busbw = 0;
  bool stalled = false;
  std::string stall_reason;
  std::vector<GroupResult> groups;
  std::vector<LinkLoad> links;  // every link that carried traffic, busiest first
  std::vector<TierLoad> tiers;
  size_t flows = 0;        // coupled flows (a ring channel moves at its slowest hop)
  size_t connections = 0;  // routed connections (QPs)
  size_t link_uses = 0;    // (flow, link) pairs the fair sharing works on
  int events = 0;          // fair-share recomputations (a flow finished)
};

// Throws UsageError for options that do not fit the fabric (a node out of range, a
// collective the simulator does not break into flows).
SimResult Simulate(const Fabric& fabric, const SimOptions& options);

}  // namespace fabricscope::sim
