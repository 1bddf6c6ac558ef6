#include "backends/nccl/gpu_libraries.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"

namespace fabricscope::gpu {
namespace {

constexpr VendorNames kNvidia{"CUDA", "NCCL", "cuda"};
constexpr VendorNames kAmd{"ROCm", "RCCL", "hip"};

// The names the dynamic loader is asked for, newest first, when no path is given.
std::vector<std::string> RuntimeCandidates(Vendor vendor) {
  if (vendor == Vendor::kAmd) return {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  return {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
}

std::vector<std::string> NcclCandidates(Vendor vendor) {
  if (vendor == Vendor::kAmd) return {"librccl.so.1", "librccl.so"};
  return {"libnccl.so.2", "libnccl.so"};
}

// dlopen of `path`, or of each candidate in turn; throws naming what was tried and how to fix.
std::unique_ptr<LoadedLibrary> Open(const std::string& path,
                                    const std::vector<std::string>& candidates,
                                    const std::string& what, const char* flag) {
  const std::vector<std::string> tried = path.empty() ? candidates : std::vector{path};
  std::string first_error;
  for (const std::string& name : tried) {
    // RTLD_LOCAL: NCCL's symbols must not satisfy anything else loaded later, and two NCCL
    // builds could then even live in one process.
    void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      std::string resolved = name;
      link_map* map = nullptr;
      if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
          map->l_name != nullptr && map->l_name[0] != '\0') {
        resolved = map->l_name;
      }
      return std::make_unique<LoadedLibrary>(handle, resolved);
    }
    if (first_error.empty()) {
      const char* error = ::dlerror();
      first_error = error != nullptr ? error : name + ": not found";
    }
  }
  if (!path.empty()) {
    throw UnsupportedError(
        fmt::format("cannot load the {} given by {}: {}; check the path", what, flag, first_error));
  }
  const std::string names = Joined(tried);
  throw UnsupportedError(fmt::format(
      "cannot load the {}: tried {} through the dynamic loader's search ({}); install it, add "
      "its directory to LD_LIBRARY_PATH, or give {} PATH",
      what, names, first_error, flag));
}

// Looks symbols up in one library and records each lookup.
class Resolver {
 public:
  Resolver(const LoadedLibrary& library, std::vector<SymbolRecord>& records)
      : library_(library), records_(records) {}

  // The first of `names` the library has; `required` ones that are missing fail in Check.
  template <typename F>
  bool Bind(F& slot, std::initializer_list<std::string> names, bool required) {
    for (const std::string& name : names) {
      if (void* p = ::dlsym(library_.handle(), name.c_str())) {
        slot = reinterpret_cast<F>(p);
        records_.push_back({library_.path(), name, required, true});
        return true;
      }
    }
    records_.push_back({library_.path(), *names.begin(), required, false});
    if (required) missing_.push_back(*names.begin());
    return false;
  }

  // Throws when a required symbol is missing: the library is too old or not what it says.
  void Check(const std::string& what) const {
    if (missing_.empty()) return;
    const std::string names = Joined(missing_);
    throw UnsupportedError(
        fmt::format("{} {} lacks {}: it is too old or not a {} library; give another with the flag",
                    what, library_.path(), names, what));
  }

 private:
  const LoadedLibrary& library_;
  std::vector<SymbolRecord>& records_;
  std::vector<std::string> missing_;
};

void BindRuntime(Resolver& r, RuntimeApi& api, Vendor vendor) {
  const std::string p(NamesOf(vendor).symbol_prefix);
  r.Bind(api.GetDeviceCount, {p + "GetDeviceCount"}, true);
  r.Bind(api.SetDevice, {p + "SetDevice"}, true);
  r.Bind(api.Malloc, {p + "Malloc"}, true);
  r.Bind(api.Free, {p + "Free"}, true);
  r.Bind(api.Memcpy, {p + "Memcpy"}, true);
  r.Bind(api.StreamCreateWithFlags, {p + "StreamCreateWithFlags"}, true);
  r.Bind(api.StreamDestroy, {p + "StreamDestroy"}, true);
  r.Bind(api.StreamQuery, {p + "StreamQuery"}, true);
  r.Bind(api.EventCreate, {p + "EventCreate"}, true);
  r.Bind(api.EventRecord, {p + "EventRecord"}, true);
  r.Bind(api.EventElapsedTime, {p + "EventElapsedTime"}, true);
  r.Bind(api.EventDestroy, {p + "EventDestroy"}, true);
  r.Bind(api.GetErrorString, {p + "GetErrorString"}, true);
  r.Bind(api.GetErrorName, {p + "GetErrorName"}, true);
  r.Bind(api.DeviceGetPCIBusId, {p + "DeviceGetPCIBusId"}, true);
  // CUDA 12 exports the current layout as _v2, ROCm 6 as R0600; the name is first in each.
  if (vendor == Vendor::kAmd) {
    r.Bind(api.GetDeviceProperties, {"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"},
           true);
  } else {
    r.Bind(api.GetDeviceProperties, {"cudaGetDeviceProperties_v2", "cudaGetDeviceProperties"},
           true);
  }
  r.Bind(api.RuntimeGetVersion, {p + "RuntimeGetVersion"}, true);
  if (vendor == Vendor::kNvidia) r.Bind(api.DeviceGetAttribute, {"cudaDeviceGetAttribute"}, false);
  bool graphs = r.Bind(api.StreamBeginCapture, {p + "StreamBeginCapture"}, false);
  graphs &= r.Bind(api.StreamEndCapture, {p + "StreamEndCapture"}, false);
  graphs &= r.Bind(api.GraphInstantiateWithFlags, {p + "GraphInstantiateWithFlags"}, false);
  graphs &= r.Bind(api.GraphLaunch, {p + "GraphLaunch"}, false);
  graphs &= r.Bind(api.GraphExecDestroy, {p + "GraphExecDestroy"}, false);
  graphs &= r.Bind(api.GraphDestroy, {p + "GraphDestroy"}, false);
  if (!graphs) api.StreamBeginCapture = nullptr;  // all or none
}

void BindNccl(Resolver& r, NcclApi& api) {
  r.Bind(api.GetVersion, {"ncclGetVersion"}, true);
  r.Bind(api.GetUniqueId, {"ncclGetUniqueId"}, true);
  r.Bind(api.CommInitRank, {"ncclCommInitRank"}, true);
  r.Bind(api.CommInitAll, {"ncclCommInitAll"}, true);
  r.Bind(api.CommDestroy, {"ncclCommDestroy"}, true);
  r.Bind(api.CommAbort, {"ncclCommAbort"}, true);
  r.Bind(api.CommGetAsyncError, {"ncclCommGetAsyncError"}, true);
  r.Bind(api.GetErrorString, {"ncclGetErrorString"}, true);
  r.Bind(api.GroupStart, {"ncclGroupStart"}, true);
  r.Bind(api.GroupEnd, {"ncclGroupEnd"}, true);
  r.Bind(api.AllReduce, {"ncclAllReduce"}, true);
  r.Bind(api.AllGather, {"ncclAllGather"}, true);
  r.Bind(api.ReduceScatter, {"ncclReduceScatter"}, true);
  r.Bind(api.Broadcast, {"ncclBroadcast"}, true);
  r.Bind(api.Reduce, {"ncclReduce"}, true);
  r.Bind(api.Send, {"ncclSend"}, true);
  r.Bind(api.Recv, {"ncclRecv"}, true);
  r.Bind(api.GetLastError, {"ncclGetLastError"}, false);
  r.Bind(api.AlltoAll, {"ncclAlltoAll"}, false);
  r.Bind(api.Gather, {"ncclGather"}, false);
  r.Bind(api.Scatter, {"ncclScatter"}, false);
  r.Bind(api.RedOpCreatePreMulSum, {"ncclRedOpCreatePreMulSum"}, false);
  r.Bind(api.RedOpDestroy, {"ncclRedOpDestroy"}, false);
  r.Bind(api.MemAlloc, {"ncclMemAlloc"}, false);
  r.Bind(api.MemFree, {"ncclMemFree"}, false);
  r.Bind(api.CommRegister, {"ncclCommRegister"}, false);
  r.Bind(api.CommDeregister, {"ncclCommDeregister"}, false);
  r.Bind(api.CommWindowRegister, {"ncclCommWindowRegister"}, false);
  r.Bind(api.CommWindowDeregister, {"ncclCommWindowDeregister"}, false);
}

}  // namespace

const VendorNames& NamesOf(Vendor vendor) { return vendor == Vendor::kAmd ? kAmd : kNvidia; }

// Never dlclose: NCCL and the runtimes keep threads and driver state until the process ends,
// and unloading code under a running thread would crash it.
LoadedLibrary::~LoadedLibrary() = default;

std::string GpuRuntime::Describe(const char* what, cudaError_t error) const {
  const char* message = api.GetErrorString != nullptr ? api.GetErrorString(error) : nullptr;
  const char* name = api.GetErrorName != nullptr ? api.GetErrorName(error) : nullptr;
  return fmt::format("{}: {} ({})", what, message != nullptr ? message : "unknown error",
                     name != nullptr ? name : std::to_string(error));
}

std::string GpuLibraries::VersionString() const {
  const int code = nccl_version;
  // NCCL_VERSION's two schemes: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9.
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

GpuRuntime LoadRuntime(Vendor vendor, const std::string& path) {
  GpuRuntime runtime;
  runtime.vendor = vendor;
  runtime.library = Open(path, RuntimeCandidates(vendor),
                         std::string(NamesOf(vendor).runtime) + " runtime", "--gpu-runtime-lib");
  Resolver resolver(*runtime.library, runtime.symbols);
  BindRuntime(resolver, runtime.api, vendor);
  resolver.Check(std::string(NamesOf(vendor).runtime) + " runtime");
  return runtime;
}

std::unique_ptr<GpuLibraries> LoadLibraries(Vendor vendor, const std::string& nccl_path,
                                            const std::string& runtime_path) {
  auto libraries = std::make_unique<GpuLibraries>();
  libraries->runtime = LoadRuntime(vendor, runtime_path);
  const std::string what(NamesOf(vendor).library);
  libraries->nccl_library =
      Open(nccl_path, NcclCandidates(vendor), what + " library", "--nccl-lib");
  Resolver resolver(*libraries->nccl_library, libraries->nccl_symbols);
  BindNccl(resolver, libraries->nccl);
  resolver.Check(what);
  int version = 0;
  if (libraries->nccl.GetVersion(&version) != kNcclSuccess || version <= 0) {
    throw UnsupportedError(fmt::format("{} {}: ncclGetVersion failed; is it a {} library?", what,
                                       libraries->nccl_library->path(), what));
  }
  libraries->nccl_version = version;
  return libraries;
}

}  // namespace fabricscope::gpu
