// Private: NCCL (or RCCL) and the CUDA (or HIP) runtime, loaded with dlopen at run time and
// every symbol the backend calls resolved at load, so that one binary runs with whatever
// NCCL a node has, and starts on nodes that have none.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/nccl/gpu_abi.h"

namespace fabricscope::gpu {

// Which stack: NVIDIA (NCCL + CUDA) or AMD (RCCL + HIP, same API under other names).
enum class Vendor { kNvidia, kAmd };

// The vendor's words, for messages: "CUDA", "NCCL", "--nccl-lib".
struct VendorNames {
  std::string_view runtime;        // "CUDA" / "ROCm"
  std::string_view library;        // "NCCL" / "RCCL"
  std::string_view symbol_prefix;  // "cuda" / "hip"
};
const VendorNames& NamesOf(Vendor vendor);

// The runtime calls the backend makes.
struct RuntimeApi {
  cudaError_t (*GetDeviceCount)(int*) = nullptr;
  cudaError_t (*SetDevice)(int) = nullptr;
  cudaError_t (*Malloc)(void**, size_t) = nullptr;
  cudaError_t (*Free)(void*) = nullptr;
  cudaError_t (*Memcpy)(void*, const void*, size_t, cudaMemcpyKind) = nullptr;
  cudaError_t (*StreamCreateWithFlags)(cudaStream_t*, unsigned int) = nullptr;
  cudaError_t (*StreamDestroy)(cudaStream_t) = nullptr;
  cudaError_t (*StreamQuery)(cudaStream_t) = nullptr;
  cudaError_t (*EventCreate)(cudaEvent_t*) = nullptr;
  cudaError_t (*EventRecord)(cudaEvent_t, cudaStream_t) = nullptr;
  cudaError_t (*EventElapsedTime)(float*, cudaEvent_t, cudaEvent_t) = nullptr;
  cudaError_t (*EventDestroy)(cudaEvent_t) = nullptr;
  const char* (*GetErrorString)(cudaError_t) = nullptr;
  const char* (*GetErrorName)(cudaError_t) = nullptr;
  cudaError_t (*DeviceGetPCIBusId)(char*, int, int) = nullptr;
  cudaError_t (*GetDeviceProperties)(void*, int) = nullptr;
  cudaError_t (*RuntimeGetVersion)(int*) = nullptr;
  // CUDA only (HIP numbers its attributes otherwise), optional: the compute capability.
  cudaError_t (*DeviceGetAttribute)(int*, int, int) = nullptr;
  // Graphs (-G); all or none.
  cudaError_t (*StreamBeginCapture)(cudaStream_t, cudaStreamCaptureMode) = nullptr;
  cudaError_t (*StreamEndCapture)(cudaStream_t, cudaGraph_t*) = nullptr;
  cudaError_t (*GraphInstantiateWithFlags)(cudaGraphExec_t*, cudaGraph_t,
                                           unsigned long long) = nullptr;
  cudaError_t (*GraphLaunch)(cudaGraphExec_t, cudaStream_t) = nullptr;
  cudaError_t (*GraphExecDestroy)(cudaGraphExec_t) = nullptr;
  cudaError_t (*GraphDestroy)(cudaGraph_t) = nullptr;

  bool has_graphs() const { return StreamBeginCapture != nullptr; }
};

// The NCCL calls the backend makes. Optional ones are null when the library predates them.
struct NcclApi {
  ncclResult_t (*GetVersion)(int*) = nullptr;
  ncclResult_t (*GetUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*CommInitAll)(ncclComm_t*, int, const int*) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*ReduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                cudaStream_t) = nullptr;
  ncclResult_t (*Broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*Reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
  ncclResult_t (*Send)(const void*, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t) = nullptr;
  ncclResult_t (*Recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  // NCCL 2.13: the message behind the last error.
  const char* (*GetLastError)(ncclComm_t) = nullptr;
  // NCCL 2.28: alltoall, gather and scatter as calls (before: grouped send/recv).
  ncclResult_t (*AlltoAll)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                           cudaStream_t) = nullptr;
  ncclResult_t (*Gather)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
  ncclResult_t (*Scatter)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                          cudaStream_t) = nullptr;
  // NCCL 2.11: premultiplied sums (-o mulsum), created per call as nccl-tests creates them.
  ncclResult_t (*RedOpCreatePreMulSum)(ncclRedOp_t*, void*, ncclDataType_t, int,
                                       ncclComm_t) = nullptr;
  ncclResult_t (*RedOpDestroy)(ncclRedOp_t, ncclComm_t) = nullptr;
  // NCCL 2.19: buffers from NCCL's allocator, registered with a communicator (-R 1).
  ncclResult_t (*MemAlloc)(void**, size_t) = nullptr;
  ncclResult_t (*MemFree)(void*) = nullptr;
  ncclResult_t (*CommRegister)(ncclComm_t, void*, size_t, void**) = nullptr;
  ncclResult_t (*CommDeregister)(ncclComm_t, void*) = nullptr;
  // NCCL 2.27: symmetric windows (-R 2).
  ncclResult_t (*CommWindowRegister)(ncclComm_t, void*, size_t, ncclWindow_t*, int) = nullptr;
  ncclResult_t (*CommWindowDeregister)(ncclComm_t, ncclWindow_t) = nullptr;

  int registration_level() const {
    if (MemAlloc == nullptr || MemFree == nullptr) return 0;
    if (CommWindowRegister != nullptr && CommWindowDeregister != nullptr) return 2;
    return CommRegister != nullptr && CommDeregister != nullptr ? 1 : 0;
  }
};

// One symbol the backend looks up, and whether it was there.
struct SymbolRecord {
  std::string library;  // the file it was looked up in
  std::string name;     // the name that was found, or the first one tried
  bool required = false;
  bool found = false;
};

// A library handle; the library stays loaded for the life of the process.
class LoadedLibrary {
 public:
  LoadedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;
  void* handle() const { return handle_; }
  // The file the loader picked, as it resolved it.
  const std::string& path() const { return path_; }

 private:
  void* handle_;
  std::string path_;
};

// The runtime alone: enough to count devices (the default-backend probe).
struct GpuRuntime {
  Vendor vendor = Vendor::kNvidia;
  std::unique_ptr<LoadedLibrary> library;
  RuntimeApi api;
  std::vector<SymbolRecord> symbols;

  // "what failed: message (cudaErrorName)".
  std::string Describe(const char* what, cudaError_t error) const;
};

// The runtime and the collective library, loaded together.
struct GpuLibraries {
  GpuRuntime runtime;
  std::unique_ptr<LoadedLibrary> nccl_library;
  NcclApi nccl;
  std::vector<SymbolRecord> nccl_symbols;
  int nccl_version = 0;  // NCCL_VERSION_CODE reported by the library

  // "2.28.9"
  std::string VersionString() const;
};

// Loads the runtime: `path`, or the usual names through the dynamic loader's search.
// Throws UnsupportedError naming what was tried and the flag that picks another file.
GpuRuntime LoadRuntime(Vendor vendor, const std::string& path);

// Loads the runtime and then NCCL (RCCL), resolving every symbol; throws UnsupportedError.
std::unique_ptr<GpuLibraries> LoadLibraries(Vendor vendor, const std::string& nccl_path,
                                            const std::string& runtime_path);

}  // namespace fabricscope::gpu
