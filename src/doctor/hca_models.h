// Private: what each RDMA adapter model can run at, so a port below its own card's rate is
// a finding even when no other port of the node is up to compare with.
#pragma once

#include <optional>
#include <string>

namespace fabricscope::doctor {

// One adapter model's InfiniBand capability.
struct HcaModel {
  const char* name;        // "ConnectX-7"
  unsigned pci_device;     // Mellanox/NVIDIA (vendor 0x15b3) PCI device id
  int lanes;               // widest InfiniBand port
  const char* generation;  // fastest InfiniBand speed: "NDR"
  double gbps;             // lanes x speed, as sysfs `rate` prints it
};

// The model from sysfs `hca_type` ("MT4129") or the PCI device id ("0x1021"); nullopt when
// neither names a model of the table (or the card has no InfiniBand mode).
std::optional<HcaModel> FindHcaModel(const std::string& hca_type, const std::string& pci_device);

}  // namespace fabricscope::doctor
