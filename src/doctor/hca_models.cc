#include "doctor/hca_models.h"

#include <cstdlib>

namespace fabricscope::doctor {
namespace {

// PCI device ids from the PCI ID repository (pci-ids.ucw.cz, vendor 15b3); mlx5's sysfs
// `hca_type` is "MT" followed by the same id in decimal (0x1021 -> MT4129). Rates are the
// fastest InfiniBand rate of each family from NVIDIA's adapter documentation; a card sold
// as a slower SKU of a family (a 200G ConnectX-7) runs below it by design, which is why a
// port under its model's rate is a WARN, not CRITICAL. Ethernet-only families (ConnectX-4
// Lx, -6 Dx, -6 Lx) are absent: they have no InfiniBand rate.
constexpr HcaModel kModels[] = {
    {"ConnectX-4", 0x1013, 4, "EDR", 100},    {"ConnectX-5", 0x1017, 4, "EDR", 100},
    {"ConnectX-5 Ex", 0x1019, 4, "EDR", 100}, {"ConnectX-6", 0x101b, 4, "HDR", 200},
    {"ConnectX-7", 0x1021, 4, "NDR", 400},    {"ConnectX-8", 0x1023, 4, "XDR", 800},
    {"BlueField-2", 0xa2d6, 4, "HDR", 200},   {"BlueField-3", 0xa2dc, 4, "NDR", 400},
};

std::optional<unsigned> IdOf(const std::string& hca_type, const std::string& pci_device) {
  if (hca_type.starts_with("MT") && hca_type.size() > 2) {
    char* end = nullptr;
    const unsigned long id = std::strtoul(hca_type.c_str() + 2, &end, 10);
    if (end != nullptr && *end == '\0') return static_cast<unsigned>(id);
  }
  if (!pci_device.empty()) {
    char* end = nullptr;
    const unsigned long id = std::strtoul(pci_device.c_str(), &end, 16);
    if (end != nullptr && *end == '\0') return static_cast<unsigned>(id);
  }
  return std::nullopt;
}

}  // namespace

std::optional<HcaModel> FindHcaModel(const std::string& hca_type, const std::string& pci_device) {
  const auto id = IdOf(hca_type, pci_device);
  if (!id) return std::nullopt;
  for (const auto& m : kModels) {
    if (m.pci_device == *id) return m;
  }
  return std::nullopt;
}

}  // namespace fabricscope::doctor
