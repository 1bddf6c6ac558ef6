// Private: the GPUs and NICs of a node and the PCIe paths between them, from sysfs under a
// root or from a topology file, and how far apart two devices are in nvidia-smi's terms.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fabricscope/node_root.h"

namespace fabricscope::node {

// What a PCI function is, for the doctor.
enum class DeviceKind { kGpu, kNic };

// How two devices reach each other, closest first: nvidia-smi topo's legend.
enum class PathType {
  kPix,      // at most one PCIe bridge
  kPxb,      // several PCIe bridges, without the host bridge
  kPhb,      // through a PCIe host bridge (the CPU)
  kNode,     // between host bridges of one NUMA node
  kSys,      // across the SMP interconnect between NUMA nodes (QPI/UPI/xGMI)
  kUnknown,  // not enough information
};

// "PIX", "PXB", "PHB", "NODE", "SYS", "unknown".
std::string_view PathName(PathType path);
// Parses a cell of `nvidia-smi topo -m` ("PXB", "SOC" for SYS in old versions); nullopt for
// anything that is not a PCIe path (X, NV#).
std::optional<PathType> ParsePathName(std::string_view cell);

// One GPU or NIC and where it sits.
struct PciDevice {
  DeviceKind kind = DeviceKind::kGpu;
  std::string name;  // "GPU0" (bus order), or the NIC's RDMA device / interface name
  std::string bdf;   // "0000:1b:00.0"; empty when the source does not say
  uint16_t vendor = 0;
  uint32_t class_code = 0;
  int numa = -1;                            // -1: unknown
  std::string host_bridge;                  // "pci0000:17" (sysfs) or "cpu0" (NCCL XML)
  std::vector<std::string> bridges;         // the bridges from the host bridge down
  std::vector<std::string> rdma_devices;    // "mlx5_0" (NICs)
  std::vector<std::string> net_interfaces;  // "ens1f0" (NICs)
  std::string driver;                       // bound kernel driver; empty: none
  std::string link_speed, max_link_speed;   // "32.0 GT/s PCIe"
  int link_width = 0, max_link_width = 0;
  bool rdma() const { return !rdma_devices.empty(); }
};

// The devices of one node and, when the source states them, the paths between them.
struct PciTopology {
  std::string source;  // "sysfs", "nvidia-smi topo -m", "NCCL topology XML"
  std::vector<PciDevice> devices;
  // Paths stated by the source (nvidia-smi), keyed by device names; else computed.
  std::map<std::pair<std::string, std::string>, PathType> stated;
  // Notes from the source worth showing (NCCL XML: GPUDirect RDMA off for a NIC).
  std::vector<std::string> notes;

  std::vector<const PciDevice*> Gpus() const;
  std::vector<const PciDevice*> Nics() const;
  // The path between two devices: stated by the source, else from their positions.
  PathType Path(const PciDevice& a, const PciDevice& b) const;
};

// The PCIe path between two devices from their host bridges, bridges and NUMA nodes.
PathType ClassifyPath(const PciDevice& a, const PciDevice& b);

// The NUMA nodes of a node (from /sys/devices/system/node).
struct NumaNode {
  int id = 0;
  std::string cpus;  // cpulist, "0-27,56-83"
};

// A sysfs scan: the topology, or why there is none.
struct PciScan {
  PciTopology topology;
  std::string unavailable;     // non-empty when /sys/bus/pci could not be read
  std::vector<NumaNode> numa;  // empty when /sys/devices/system/node is absent
  int other_display = 0;       // display controllers that are not compute GPUs (BMC VGA)
};

// Reads /sys/bus/pci/devices under the root: PCI class codes (0x03: display, 0x02:
// network, 0x12: accelerators), vendors, NUMA nodes, links, drivers, RDMA and net names.
PciScan ScanPci(const Root& root);

// "NVIDIA", "AMD", "Mellanox", ... or the hex id.
std::string VendorName(uint16_t vendor);

}  // namespace fabricscope::node
