// libFuzzer target: any bytes as a Slurm host list (SLURM_NODELIST, topology.conf's Nodes=).
// The expansion is bounded (a limit of 4096 names here, so that each input is quick; the
// bound is checked before anything is expanded); a refusal is a UsageError with a reason.
// The names come out within the bound, and an item without brackets is itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/host_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view list(reinterpret_cast<const char*>(data), size);
  constexpr size_t kMax = 4096;
  try {
    const std::vector<std::string> names = fabricscope::ExpandHostList(list, kMax);
    if (names.size() > kMax) std::abort();
    if (list.find_first_of("[], \t\n\r") == std::string_view::npos && !list.empty() &&
        (names.size() != 1 || names[0] != list)) {
      std::abort();
    }
  } catch (const fabricscope::Error&) {
  }
  return 0;
}
