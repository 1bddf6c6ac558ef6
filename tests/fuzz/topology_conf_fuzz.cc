// libFuzzer target: any bytes as the topology locate blames: Slurm's topology.conf
// (SwitchName=... Nodes=...) and a host-to-switch map ("HOST SWITCH" lines). A refusal is a
// UsageError naming the line; any other exception, crash, hang or out-of-bounds access
// (ASan, UBSan compiled in) is a finding. Host lists are bounded by ExpandHostList.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)fabricscope::ParseSlurmTopology(text, "topology.conf");
  } catch (const fabricscope::Error&) {
  }
  try {
    (void)fabricscope::ParseHostSwitchMap(text, "hosts.map");
  } catch (const fabricscope::Error&) {
  }
  return 0;
}
