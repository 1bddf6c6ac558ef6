// Private: the running machine's sockets and NUMA nodes as hwloc sees them.
#pragma once

#include <optional>
#include <string>

namespace fabricscope::doctor {

// Packages (sockets) and NUMA nodes of this machine.
struct HwlocLayout {
  int packages = 0;
  int numa_nodes = 0;
  std::string version;  // "hwloc 2.9"
};

// Loads this machine's topology with hwloc. hwloc 2 reads another root only through the
// process-wide HWLOC_FSROOT variable, so fixture roots are read from sysfs directly and
// this serves the live system (root /) alone. Nullopt with `why` when hwloc fails.
std::optional<HwlocLayout> LoadHwlocLayout(std::string* why);

}  // namespace fabricscope::doctor
