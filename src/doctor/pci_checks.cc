// Checks on the PCI inventory: the devices, the NUMA layout, and how close each GPU is to
// a NIC (from sysfs, and from a topology file).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "doctor/check.h"
#include "doctor/hwloc_layout.h"
#include "fabricscope/joined.h"

namespace fabricscope::doctor {
namespace {

std::string Describe(const PciDevice& d) {
  std::string out = d.name;
  if (!d.bdf.empty() && d.bdf != d.name) out += " (" + d.bdf + ")";
  return out;
}

std::string Position(const PciDevice& d) {
  std::string out = Describe(d) + ": NUMA " + (d.numa >= 0 ? std::to_string(d.numa) : "unknown");
  if (!d.host_bridge.empty()) {
    out += ", " + d.host_bridge;
    for (const auto& b : d.bridges) out += " > " + b;
  }
  return out;
}

// The NICs GPU traffic should leave through: the RDMA ones when there are any.
std::vector<const PciDevice*> DataNics(const PciTopology& t) {
  std::vector<const PciDevice*> rdma;
  for (const PciDevice* n : t.Nics()) {
    if (n->rdma()) rdma.push_back(n);
  }
  return rdma.empty() ? t.Nics() : rdma;
}

// NIC names for a message: the first few, then how many more.
constexpr size_t kNamesShown = 3;
std::string Names(const std::vector<const PciDevice*>& devices) {
  std::string out;
  for (size_t i = 0; i < devices.size() && i < kNamesShown; ++i) {
    out += (out.empty() ? "" : "/") + devices[i]->name;
  }
  if (devices.size() > kNamesShown) out += fmt::format(" +{} more", devices.size() - kNamesShown);
  return out;
}

// For every GPU, the closest data NIC, judged the way NCCL's GPUDirect RDMA cut-off
// (NCCL_NET_GDR_LEVEL) and nvidia-smi's legend see distances. GPUs at the same distance
// share one finding, with a line of evidence each. `facts`: whether this analysis speaks for
// the node in drift detection (sysfs does; a file passed in may describe another machine).
void AnalyzeAffinity(const PciTopology& t, const std::string& evidence_prefix, bool facts,
                     CheckOutput& out) {
  const auto nics = DataNics(t);
  std::map<PathType, std::vector<std::string>> gpus_at;  // distance -> GPU names
  std::map<PathType, std::vector<std::string>> evidence_at;
  PathType worst = PathType::kPix;
  for (const PciDevice* gpu : t.Gpus()) {
    PathType best = PathType::kUnknown;
    std::vector<const PciDevice*> nearest;
    for (const PciDevice* nic : nics) {
      const PathType p = t.Path(*gpu, *nic);
      if (p < best) {
        best = p;
        nearest.clear();
      }
      if (p == best) nearest.push_back(nic);
    }
    worst = std::max(worst, best);
    const std::string names = Names(nearest);
    if (facts) out.Fact("affinity." + gpu->name, names + " " + std::string(PathName(best)));
    gpus_at[best].push_back(gpu->name);
    if (best <= PathType::kPxb) {
      evidence_at[best].push_back(gpu->name + " -> " + names + " " + std::string(PathName(best)));
      continue;
    }
    std::string line = evidence_prefix + Position(*gpu) + " -> closest ";
    for (size_t i = 0; i < nearest.size() && i < kNamesShown; ++i) {
      const PciDevice& n = *nearest[i];
      line += (i == 0 ? "" : ", ") + Describe(n) + " on NUMA " +
              (n.numa >= 0 ? std::to_string(n.numa) : "unknown") +
              (n.host_bridge.empty() ? "" : " under " + n.host_bridge);
    }
    if (nearest.size() > kNamesShown) {
      line += fmt::format(", +{} more at the same distance", nearest.size() - kNamesShown);
    }
    evidence_at[best].push_back(line);
  }
  if (facts) out.Fact("affinity.worst", std::string(PathName(worst)));
  for (const auto& [path, gpus] : gpus_at) {
    const std::string who = Joined(gpus);
    const std::vector<std::string>& evidence = evidence_at[path];
    const std::string name(PathName(path));
    switch (path) {
      case PathType::kPix:
      case PathType::kPxb:
        out.Add(Severity::kOk,
                fmt::format("{} of {} GPUs have a NIC behind their own PCIe switch ({})",
                            gpus.size(), t.Gpus().size(), name),
                evidence);
        break;
      case PathType::kSys:
        out.Add(Severity::kCritical,
                "the closest NIC is across the socket (SYS): traffic crosses the CPU "
                "interconnect and NCCL turns GPUDirect RDMA off at that distance",
                evidence,
                "give each socket's GPUs a NIC on the same socket (check which slots the NICs "
                "sit in, and BIOS NUMA settings); meanwhile bind each rank to a NIC on its "
                "GPU's socket with NCCL_IB_HCA")
            .where = who;
        break;
      case PathType::kUnknown:
        out.Add(Severity::kWarn, "cannot tell how close any NIC is (no PCIe path and no NUMA node)",
                evidence,
                "give the output of `nvidia-smi topo -m` or NCCL's topology dump (--topo-file)")
            .where = who;
        break;
      case PathType::kPhb:
      case PathType::kNode:
        out.Add(
               Severity::kWarn,
               fmt::format(
                   "the closest NIC is {}, not behind the GPU's own PCIe switch: "
                   "GPUDirect RDMA goes through the {} and NCCL may turn it off at its "
                   "default distance",
                   name, path == PathType::kPhb ? "CPU's host bridge" : "CPU between host bridges"),
               evidence,
               "prefer a NIC under the GPU's PCIe switch; if none exists, set "
               "NCCL_NET_GDR_LEVEL=" +
                   name + " to keep GPUDirect RDMA")
            .where = who;
        break;
    }
  }
}

class PciCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (!node.pci.unavailable.empty()) return node.pci.unavailable;
    return std::nullopt;
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    const PciTopology& t = node.pci.topology;
    const auto gpus = t.Gpus();
    const auto nics = t.Nics();
    std::map<std::string, int> vendors;
    for (const PciDevice* g : gpus) ++vendors[VendorName(g->vendor)];
    std::string gpu_text;
    for (const auto& [vendor, n] : vendors) {
      gpu_text += (gpu_text.empty() ? "" : ", ") + std::to_string(n) + " " + vendor;
    }
    int rdma = 0;
    std::string rdma_names;
    for (const PciDevice* n : nics) {
      if (!n->rdma()) continue;
      ++rdma;
      rdma_names += (rdma_names.empty() ? "" : " ") + n->name;
    }
    std::vector<std::string> evidence;
    for (const PciDevice& d : t.devices) {
      evidence.push_back(fmt::format("{}: class 0x{:06x}, {}, driver {}", Describe(d), d.class_code,
                                     VendorName(d.vendor), d.driver.empty() ? "none" : d.driver));
    }
    if (const auto nvidia = node.root.ReadLine("/sys/module/nvidia/version")) {
      evidence.push_back(node.root.Show("/sys/module/nvidia/version") + ": " + *nvidia);
      out.Fact("driver.nvidia", *nvidia);
    }
    out.Fact("gpus", std::to_string(gpus.size()));
    out.Fact("nics.rdma", std::to_string(rdma));
    Finding& summary = out.Add(
        Severity::kOk,
        fmt::format("{} GPU{}{}, {} NIC{} ({} RDMA{})", gpus.size(), gpus.size() == 1 ? "" : "s",
                    gpu_text.empty() ? "" : " (" + gpu_text + ")", nics.size(),
                    nics.size() == 1 ? "" : "s", rdma, rdma_names.empty() ? "" : ": " + rdma_names),
        evidence);
    if (gpus.empty()) {
      summary.what += "; no GPU on the PCI bus (class 0x03/0x12 from NVIDIA, AMD or Habana)";
    }
    for (const PciDevice& d : t.devices) {
      const std::string dir = "/sys/bus/pci/devices/" + d.bdf;
      if (d.kind == DeviceKind::kGpu && d.driver.empty()) {
        out.Add(Severity::kCritical, "has no kernel driver bound: it cannot be used",
                {node.root.Show(dir + "/driver") + ": absent"},
                "load the GPU driver (modprobe nvidia) and check dmesg for why it did not bind")
            .where = Describe(d);
      } else if (d.kind == DeviceKind::kGpu && d.vendor == 0x10de && d.driver != "nvidia") {
        out.Add(Severity::kWarn, "is bound to '" + d.driver + "', not 'nvidia'",
                {node.root.Show(dir + "/driver") + " -> " + d.driver},
                "unbind it and load the NVIDIA driver, unless it is passed to a VM on purpose")
            .where = Describe(d);
      }
      if (d.link_width > 0 && d.max_link_width > d.link_width) {
        out.Add(Severity::kWarn,
                fmt::format("runs its PCIe link at x{} of x{}: at most {}% of its PCIe "
                            "bandwidth",
                            d.link_width, d.max_link_width, 100 * d.link_width / d.max_link_width),
                {node.root.Show(dir + "/current_link_width") + ": " + std::to_string(d.link_width),
                 node.root.Show(dir + "/max_link_width") + ": " + std::to_string(d.max_link_width)},
                "reseat the card or riser, check the slot's wiring and the BIOS bifurcation "
                "setting")
            .where = Describe(d);
      }
    }
  }
};

class NumaCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (node.pci.numa.empty() && !node.root.live()) {
      return node.root.Show("/sys/devices/system/node") + " is absent";
    }
    return std::nullopt;
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    std::vector<std::string> evidence;
    for (const NumaNode& n : node.pci.numa) {
      evidence.push_back(node.root.Show("/sys/devices/system/node/node" + std::to_string(n.id)) +
                         ": CPUs " + n.cpus);
    }
    int nodes = static_cast<int>(node.pci.numa.size());
    std::string hwloc_text;
    if (node.root.live()) {
      std::string why;
      if (const auto layout = LoadHwlocLayout(&why)) {
        hwloc_text = fmt::format("{}: {} package(s), {} NUMA node(s)", layout->version,
                                 layout->packages, layout->numa_nodes);
        evidence.push_back(hwloc_text);
        if (nodes == 0) nodes = layout->numa_nodes;
        if (!node.pci.numa.empty() && layout->numa_nodes != nodes) {
          out.Add(Severity::kWarn,
                  fmt::format("sysfs lists {} NUMA nodes but hwloc finds {}", nodes,
                              layout->numa_nodes),
                  evidence, "a container may hide part of /sys; run doctor on the host");
        }
      } else {
        evidence.push_back("hwloc: " + why);
      }
    }
    out.Fact("numa.nodes", std::to_string(nodes));

    // Where the GPUs and NICs sit.
    const PciTopology& t = node.pci.topology;
    std::map<int, std::pair<int, int>> per_node;  // numa -> (gpus, data nics)
    std::vector<std::string> unknown;
    for (const PciDevice& d : t.devices) {
      if (d.kind == DeviceKind::kNic && !d.rdma()) continue;
      if (d.numa < 0) {
        unknown.push_back(Describe(d));
        continue;
      }
      auto& counts = per_node[d.numa];
      (d.kind == DeviceKind::kGpu ? counts.first : counts.second)++;
    }
    std::string layout_text;
    for (const auto& [id, counts] : per_node) {
      layout_text += fmt::format("{}node {}: {} GPU(s), {} RDMA NIC(s)",
                                 layout_text.empty() ? "" : "; ", id, counts.first, counts.second);
    }
    out.Add(Severity::kOk,
            fmt::format("{} NUMA node(s){}", nodes, layout_text.empty() ? "" : "; " + layout_text),
            evidence);
    if (!unknown.empty() && nodes > 1) {
      const std::string names = Joined(unknown);
      out.Add(Severity::kWarn,
              "the firmware reports no NUMA node for " + names +
                  " (numa_node = -1): NCCL cannot tell which socket they are on",
              {},
              "enable the NUMA/ACPI SRAT options in the BIOS, or give NCCL a topology with "
              "NCCL_TOPO_FILE");
    }
    bool any_nic = false;
    for (const auto& [id, counts] : per_node) any_nic = any_nic || counts.second > 0;
    for (const auto& [id, counts] : per_node) {
      if (counts.first > 0 && counts.second == 0 && any_nic) {
        out.Add(Severity::kWarn,
                fmt::format("NUMA node {} has {} GPU(s) but no RDMA NIC: their traffic must "
                            "cross to another socket",
                            id, counts.first),
                {layout_text}, "spread the NICs over the sockets like the GPUs");
      }
    }
  }
};

class AffinityCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (!node.pci.unavailable.empty()) return node.pci.unavailable;
    if (node.pci.topology.Gpus().empty()) {
      return "no GPU on the PCI bus (a topology file is read by the topo_file check)";
    }
    if (node.pci.topology.Nics().empty()) return "no NIC on the PCI bus";
    return std::nullopt;
  }
  void Run(const NodeContext& node, CheckOutput& out) const override {
    AnalyzeAffinity(node.pci.topology, "sysfs ", true, out);
  }
};

class TopoFileCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (!node.topo_file_problem.empty()) return node.topo_file_problem;
    if (!node.topo_file) return "no --topo-file given and NCCL_TOPO_FILE is not set";
    return std::nullopt;
  }
  void Run(const NodeContext& node, CheckOutput& out) const override {
    const PciTopology& t = *node.topo_file;
    out.Add(Severity::kOk, fmt::format("{} GPU(s), {} NIC(s)", t.Gpus().size(), t.Nics().size()))
        .where = t.source;
    for (const std::string& note : t.notes) {
      out.Add(Severity::kWarn, note, {note},
              "check nvidia_peermem (gpudirect check) and NCCL_NET_GDR_LEVEL for this NIC");
    }
    if (t.Gpus().empty() || t.Nics().empty()) {
      out.Add(Severity::kWarn, "the file has no GPU or no NIC: no affinity to judge").where =
          t.source;
      return;
    }
    AnalyzeAffinity(t, "", false, out);
  }
};

}  // namespace

std::unique_ptr<Check> MakePciCheck() { return std::make_unique<PciCheck>(); }
std::unique_ptr<Check> MakeNumaCheck() { return std::make_unique<NumaCheck>(); }
std::unique_ptr<Check> MakeAffinityCheck() { return std::make_unique<AffinityCheck>(); }
std::unique_ptr<Check> MakeTopoFileCheck() { return std::make_unique<TopoFileCheck>(); }

}  // namespace fabricscope::doctor
