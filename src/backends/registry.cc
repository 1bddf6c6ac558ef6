// The backend registry and the check of a request against a backend's capabilities.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/gloo/gloo_backend.h"
#include "backends/mpi/mpi_backend.h"
#include "fabricscope/backend.h"
#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"
#include "fabricscope/options.h"

namespace fabricscope {
namespace {

template <typename T, typename NameFn>
std::string JoinNames(const std::vector<T>& items, NameFn name_of) {
  std::string out;
  for (const T& item : items) {
    if (!out.empty()) out += ", ";
    out += name_of(item);
  }
  return out;
}

// Throws when `wanted` holds something `supported` lacks; `what` is "collective", "type", "op".
template <typename T, typename NameFn>
void CheckAll(const Backend& backend, std::string_view what, const std::vector<T>& wanted,
              const std::vector<T>& supported, NameFn name_of) {
  for (const T& item : wanted) {
    if (std::find(supported.begin(), supported.end(), item) == supported.end()) {
      throw UnsupportedError(fmt::format("backend {} does not support {} '{}'; it supports {}",
                                         backend.name(), what, name_of(item),
                                         JoinNames(supported, name_of)));
    }
  }
}

}  // namespace

BackendCapabilities AllCapabilities() {
  BackendCapabilities all;
  for (const CollectiveSpec& spec : Collectives()) all.collectives.push_back(spec.id);
  all.types = AllDataTypes();
  all.ops = AllReduceOps();
  return all;
}

const std::vector<BackendEntry>& Backends() {
  // One line per backend; nccl joins here when it is compiled in.
  static const std::vector<BackendEntry> entries = {
      {"gloo", "Gloo over TCP, host memory", [] { return MakeGlooBackend(); }},
      {"mpi", "MPI (OpenMPI) collectives, host memory, one rank per process",
       [] { return MakeMpiBackend(); }},
  };
  return entries;
}

std::unique_ptr<Backend> MakeBackend(std::string_view name) {
  for (const BackendEntry& entry : Backends()) {
    if (entry.name == name) return entry.make();
  }
  throw UsageError(fmt::format(
      "unknown backend '{}': available backends are {}", name,
      JoinNames(Backends(), [](const BackendEntry& e) { return std::string(e.name); })));
}

void CheckSupported(const Backend& backend, const RunOptions& options) {
  const BackendCapabilities& caps = backend.capabilities();
  CheckAll(backend, "collective", options.collectives, caps.collectives,
           [](Collective c) { return std::string(SpecOf(c).name); });
  CheckAll(backend, "type", options.types, caps.types,
           [](DataType t) { return std::string(NameOf(t)); });
  // nccl-tests ignores -o for collectives that do not reduce, so only those need the ops.
  const bool reduces = std::any_of(options.collectives.begin(), options.collectives.end(),
                                   [](Collective c) { return SpecOf(c).has_op; });
  if (reduces) {
    CheckAll(backend, "op", options.ops, caps.ops,
             [](ReduceOp op) { return std::string(NameOf(op)); });
  }
}

}  // namespace fabricscope
