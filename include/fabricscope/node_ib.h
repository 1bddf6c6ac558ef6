// Private: the RDMA ports of a node (InfiniBand and RoCE) from /sys/class/infiniband.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabricscope/node_root.h"

namespace fabricscope::node {

// One GID table entry of a port.
struct Gid {
  int index = 0;
  std::string value;   // "0000:0000:0000:0000:0000:ffff:0a00:0001"
  std::string type;    // "RoCE v2", "IB/RoCE v1"; empty when the kernel does not say
  std::string netdev;  // the interface the GID belongs to (RoCE)
  bool ipv4() const;   // an IPv4-mapped address (::ffff:a.b.c.d)
};

// The parsed rate attribute: "400 Gb/sec (4X NDR)".
struct PortRate {
  std::string text;
  double gbps = 0;
  int lanes = 0;           // 4 for "4X"
  std::string generation;  // "NDR", "HDR", ...
};
PortRate ParsePortRate(const std::string& text);

// One port of an RDMA device.
struct IbPort {
  std::string device;  // "mlx5_0"
  int port = 1;
  std::string state;       // "ACTIVE", "DOWN", "INIT", "ARMED"
  std::string phys_state;  // "LinkUp", "Disabled", "Polling"
  PortRate rate;
  std::string link_layer;                    // "InfiniBand" or "Ethernet" (RoCE)
  std::vector<Gid> gids;                     // the non-zero entries
  std::map<std::string, uint64_t> counters;  // error counters that exist on this port
  std::string name() const { return device + "/" + std::to_string(port); }
  bool roce() const { return link_layer == "Ethernet"; }
};

// One RDMA device (HCA).
struct IbDevice {
  std::string name;
  std::string fw_ver;
  std::string hca_type;              // sysfs hca_type: "MT4129" (mlx5)
  std::string pci_device;            // the PCI function's device id: "0x1021"
  std::string pci;                   // the PCI function it belongs to; empty when virtual
  std::vector<std::string> netdevs;  // interfaces of the same PCI function
  std::vector<IbPort> ports;
};

// The RDMA devices of a node; empty with `unavailable` set when there is no RDMA stack.
struct IbScan {
  std::vector<IbDevice> devices;
  std::string unavailable;
  std::vector<const IbPort*> Ports() const;
};

// The error counters read from counters/ and hw_counters/, with what a non-zero value means.
struct ErrorCounter {
  std::string_view file;
  std::string_view meaning;
};
const std::vector<ErrorCounter>& ErrorCounters();

IbScan ScanIb(const Root& root);

}  // namespace fabricscope::node
