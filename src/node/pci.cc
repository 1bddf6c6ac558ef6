#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "fabricscope/node_pci.h"

namespace fabricscope::node {
namespace {

constexpr uint16_t kNvidia = 0x10de;
constexpr uint16_t kAmd = 0x1002;
constexpr uint16_t kHabana = 0x1da3;

// PCI base classes (the top byte of the 24-bit class code).
constexpr uint32_t kClassNetwork = 0x02;
constexpr uint32_t kClassDisplay = 0x03;
constexpr uint32_t kClassAccelerator = 0x12;

// "0000:1b:00.0": domain, bus, device, function.
bool IsBdf(std::string_view s) {
  const size_t colon2 = s.rfind(':');
  const size_t dot = s.rfind('.');
  if (colon2 == std::string_view::npos || dot == std::string_view::npos || dot < colon2 ||
      s.size() < 12) {
    return false;
  }
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return false;
  }
  return true;
}

// The host bridge and bridges on the way to a device, from its resolved sysfs path
// ("/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:1b:00.0").
void FillPosition(const std::string& resolved, PciDevice& d) {
  const std::vector<std::string> parts = Split(resolved, '/');
  for (const std::string& part : parts) {
    if (d.host_bridge.empty() && part.starts_with("pci") && part.find(':') != std::string::npos) {
      d.host_bridge = part;
    } else if (!d.host_bridge.empty() && IsBdf(part)) {
      d.bridges.push_back(part);
    }
  }
  if (!d.bridges.empty() && d.bridges.back() == d.bdf) d.bridges.pop_back();
}

bool IsComputeGpu(uint16_t vendor, uint32_t class_code) {
  const uint32_t base = class_code >> 16;
  if (base != kClassDisplay && base != kClassAccelerator) return false;
  return vendor == kNvidia || vendor == kAmd || vendor == kHabana;
}

}  // namespace

std::string_view PathName(PathType path) {
  switch (path) {
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kPhb:
      return "PHB";
    case PathType::kNode:
      return "NODE";
    case PathType::kSys:
      return "SYS";
    case PathType::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<PathType> ParsePathName(std::string_view cell) {
  static const std::pair<std::string_view, PathType> kNames[] = {
      {"PIX", PathType::kPix},   {"PXB", PathType::kPxb}, {"PHB", PathType::kPhb},
      {"NODE", PathType::kNode}, {"SYS", PathType::kSys}, {"SOC", PathType::kSys},
  };
  for (const auto& [name, type] : kNames) {
    if (cell == name) return type;
  }
  return std::nullopt;
}

std::string VendorName(uint16_t vendor) {
  static const std::pair<uint16_t, std::string_view> kVendors[] = {
      {kNvidia, "NVIDIA"},  {kAmd, "AMD"},        {kHabana, "Habana"},
      {0x15b3, "Mellanox"}, {0x14e4, "Broadcom"}, {0x8086, "Intel"},
      {0x1d0f, "Amazon"},   {0x1ae0, "Google"},   {0x1af4, "virtio"},
  };
  for (const auto& [id, name] : kVendors) {
    if (id == vendor) return std::string(name);
  }
  return fmt::format("0x{:04x}", vendor);
}

PathType ClassifyPath(const PciDevice& a, const PciDevice& b) {
  const bool numa_known = a.numa >= 0 && b.numa >= 0;
  if (numa_known && a.numa != b.numa) return PathType::kSys;
  if (a.host_bridge.empty() || b.host_bridge.empty()) return PathType::kUnknown;
  if (a.host_bridge != b.host_bridge) return numa_known ? PathType::kNode : PathType::kUnknown;
  size_t shared = 0;
  while (shared < a.bridges.size() && shared < b.bridges.size() &&
         a.bridges[shared] == b.bridges[shared]) {
    ++shared;
  }
  if (shared == 0) return PathType::kPhb;
  // The bridges a transfer crosses: the lowest shared one, and those below it on each side.
  const size_t crossed = (a.bridges.size() - shared) + (b.bridges.size() - shared) + 1;
  return crossed <= 1 ? PathType::kPix : PathType::kPxb;
}

std::vector<const PciDevice*> PciTopology::Gpus() const {
  std::vector<const PciDevice*> out;
  for (const auto& d : devices) {
    if (d.kind == DeviceKind::kGpu) out.push_back(&d);
  }
  return out;
}

std::vector<const PciDevice*> PciTopology::Nics() const {
  std::vector<const PciDevice*> out;
  for (const auto& d : devices) {
    if (d.kind == DeviceKind::kNic) out.push_back(&d);
  }
  return out;
}

PathType PciTopology::Path(const PciDevice& a, const PciDevice& b) const {
  if (auto it = stated.find({a.name, b.name}); it != stated.end()) return it->second;
  if (auto it = stated.find({b.name, a.name}); it != stated.end()) return it->second;
  return ClassifyPath(a, b);
}

PciScan ScanPci(const Root& root) {
  PciScan scan;
  scan.topology.source = "sysfs";
  for (const std::string& entry : root.List("/sys/devices/system/node")) {
    if (!entry.starts_with("node")) continue;
    const auto id = ParseInt(entry.substr(4));
    if (!id) continue;
    NumaNode node;
    node.id = static_cast<int>(*id);
    node.cpus = root.ReadLine("/sys/devices/system/node/" + entry + "/cpulist").value_or("");
    scan.numa.push_back(node);
  }
  std::sort(scan.numa.begin(), scan.numa.end(),
            [](const NumaNode& x, const NumaNode& y) { return x.id < y.id; });

  const std::string bus = "/sys/bus/pci/devices";
  if (!root.IsDirectory(bus)) {
    scan.unavailable = root.Show(bus) + " is absent";
    return scan;
  }
  int gpus = 0;
  for (const std::string& bdf : root.List(bus)) {
    const std::string dir = fmt::format("{}/{}", bus, bdf);
    const auto class_code = root.ReadInt(dir + "/class");
    const auto vendor = root.ReadInt(dir + "/vendor");
    if (!class_code || !vendor) continue;
    const uint32_t base = static_cast<uint32_t>(*class_code) >> 16;
    PciDevice d;
    d.bdf = bdf;
    d.vendor = static_cast<uint16_t>(*vendor);
    d.class_code = static_cast<uint32_t>(*class_code);
    if (IsComputeGpu(d.vendor, d.class_code)) {
      d.kind = DeviceKind::kGpu;
      d.name = "GPU" + std::to_string(gpus++);
    } else if (base == kClassNetwork) {
      // SR-IOV virtual functions belong to their physical NIC; a guest that sees only the
      // VF has no physfn link, so it still counts there.
      if (root.Exists(dir + "/physfn")) continue;
      d.kind = DeviceKind::kNic;
      d.rdma_devices = root.List(dir + "/infiniband");
      d.net_interfaces = root.List(dir + "/net");
      d.name = !d.rdma_devices.empty()     ? d.rdma_devices.front()
               : !d.net_interfaces.empty() ? d.net_interfaces.front()
                                           : bdf;
    } else {
      if (base == kClassDisplay) ++scan.other_display;
      continue;
    }
    d.numa = static_cast<int>(root.ReadInt(dir + "/numa_node").value_or(-1));
    if (auto resolved = root.Resolve(dir)) FillPosition(*resolved, d);
    d.driver = root.LinkName(dir + "/driver").value_or("");
    d.link_speed = root.ReadLine(dir + "/current_link_speed").value_or("");
    d.max_link_speed = root.ReadLine(dir + "/max_link_speed").value_or("");
    d.link_width = static_cast<int>(root.ReadInt(dir + "/current_link_width").value_or(0));
    d.max_link_width = static_cast<int>(root.ReadInt(dir + "/max_link_width").value_or(0));
    scan.topology.devices.push_back(std::move(d));
  }
  // One NUMA node (or none listed): the kernel says -1, but there is nowhere else to be.
  if (scan.numa.size() <= 1) {
    const int only = scan.numa.empty() ? 0 : scan.numa.front().id;
    for (auto& d : scan.topology.devices) {
      if (d.numa < 0) d.numa = only;
    }
  }
  return scan;
}

}  // namespace fabricscope::node
