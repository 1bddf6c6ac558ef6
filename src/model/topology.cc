// Fat-tree builders: 2 tiers (leaf-spine) or 3 (leaf-aggregation-core in pods), each in a
// classic, rail-optimized or rail-only design, with oversubscription at each tier.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/fabric_sim.h"
#include "fabricscope/joined.h"
#include "fabricscope/strings.h"

namespace fabricscope::sim {
namespace {

constexpr std::array<std::string_view, 3> kDesignNames = {"classic", "rail-optimized", "rail-only"};
constexpr std::array<std::string_view, 2> kRoutingNames = {"ecmp", "balanced"};
constexpr std::array<std::string_view, 7> kTierNames = {
    "nvlink", "nic-up", "nic-down", "leaf-up", "leaf-down", "agg-up", "agg-down"};

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

int Ports(int down, double oversubscription) {
  return std::max(1, static_cast<int>(std::lround(down / oversubscription)));
}

}  // namespace

std::string_view DesignName(FabricDesign design) {
  return kDesignNames[static_cast<size_t>(design)];
}
std::string_view RoutingName(Routing routing) {
  return kRoutingNames[static_cast<size_t>(routing)];
}
std::string_view TierName(LinkTier tier) { return kTierNames[static_cast<size_t>(tier)]; }
FabricDesign ParseDesign(std::string_view name) {
  return ParseName<FabricDesign>(name, kDesignNames, "--design");
}
Routing ParseRouting(std::string_view name) {
  return ParseName<Routing>(name, kRoutingNames, "--routing");
}

namespace {

void CheckFabricOptions(const FabricOptions& o) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw UsageError(message);
  };
  require(o.nodes >= 1, "the fabric needs at least 1 node (--nodes)");
  require(o.gpus_per_node >= 1, "--gpus-per-node must be at least 1");
  require(o.nics_per_node >= 1, "the fabric simulator needs at least 1 NIC per node (--nics)");
  require(o.nic_gbs > 0, "the NIC rate must be positive (--nic-rate)");
  require(o.uplink_gbs >= 0 && o.nvlink_gbs >= 0, "link rates must not be negative");
  require(o.tiers == 2 || o.tiers == 3, "--tiers must be 2 (leaf-spine) or 3 (pods and cores)");
  require(o.leaf_ports >= 1, "--leaf-ports must be at least 1");
  require(o.leaf_oversubscription >= 1 && o.pod_oversubscription >= 1,
          "oversubscription is down:up ports, at least 1 (1 = non-blocking, 2 = 2:1)");
  require(o.leaves_per_pod >= 1, "--leaves-per-pod must be at least 1");
  // A million links would take gigabytes of names; no cluster we model needs that many.
  require(static_cast<long long>(o.nodes) * std::max(o.gpus_per_node, o.nics_per_node) <= 1 << 20,
          "the fabric is limited to 2^20 GPUs or NICs");
}

// How many switches of each tier a plane has.
struct Shape {
  int planes = 1;
  int leaves = 0;  // per plane
  int up = 0;      // leaf uplinks: spines per plane, or aggregations per pod
  int pods = 1;    // per plane (3 tiers)
  int agg_up = 0;  // aggregation uplinks
  int cores = 0;   // per plane
  size_t switches = 0;
};

Shape ShapeOf(const FabricOptions& o) {
  const int nics = o.nics_per_node;
  Shape s;
  s.planes = o.design == FabricDesign::kRailOnly ? nics : 1;
  switch (o.design) {
    case FabricDesign::kClassic:
      s.leaves = CeilDiv(o.nodes * nics, o.leaf_ports);
      break;
    case FabricDesign::kRailOptimized:
      s.leaves = CeilDiv(o.nodes, o.leaf_ports) * nics;
      break;
    case FabricDesign::kRailOnly:
      s.leaves = CeilDiv(o.nodes, o.leaf_ports);
      break;
  }
  if (o.tiers == 3) {
    s.pods = CeilDiv(s.leaves, o.leaves_per_pod);
    s.up = s.leaves > 1 ? Ports(o.leaf_ports, o.leaf_oversubscription) : 0;
    s.agg_up = s.pods > 1 ? Ports(std::min(o.leaves_per_pod, s.leaves), o.pod_oversubscription) : 0;
    s.cores = s.up * s.agg_up;
  } else {
    s.pods = 1;
    s.up = s.leaves > 1 ? Ports(o.leaf_ports, o.leaf_oversubscription) : 0;
  }
  s.switches = static_cast<size_t>(s.planes) *
               static_cast<size_t>(s.leaves + s.up * (o.tiers == 3 ? s.pods : 1) + s.cores);
  return s;
}

}  // namespace

Fabric::Fabric(const FabricOptions& o) : options_(o) {
  CheckFabricOptions(o);
  const Shape shape = ShapeOf(o);
  planes_ = shape.planes;
  leaves_ = shape.leaves;
  up_ = shape.up;
  pods_ = shape.pods;
  agg_up_ = shape.agg_up;
  cores_ = shape.cores;
  switches_ = shape.switches;
  const int nics = o.nics_per_node;
  const double uplink = o.uplink_gbs > 0 ? o.uplink_gbs : o.nic_gbs;

  // Within a node: each GPU into and out of the NVSwitch.
  if (o.nvlink_gbs > 0) {
    gpu_links_.resize(static_cast<size_t>(o.nodes) * o.gpus_per_node * 2);
    for (int n = 0; n < o.nodes; ++n) {
      const std::string nvs = "n" + std::to_string(n) + ".nvs";
      for (int g = 0; g < o.gpus_per_node; ++g) {
        const std::string gpu = "n" + std::to_string(n) + ".g" + std::to_string(g);
        const size_t i = (static_cast<size_t>(n) * o.gpus_per_node + g) * 2;
        gpu_links_[i + 1] = AddLink(gpu, nvs, LinkTier::kNvlink, o.nvlink_gbs);
        gpu_links_[i] = AddLink(nvs, gpu, LinkTier::kNvlink, o.nvlink_gbs);
      }
    }
  }
  // NICs to their leaves.
  nic_links_.resize(static_cast<size_t>(o.nodes) * nics * 2);
  for (int n = 0; n < o.nodes; ++n) {
    for (int r = 0; r < nics; ++r) {
      const std::string nic = "n" + std::to_string(n) + ".nic" + std::to_string(r);
      const std::string leaf = PlanePrefix(PlaneOf(r)) + "leaf" + std::to_string(LeafOf(n, r));
      const size_t i = (static_cast<size_t>(n) * nics + r) * 2;
      nic_links_[i + 1] = AddLink(nic, leaf, LinkTier::kNicUp, o.nic_gbs);
      nic_links_[i] = AddLink(leaf, nic, LinkTier::kNicDown, o.nic_gbs);
    }
  }
  // Leaves to spines (2 tiers) or to the aggregation switches of their pod (3 tiers).
  leaf_links_.assign(static_cast<size_t>(planes_) * leaves_ * up_ * 2, -1);
  for (int p = 0; p < planes_; ++p) {
    const std::string prefix = PlanePrefix(p);
    for (int leaf = 0; leaf < leaves_; ++leaf) {
      const std::string name = prefix + "leaf" + std::to_string(leaf);
      const int pod = leaf / o.leaves_per_pod;
      for (int k = 0; k < up_; ++k) {
        const std::string above =
            o.tiers == 3 ? prefix + "pod" + std::to_string(pod) + ".agg" + std::to_string(k)
                         : prefix + "spine" + std::to_string(k);
        const size_t i = ((static_cast<size_t>(p) * leaves_ + leaf) * up_ + k) * 2;
        leaf_links_[i + 1] = AddLink(name, above, LinkTier::kLeafUp, uplink);
        leaf_links_[i] = AddLink(above, name, LinkTier::kLeafDown, uplink);
      }
    }
  }
  // Aggregation switch k of every pod to core group k.
  agg_links_.assign(static_cast<size_t>(planes_) * pods_ * up_ * agg_up_ * 2, -1);
  for (int p = 0; p < planes_; ++p) {
    const std::string prefix = PlanePrefix(p);
    for (int pod = 0; pod < pods_; ++pod) {
      for (int k = 0; k < up_; ++k) {
        const std::string agg = prefix + "pod" + std::to_string(pod) + ".agg" + std::to_string(k);
        for (int j = 0; j < agg_up_; ++j) {
          const std::string core = prefix + "core" + std::to_string(k * agg_up_ + j);
          const size_t i = (((static_cast<size_t>(p) * pods_ + pod) * up_ + k) * agg_up_ + j) * 2;
          agg_links_[i + 1] = AddLink(agg, core, LinkTier::kAggUp, uplink);
          agg_links_[i] = AddLink(core, agg, LinkTier::kAggDown, uplink);
        }
      }
    }
  }
}

std::string Fabric::PlanePrefix(int plane) const {
  return planes_ > 1 ? "rail" + std::to_string(plane) + "." : "";
}

int Fabric::AddLink(std::string from, std::string to, LinkTier tier, double gbs) {
  Link link;
  link.from = std::move(from);
  link.to = std::move(to);
  link.tier = tier;
  link.nominal_gbs = gbs;
  link.capacity_gbs = gbs;
  links_.push_back(std::move(link));
  return static_cast<int>(links_.size() - 1);
}

int Fabric::PlaneOf(int rail) const { return planes_ > 1 ? rail : 0; }

int Fabric::LeafOf(int node, int rail) const {
  const int ports = options_.leaf_ports;
  switch (options_.design) {
    case FabricDesign::kClassic:
      return (node * options_.nics_per_node + rail) / ports;
    case FabricDesign::kRailOptimized:
      return (node / ports) * options_.nics_per_node + rail;
    case FabricDesign::kRailOnly:
      return node / ports;
  }
  return 0;
}

int Fabric::NicLink(int node, int rail, bool up) const {
  return nic_links_[(static_cast<size_t>(node) * options_.nics_per_node + rail) * 2 + (up ? 1 : 0)];
}

int Fabric::GpuLink(int node, int gpu, bool up) const {
  if (gpu_links_.empty()) return -1;
  return gpu_links_[(static_cast<size_t>(node) * options_.gpus_per_node + gpu) * 2 + (up ? 1 : 0)];
}

int Fabric::LeafLink(int plane, int leaf, int k, bool up) const {
  if (k < 0 || k >= up_) return -1;
  return leaf_links_[((static_cast<size_t>(plane) * leaves_ + leaf) * up_ + k) * 2 + (up ? 1 : 0)];
}

int Fabric::AggLink(int plane, int pod, int k, int j, bool up) const {
  if (k < 0 || k >= up_ || j < 0 || j >= agg_up_) return -1;
  return agg_links_[(((static_cast<size_t>(plane) * pods_ + pod) * up_ + k) * agg_up_ + j) * 2 +
                    (up ? 1 : 0)];
}

std::optional<size_t> Fabric::FindLink(std::string_view name) const {
  const size_t arrow = name.find("->");
  if (arrow == std::string_view::npos) return std::nullopt;
  const std::string_view from = name.substr(0, arrow);
  const std::string_view to = name.substr(arrow + 2);
  for (size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].from == from && links_[i].to == to) return i;
  }
  return std::nullopt;
}

void Fabric::DegradeLink(std::string_view name, double factor) {
  if (!(factor >= 0 && factor <= 1)) {
    throw UsageError("link '" + std::string(name) + "': the capacity factor " +
                     std::to_string(factor) + " must be in [0, 1] (0 = failed)");
  }
  std::vector<std::string> directed;
  if (name.find("->") != std::string_view::npos) {
    directed.emplace_back(name);
  } else if (const size_t dash = name.find('-'); dash != std::string_view::npos) {
    const std::string a(name.substr(0, dash));
    const std::string b(name.substr(dash + 1));
    directed = {a + "->" + b, b + "->" + a};
  } else {
    throw UsageError("link '" + std::string(name) +
                     "' is not a link name: write 'a->b' for one direction or 'a-b' for both, "
                     "e.g. 'leaf0-spine1' or 'n3.nic0->leaf0'");
  }
  for (const auto& d : directed) {
    const auto id = FindLink(d);
    if (!id) {
      const std::string example = links_.empty()
                                      ? std::string("none")
                                      : fmt::format("{}-{}", links_.back().from, links_.back().to);
      throw UsageError(
          fmt::format("no link '{}' in this fabric (links are named like '{}'; `fabricscope model "
                      "--simulate --format json` lists the busy ones)",
                      d, example));
    }
    links_[*id].capacity_gbs = links_[*id].nominal_gbs * factor;
  }
}

void Fabric::SlowNode(int node, double factor) {
  if (node < 0 || node >= options_.nodes) {
    throw UsageError("slow node " + std::to_string(node) + " is not in the fabric (nodes 0.." +
                     std::to_string(options_.nodes - 1) + ")");
  }
  if (!(factor >= 0 && factor <= 1)) {
    throw UsageError("slow node " + std::to_string(node) + ": the factor " +
                     std::to_string(factor) + " must be in [0, 1]");
  }
  for (int r = 0; r < options_.nics_per_node; ++r) {
    for (bool up : {true, false}) {
      Link& link = links_[static_cast<size_t>(NicLink(node, r, up))];
      link.capacity_gbs = link.nominal_gbs * factor;
    }
  }
}

}  // namespace fabricscope::sim
