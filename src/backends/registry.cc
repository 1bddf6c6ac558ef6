// The backend registry and the check of a request against a backend's capabilities.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/gloo/gloo_backend.h"
#include "backends/mpi/mpi_backend.h"
#include "backends/nccl/gpu_abi.h"
#include "backends/nccl/nccl_backend.h"
#include "fabricscope/backend.h"
#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/options.h"

namespace fabricscope {
namespace {

// The types and ops only NCCL has: the release that added them and, for FP8, the compute
// capability NCCL reduces it on, as nccl-tests adds them to its lists by version
// (src/common.cu:1147-1159, 1585-1598 at v2.19.6); empty for everything else.
struct NcclOnly {
  std::string_view since;  // "2.24"; "" when any backend has it
  int since_code = 0;      // NcclVersionCode of `since`
  int min_arch = 0;        // 100 * major + 10 * minor; 0 any
};
NcclOnly NcclSince(DataType type) {
  // "FP8 reduction support begins with sm90 capable devices" (src/enqueue.cc:3026-3031 at
  // v2.30.7-1).
  return IsFp8(type) ? NcclOnly{"2.24", gpu::NcclVersionCode(2, 24, 0), 900} : NcclOnly{};
}
NcclOnly NcclSince(ReduceOp op) {
  return op == ReduceOp::kMulSum ? NcclOnly{"2.11", gpu::NcclVersionCode(2, 11, 0), 0} : NcclOnly{};
}
NcclOnly NcclSince(Collective) { return {}; }

// Where the refused item can run: NCCL's own types and ops name the release that has them.
std::string WhereItRuns(const Backend& backend, std::string_view item, const NcclOnly& only) {
  if (only.since.empty()) return "";
  const int arch = backend.capabilities().min_compute_capability;
  if (backend.name() == "nccl" && arch != 0 && arch < only.min_arch &&
      backend.nccl_version_code() >= only.since_code) {
    return fmt::format(
        "; '{}' needs GPUs of compute capability {}.{} (sm_{}) or later, and this host's start "
        "at {}.{} (NCCL: \"FP8 reduction support begins with sm90 capable devices\"; "
        "nccl-tests drops FP8 there)",
        item, only.min_arch / 100, only.min_arch % 100 / 10, only.min_arch / 10, arch / 100,
        arch % 100 / 10);
  }
  if (backend.name() == "nccl") {
    return fmt::format("; '{}' needs NCCL {} or later, and this is NCCL {}", item, only.since,
                       backend.version());
  }
  return fmt::format("; '{}' is NCCL's, from NCCL {} on NVIDIA GPUs (--backend nccl)", item,
                     only.since);
}

// `items` without what `have` lacks, in their order.
template <typename T>
std::vector<T> KeptIn(const std::vector<T>& have, std::vector<T> items) {
  std::erase_if(items,
                [&](const T& t) { return std::find(have.begin(), have.end(), t) == have.end(); });
  return items;
}

// Throws when `wanted` holds something `supported` lacks; `what` is "collective", "type", "op".
template <typename T, typename NameFn>
void CheckAll(const Backend& backend, std::string_view what, const std::vector<T>& wanted,
              const std::vector<T>& supported, NameFn name_of) {
  for (const T& item : wanted) {
    if (std::find(supported.begin(), supported.end(), item) == supported.end()) {
      throw UnsupportedError(fmt::format("backend {} does not support {} '{}'; it supports {}{}",
                                         backend.name(), what, name_of(item),
                                         Joined(supported, name_of),
                                         WhereItRuns(backend, name_of(item), NcclSince(item))));
    }
  }
}

}  // namespace

BackendCapabilities AllCapabilities() {
  BackendCapabilities all;
  for (const CollectiveSpec& spec : Collectives()) all.collectives.push_back(spec.id);
  // What NCCL alone has (NcclSince) the nccl backend adds by version.
  for (DataType type : AllDataTypes()) {
    if (NcclSince(type).since.empty()) all.types.push_back(type);
  }
  for (ReduceOp op : AllReduceOps()) {
    if (NcclSince(op).since.empty()) all.ops.push_back(op);
  }
  return all;
}

std::vector<DataType> SupportedOf(const Backend& backend, std::vector<DataType> types) {
  return KeptIn(backend.capabilities().types, std::move(types));
}

std::vector<ReduceOp> SupportedOf(const Backend& backend, std::vector<ReduceOp> ops) {
  return KeptIn(backend.capabilities().ops, std::move(ops));
}

const std::vector<BackendEntry>& Backends() {
  // One line per backend.
  static const std::vector<BackendEntry> entries = {
      {"gloo", "Gloo over TCP, host memory",
       [](const BackendOptions&) { return MakeGlooBackend(); }},
      {"mpi", "MPI (OpenMPI) collectives, host memory, one rank per process",
       [](const BackendOptions&) { return MakeMpiBackend(); }},
      {"nccl", "NVIDIA NCCL on CUDA devices, libnccl.so.2 and libcudart loaded at run time",
       [](const BackendOptions& options) { return MakeNcclBackend(options); }},
      {"rccl", "AMD RCCL on ROCm devices, librccl.so and libamdhip64 loaded at run time",
       [](const BackendOptions& options) { return MakeRcclBackend(options); }},
  };
  return entries;
}

std::unique_ptr<Backend> MakeBackend(std::string_view name, const BackendOptions& options) {
  for (const BackendEntry& entry : Backends()) {
    if (entry.name == name) return entry.make(options);
  }
  throw UsageError(
      fmt::format("unknown backend '{}': available backends are {}", name, NamesOf(Backends())));
}

std::string DefaultBackend(const BackendOptions& options, std::string* reason) {
  std::string why;
  if (ProbeNccl(options, &why)) {
    *reason = why;
    return "nccl";
  }
  *reason = why + "; host memory instead";
  return "gloo";
}

// A flag that only means something on a GPU, at a value the backend cannot honour.
void RefuseGpuFlag(const Backend& backend, const char* flag, int value, int default_value,
                   const char* what) {
  if (value == default_value) return;
  throw UnsupportedError(fmt::format(
      "{} {} ({}) needs a GPU backend (nccl, rccl); backend {} runs on host memory: drop the "
      "flag or leave it at {}",
      flag, value, what, backend.name(), default_value));
}

void CheckSupported(const Backend& backend, const RunOptions& options) {
  const BackendCapabilities& caps = backend.capabilities();
  if (!caps.device_memory) {
    RefuseGpuFlag(backend, "-g/--ngpus", options.ngpus, 1, "GPUs per thread");
    RefuseGpuFlag(backend, "-p/--parallel_init", options.parallel_init ? 1 : 0, 0, "parallel init");
    RefuseGpuFlag(backend, "-y/--stream_null", options.stream_null ? 1 : 0, 0, "default stream");
    RefuseGpuFlag(backend, "-G/--cudagraph", options.graph_launches, 0, "CUDA graphs");
    RefuseGpuFlag(backend, "-R/--local_register", options.registration, 0, "buffer registration");
    RefuseGpuFlag(backend, "-u/--unalign", options.unalign, 0, "unaligned buffers");
  }
  if (options.ngpus > caps.max_devices) {
    throw UnsupportedError(fmt::format("-g/--ngpus {}: backend {} drives at most {} per thread",
                                       options.ngpus, backend.name(), caps.max_devices));
  }
  if (options.graph_launches > 0 && !caps.graphs) {
    throw UnsupportedError(
        fmt::format("-G/--cudagraph {}: backend {} {} cannot capture graphs; drop -G",
                    options.graph_launches, backend.name(), backend.version()));
  }
  if (options.registration > caps.registration) {
    throw UnsupportedError(fmt::format(
        "-R/--local_register {}: backend {} {} supports {}; {}", options.registration,
        backend.name(), backend.version(),
        caps.registration == 0   ? "no buffer registration"
        : caps.registration == 1 ? "-R 1 (ncclCommRegister) only"
                                 : "-R 1 and 2",
        "-R 1 needs NCCL 2.19 or later (ncclMemAlloc, ncclCommRegister), -R 2 NCCL 2.27 "
        "(ncclCommWindowRegister)"));
  }
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
