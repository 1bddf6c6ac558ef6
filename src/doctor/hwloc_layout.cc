#include "doctor/hwloc_layout.h"

#include <hwloc.h>

#include <memory>

namespace fabricscope::doctor {

std::optional<HwlocLayout> LoadHwlocLayout(std::string* why) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    if (why != nullptr) *why = "hwloc_topology_init failed";
    return std::nullopt;
  }
  const std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)> topology(
      raw, &hwloc_topology_destroy);
  // Sockets and memory are all this needs: skip caches and I/O, which cost the most.
  hwloc_topology_set_all_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_PACKAGE, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(raw) != 0) {
    if (why != nullptr) *why = "hwloc_topology_load failed";
    return std::nullopt;
  }
  HwlocLayout layout;
  layout.packages = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PACKAGE);
  layout.numa_nodes = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_NUMANODE);
  const unsigned api = hwloc_get_api_version();
  layout.version =
      "hwloc (API " + std::to_string(api >> 16) + "." + std::to_string((api >> 8) & 0xff) + ")";
  return layout;
}

}  // namespace fabricscope::doctor
