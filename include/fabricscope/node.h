// What this node is, read from its files (sysfs, PCI, RDMA, DMI under a root): the probes
// doctor and check share (src/node/), and the platform they add up to.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fabricscope/platform.h"

namespace fabricscope {

// Which platform results are judged against, and why that one.
struct PlatformChoice {
  std::optional<Platform> platform;   // empty: none could be chosen
  std::string origin;                 // "--platform", "command line", "detected", "the log", "none"
  std::vector<std::string> evidence;  // what detection read and where ("DMI product name ...")
  std::vector<std::string> notes;     // what did not fit ("6 RDMA ports at 400 Gb/s, not 8")
  std::string unavailable;            // why there is no platform
  // The other platforms the log fits and its numbers allow (the log's own choice): each test is
  // judged against them too, and a disagreement is said.
  std::vector<Platform> candidates{};
  // The log named its GPUs but not its NICs (no NCCL NET line): the platform is a guess from the
  // GPU model, which cannot make a verdict CRITICAL (check caps it at WARN and says why).
  bool network_guessed = false;
  bool generic() const { return origin == "command line"; }
};

// The platform of the node whose files are under `root` ("/" for this one), from the DMI
// product name and vendor, the GPUs (model and count) and the GPU-fabric NICs (count and
// rate). Throws UsageError when `root` is not a directory; a node that fits no platform
// gives a choice without a platform, saying what was found.
PlatformChoice DetectPlatform(const Catalog& catalog, const std::string& root);

}  // namespace fabricscope
