// Which platform a check judges against, from what the user said (src/cli/check_command.cc
// turns the flags into a PlatformRequest) and what the logs and the node say.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "fabricscope/check.h"
#include "fabricscope/error.h"

namespace fabricscope {
namespace {

PlatformChoice FromDescription(const GenericPlatformOptions& description) {
  static constexpr std::array<std::string_view, 7> kTransports = {"IB",    "RoCE", "gIB", "TCPX",
                                                                  "TCPXO", "EFA",  "TCP"};
  if (std::find(kTransports.begin(), kTransports.end(), description.transport) ==
      kTransports.end()) {
    throw UsageError("--transport '" + description.transport +
                     "': choose IB, RoCE, gIB, TCPX, TCPXO, EFA or TCP");
  }
  PlatformChoice choice;
  choice.platform = GenericPlatform(description);
  choice.origin = "command line";
  return choice;
}

}  // namespace

PlatformChoice ChoosePlatform(const Catalog& catalog, const PlatformRequest& request,
                              const std::vector<RunResult>& runs) {
  if (request.generic && !request.name.empty()) {
    throw UsageError(
        "--platform and a generic description (--gpus-per-node, --intra-node-busbw, --nics, "
        "--nic-rate, --transport) exclude each other: give one");
  }
  if (request.root_given && (!request.name.empty() || request.generic)) {
    throw UsageError(
        "--root is where detection reads the node; with --platform or a generic "
        "description nothing is detected: drop --root or the platform");
  }
  if (!request.name.empty()) {
    PlatformChoice choice;
    choice.platform = catalog.Get(request.name);
    choice.origin = "--platform";
    return choice;
  }
  if (request.generic) return FromDescription(*request.generic);
  // A log carried from another machine says what it ran on; this node says nothing about it.
  // Only a log that names no GPU (a host-memory run) is judged against this node.
  if (!runs.empty() && !request.root_given) {
    PlatformChoice inferred = InferPlatform(catalog, runs);
    if (inferred.origin != "none") return inferred;
  }
  return DetectPlatform(catalog, request.root);
}

}  // namespace fabricscope
