// Private: the C ABI of the NCCL (RCCL) and CUDA (HIP) runtime calls the nccl backend makes,
// declared here so that the build needs neither SDK. Every value and layout is checked against
// the real nccl.h and cuda_runtime_api.h by tests/backends/nccl_backend_test.cc wherever
// those headers are installed. Enums are int-sized in C, so they are ints here.
#pragma once

#include <cstddef>

namespace fabricscope::gpu {

// ---- NCCL / RCCL (nccl.h; RCCL keeps NCCL's names and values) ----

using ncclResult_t = int;
inline constexpr ncclResult_t kNcclSuccess = 0;
inline constexpr ncclResult_t kNcclUnhandledCudaError = 1;
inline constexpr ncclResult_t kNcclSystemError = 2;
inline constexpr ncclResult_t kNcclInternalError = 3;
inline constexpr ncclResult_t kNcclInvalidArgument = 4;
inline constexpr ncclResult_t kNcclInvalidUsage = 5;
inline constexpr ncclResult_t kNcclRemoteError = 6;
inline constexpr ncclResult_t kNcclInProgress = 7;

inline constexpr size_t kNcclUniqueIdBytes = 128;
// Passed by value to ncclCommInitRank: the layout must be NCCL's exactly.
struct ncclUniqueId {
  char internal[kNcclUniqueIdBytes];
};

struct ncclComm;
using ncclComm_t = ncclComm*;
struct ncclWindow;
using ncclWindow_t = ncclWindow*;

using ncclDataType_t = int;
inline constexpr ncclDataType_t kNcclInt8 = 0;
inline constexpr ncclDataType_t kNcclUint8 = 1;
inline constexpr ncclDataType_t kNcclInt32 = 2;
inline constexpr ncclDataType_t kNcclUint32 = 3;
inline constexpr ncclDataType_t kNcclInt64 = 4;
inline constexpr ncclDataType_t kNcclUint64 = 5;
inline constexpr ncclDataType_t kNcclFloat16 = 6;
inline constexpr ncclDataType_t kNcclFloat32 = 7;
inline constexpr ncclDataType_t kNcclFloat64 = 8;
inline constexpr ncclDataType_t kNcclBfloat16 = 9;
inline constexpr ncclDataType_t kNcclFloat8e4m3 = 10;  // NCCL 2.24
inline constexpr ncclDataType_t kNcclFloat8e5m2 = 11;

using ncclRedOp_t = int;
inline constexpr ncclRedOp_t kNcclSum = 0;
inline constexpr ncclRedOp_t kNcclProd = 1;
inline constexpr ncclRedOp_t kNcclMax = 2;
inline constexpr ncclRedOp_t kNcclMin = 3;
inline constexpr ncclRedOp_t kNcclAvg = 4;
// ncclScalarResidence_t: the premultiplied sum's scalar is read from host memory when the op
// is created (ncclScalarHostImmediate, nccl.h).
inline constexpr int kNcclScalarHostImmediate = 1;

// cudaDeviceAttr values (driver_types.h): the compute capability, as nccl-tests reads it.
inline constexpr int kCudaDevAttrComputeCapabilityMajor = 75;
inline constexpr int kCudaDevAttrComputeCapabilityMinor = 76;

inline constexpr int kNcclWinCollSymmetric = 0x01;  // NCCL_WIN_COLL_SYMMETRIC

// NCCL_VERSION(X, Y, Z): the code scheme changed at 2.9.
constexpr int NcclVersionCode(int major, int minor, int patch) {
  return (major <= 2 && minor <= 8) ? major * 1000 + minor * 100 + patch
                                    : major * 10000 + minor * 100 + patch;
}

// ---- CUDA runtime (cuda_runtime_api.h, driver_types.h; HIP keeps the values used here) ----

using cudaError_t = int;
inline constexpr cudaError_t kCudaSuccess = 0;
inline constexpr cudaError_t kCudaErrorInsufficientDriver = 35;
inline constexpr cudaError_t kCudaErrorNoDevice = 100;
inline constexpr cudaError_t kCudaErrorNotReady = 600;

struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct CUevent_st;
using cudaEvent_t = CUevent_st*;
struct CUgraph_st;
using cudaGraph_t = CUgraph_st*;
struct CUgraphExec_st;
using cudaGraphExec_t = CUgraphExec_st*;

using cudaMemcpyKind = int;
inline constexpr cudaMemcpyKind kCudaMemcpyHostToDevice = 1;
inline constexpr cudaMemcpyKind kCudaMemcpyDeviceToHost = 2;

inline constexpr unsigned int kCudaStreamNonBlocking = 0x01;

using cudaStreamCaptureMode = int;
// Each thread captures its own streams (nccl-tests' choice: threads capture concurrently).
inline constexpr cudaStreamCaptureMode kCudaStreamCaptureModeThreadLocal = 1;

// cudaDeviceProp grows with every CUDA release, but `char name[256]` stays its first field;
// the backend passes a buffer this large and reads only the name.
inline constexpr size_t kDevicePropBufferBytes = 16384;
inline constexpr size_t kDeviceNameBytes = 256;

}  // namespace fabricscope::gpu
