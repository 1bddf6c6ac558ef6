// The nccl backend. Against the real NCCL and CUDA runtime where they are installed: they
// load, every symbol the backend calls resolves, the backend's own declarations of their ABI
// match the real headers, and without a driver `fabricscope run --backend nccl` says "no CUDA
// device" in one line and exits 2. Against the fake GPU libraries (tests/backends/fake_gpu,
// a TEST DOUBLE over host memory), everything that needs a GPU: every collective and
// placement, -g with group calls, -t, processes, graphs, registration, blocking modes,
// validation, the -T abort path, NCCL's transport log.
#include "backends/nccl/nccl_backend.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/nccl/gpu_abi.h"
#include "backends/nccl/gpu_libraries.h"
#include "backends/nccl/nccl_debug_log.h"
#include "common/result_checks.h"
#include "fabricscope/backend.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"
#include "fabricscope/launch.h"
#include "fabricscope/tcp_store.h"

#if FABRICSCOPE_HAVE_CUDA_HEADERS
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace fabricscope {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// The backend's declarations of the C ABI against the real headers, where they exist.

#if FABRICSCOPE_HAVE_CUDA_HEADERS
// Two parameter types are passed alike: same size, and same kind (pointer, integer or enum,
// floating point, struct by value).
template <typename A, typename B>
constexpr bool SameKind() {
  constexpr bool a_int = std::is_integral_v<A> || std::is_enum_v<A>;
  constexpr bool b_int = std::is_integral_v<B> || std::is_enum_v<B>;
  return sizeof(A) == sizeof(B) && std::is_pointer_v<A> == std::is_pointer_v<B> && a_int == b_int &&
         std::is_class_v<A> == std::is_class_v<B> &&
         std::is_floating_point_v<A> == std::is_floating_point_v<B>;
}

template <typename R1, typename... A1, typename R2, typename... A2>
constexpr bool SameAbi(R1 (*)(A1...), R2 (*)(A2...)) {
  if constexpr (sizeof...(A1) != sizeof...(A2)) {
    return false;
  } else {
    return SameKind<R1, R2>() && (SameKind<A1, A2>() && ...);
  }
}

#define EXPECT_SAME_ABI(real, table, field) \
  static_assert(SameAbi(&real, static_cast<decltype(table::field)>(nullptr)), #real)

EXPECT_SAME_ABI(::ncclGetVersion, gpu::NcclApi, GetVersion);
EXPECT_SAME_ABI(::ncclGetUniqueId, gpu::NcclApi, GetUniqueId);
EXPECT_SAME_ABI(::ncclCommInitRank, gpu::NcclApi, CommInitRank);
EXPECT_SAME_ABI(::ncclCommInitAll, gpu::NcclApi, CommInitAll);
EXPECT_SAME_ABI(::ncclCommDestroy, gpu::NcclApi, CommDestroy);
EXPECT_SAME_ABI(::ncclCommAbort, gpu::NcclApi, CommAbort);
EXPECT_SAME_ABI(::ncclCommGetAsyncError, gpu::NcclApi, CommGetAsyncError);
EXPECT_SAME_ABI(::ncclGetErrorString, gpu::NcclApi, GetErrorString);
EXPECT_SAME_ABI(::ncclGetLastError, gpu::NcclApi, GetLastError);
EXPECT_SAME_ABI(::ncclGroupStart, gpu::NcclApi, GroupStart);
EXPECT_SAME_ABI(::ncclGroupEnd, gpu::NcclApi, GroupEnd);
EXPECT_SAME_ABI(::ncclAllReduce, gpu::NcclApi, AllReduce);
EXPECT_SAME_ABI(::ncclAllGather, gpu::NcclApi, AllGather);
EXPECT_SAME_ABI(::ncclReduceScatter, gpu::NcclApi, ReduceScatter);
EXPECT_SAME_ABI(::ncclBroadcast, gpu::NcclApi, Broadcast);
EXPECT_SAME_ABI(::ncclReduce, gpu::NcclApi, Reduce);
EXPECT_SAME_ABI(::ncclSend, gpu::NcclApi, Send);
EXPECT_SAME_ABI(::ncclRecv, gpu::NcclApi, Recv);
EXPECT_SAME_ABI(::ncclAlltoAll, gpu::NcclApi, AlltoAll);
EXPECT_SAME_ABI(::ncclGather, gpu::NcclApi, Gather);
EXPECT_SAME_ABI(::ncclScatter, gpu::NcclApi, Scatter);
EXPECT_SAME_ABI(::ncclMemAlloc, gpu::NcclApi, MemAlloc);
EXPECT_SAME_ABI(::ncclMemFree, gpu::NcclApi, MemFree);
EXPECT_SAME_ABI(::ncclCommRegister, gpu::NcclApi, CommRegister);
EXPECT_SAME_ABI(::ncclCommDeregister, gpu::NcclApi, CommDeregister);
EXPECT_SAME_ABI(::ncclCommWindowRegister, gpu::NcclApi, CommWindowRegister);
EXPECT_SAME_ABI(::ncclCommWindowDeregister, gpu::NcclApi, CommWindowDeregister);

EXPECT_SAME_ABI(::cudaGetDeviceCount, gpu::RuntimeApi, GetDeviceCount);
EXPECT_SAME_ABI(::cudaSetDevice, gpu::RuntimeApi, SetDevice);
EXPECT_SAME_ABI(::cudaFree, gpu::RuntimeApi, Free);
EXPECT_SAME_ABI(::cudaMemcpy, gpu::RuntimeApi, Memcpy);
EXPECT_SAME_ABI(::cudaStreamCreateWithFlags, gpu::RuntimeApi, StreamCreateWithFlags);
EXPECT_SAME_ABI(::cudaStreamDestroy, gpu::RuntimeApi, StreamDestroy);
EXPECT_SAME_ABI(::cudaStreamQuery, gpu::RuntimeApi, StreamQuery);
EXPECT_SAME_ABI(::cudaEventRecord, gpu::RuntimeApi, EventRecord);
EXPECT_SAME_ABI(::cudaEventElapsedTime, gpu::RuntimeApi, EventElapsedTime);
EXPECT_SAME_ABI(::cudaEventDestroy, gpu::RuntimeApi, EventDestroy);
EXPECT_SAME_ABI(::cudaGetErrorString, gpu::RuntimeApi, GetErrorString);
EXPECT_SAME_ABI(::cudaGetErrorName, gpu::RuntimeApi, GetErrorName);
EXPECT_SAME_ABI(::cudaDeviceGetPCIBusId, gpu::RuntimeApi, DeviceGetPCIBusId);
EXPECT_SAME_ABI(::cudaGetDeviceProperties, gpu::RuntimeApi, GetDeviceProperties);
EXPECT_SAME_ABI(::cudaRuntimeGetVersion, gpu::RuntimeApi, RuntimeGetVersion);
static_assert(
    SameAbi(static_cast<cudaError_t (*)(int*, cudaDeviceAttr, int)>(&::cudaDeviceGetAttribute),
            static_cast<decltype(gpu::RuntimeApi::DeviceGetAttribute)>(nullptr)));
static_assert(::cudaDevAttrComputeCapabilityMajor == gpu::kCudaDevAttrComputeCapabilityMajor &&
              ::cudaDevAttrComputeCapabilityMinor == gpu::kCudaDevAttrComputeCapabilityMinor);
EXPECT_SAME_ABI(::cudaStreamBeginCapture, gpu::RuntimeApi, StreamBeginCapture);
EXPECT_SAME_ABI(::cudaStreamEndCapture, gpu::RuntimeApi, StreamEndCapture);
EXPECT_SAME_ABI(::cudaGraphInstantiateWithFlags, gpu::RuntimeApi, GraphInstantiateWithFlags);
EXPECT_SAME_ABI(::cudaGraphLaunch, gpu::RuntimeApi, GraphLaunch);
EXPECT_SAME_ABI(::cudaGraphExecDestroy, gpu::RuntimeApi, GraphExecDestroy);
EXPECT_SAME_ABI(::cudaGraphDestroy, gpu::RuntimeApi, GraphDestroy);
// cudaMalloc and cudaEventCreate have C++ overloads too; the C function is the one dlsym finds.
static_assert(SameAbi(static_cast<cudaError_t (*)(void**, size_t)>(&::cudaMalloc),
                      static_cast<decltype(gpu::RuntimeApi::Malloc)>(nullptr)));
static_assert(SameAbi(static_cast<cudaError_t (*)(cudaEvent_t*)>(&::cudaEventCreate),
                      static_cast<decltype(gpu::RuntimeApi::EventCreate)>(nullptr)));

static_assert(sizeof(::ncclUniqueId) == sizeof(gpu::ncclUniqueId));
static_assert(NCCL_UNIQUE_ID_BYTES == gpu::kNcclUniqueIdBytes);
static_assert(sizeof(::ncclResult_t) == sizeof(gpu::ncclResult_t));
static_assert(::ncclSuccess == gpu::kNcclSuccess && ::ncclInProgress == gpu::kNcclInProgress &&
              ::ncclRemoteError == gpu::kNcclRemoteError &&
              ::ncclInvalidUsage == gpu::kNcclInvalidUsage &&
              ::ncclInvalidArgument == gpu::kNcclInvalidArgument &&
              ::ncclSystemError == gpu::kNcclSystemError &&
              ::ncclInternalError == gpu::kNcclInternalError &&
              ::ncclUnhandledCudaError == gpu::kNcclUnhandledCudaError);
static_assert(sizeof(::ncclDataType_t) == sizeof(gpu::ncclDataType_t));
static_assert(::ncclInt8 == gpu::kNcclInt8 && ::ncclUint8 == gpu::kNcclUint8 &&
              ::ncclInt32 == gpu::kNcclInt32 && ::ncclUint32 == gpu::kNcclUint32 &&
              ::ncclInt64 == gpu::kNcclInt64 && ::ncclUint64 == gpu::kNcclUint64 &&
              ::ncclFloat16 == gpu::kNcclFloat16 && ::ncclFloat32 == gpu::kNcclFloat32 &&
              ::ncclFloat64 == gpu::kNcclFloat64 && ::ncclBfloat16 == gpu::kNcclBfloat16);
static_assert(::ncclFloat8e4m3 == gpu::kNcclFloat8e4m3 && ::ncclFloat8e5m2 == gpu::kNcclFloat8e5m2);
static_assert(::ncclScalarHostImmediate == gpu::kNcclScalarHostImmediate);
EXPECT_SAME_ABI(::ncclRedOpCreatePreMulSum, gpu::NcclApi, RedOpCreatePreMulSum);
EXPECT_SAME_ABI(::ncclRedOpDestroy, gpu::NcclApi, RedOpDestroy);
static_assert(sizeof(::ncclRedOp_t) == sizeof(gpu::ncclRedOp_t));
static_assert(::ncclSum == gpu::kNcclSum && ::ncclProd == gpu::kNcclProd &&
              ::ncclMax == gpu::kNcclMax && ::ncclMin == gpu::kNcclMin &&
              ::ncclAvg == gpu::kNcclAvg);
static_assert(NCCL_WIN_COLL_SYMMETRIC == gpu::kNcclWinCollSymmetric);
static_assert(NCCL_VERSION(2, 28, 9) == gpu::NcclVersionCode(2, 28, 9) &&
              NCCL_VERSION(2, 8, 4) == gpu::NcclVersionCode(2, 8, 4));
static_assert(sizeof(::cudaError_t) == sizeof(gpu::cudaError_t));
static_assert(::cudaSuccess == gpu::kCudaSuccess &&
              ::cudaErrorNotReady == gpu::kCudaErrorNotReady &&
              ::cudaErrorNoDevice == gpu::kCudaErrorNoDevice &&
              ::cudaErrorInsufficientDriver == gpu::kCudaErrorInsufficientDriver);
static_assert(::cudaMemcpyHostToDevice == gpu::kCudaMemcpyHostToDevice &&
              ::cudaMemcpyDeviceToHost == gpu::kCudaMemcpyDeviceToHost);
static_assert(cudaStreamNonBlocking == gpu::kCudaStreamNonBlocking);
static_assert(::cudaStreamCaptureModeThreadLocal == gpu::kCudaStreamCaptureModeThreadLocal);
static_assert(offsetof(::cudaDeviceProp, name) == 0);
static_assert(sizeof(::cudaDeviceProp{}.name) == gpu::kDeviceNameBytes);
static_assert(sizeof(::cudaDeviceProp) <= gpu::kDevicePropBufferBytes);
#endif

// ---------------------------------------------------------------------------------------
// Helpers.

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Sets environment variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<std::string, std::string>> values) {
    for (const auto& [name, value] : values) Set(name, value);
  }
  void Set(const std::string& name, const std::string& value) {
    if (!saved_.contains(name)) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old != nullptr ? std::optional<std::string>(old) : std::nullopt;
    }
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

fs::path TestDir() {
  // Parameterized tests are named "Test/case": one directory, not two.
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  const fs::path dir =
      fs::temp_directory_path() / ("fabricscope-nccl-" + std::to_string(getpid()) + "-" + name);
  fs::create_directories(dir);
  return dir;
}

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The real binary through sh, output captured.
Outcome RunBinary(const fs::path& dir, const std::string& args, const std::string& env = "") {
  const fs::path out = dir / "stdout";
  const fs::path err = dir / "stderr";
  const std::string cmd = env + " " + FABRICSCOPE_BINARY + " " + args + " >" + out.string() +
                          " 2>" + err.string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.out = Slurp(out);
  o.err = Slurp(err);
  return o;
}

const std::string kFakeLibs =
    std::string(" --nccl-lib ") + FAKE_NCCL_PATH + " --gpu-runtime-lib " + FAKE_CUDART_PATH + " ";

BackendOptions FakeOptions(const char* nccl = FAKE_NCCL_PATH) {
  return {nccl, FAKE_CUDART_PATH, Env()};
}

// Whether the real NCCL and CUDA runtime are installed here.
bool RealLibrariesInstalled() {
  try {
    gpu::LoadLibraries(gpu::Vendor::kNvidia, "", "");
    return true;
  } catch (const UnsupportedError&) {
    return false;
  }
}

RunOptions SmallSweep(std::vector<Collective> collectives, int threads, int gpus) {
  RunOptions o;
  o.backend = "nccl";
  o.collectives = std::move(collectives);
  o.nthreads = threads;
  o.ngpus = gpus;
  o.min_bytes = 8;
  o.max_bytes = 4096;
  o.step_factor = 8;  // 8, 64, 512, 4096
  o.iters = 2;
  o.warmup_iters = 1;
  o.check = 1;
  o.timeout_s = 60;
  return o;
}

using test::ExpectAllValid;

// An in-process run on the fake libraries, with the fake's call trace.
class FakeGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestDir();
    env_.Set("FAKE_GPU_TRACE", (dir_ / "trace").string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunResult Run(const RunOptions& options, const BackendOptions& libs = FakeOptions()) {
    auto backend = MakeBackend(options.backend, libs);
    return RunThreads(options, *backend, nullptr);
  }
  std::string Trace() const { return Slurp(dir_ / "trace"); }

  fs::path dir_;
  ScopedEnv env_{};
};

// ---------------------------------------------------------------------------------------
// The real NCCL and CUDA runtime (skipped where they are not installed).

#if FABRICSCOPE_HAVE_CUDA_HEADERS
// The host's FP8 against CUDA's own conversions (cuda_fp8.hpp, the __nv_fp8_e4m3(float) and
// __nv_fp8_e5m2(float) that nccl-tests' verifiable.cu uses: __NV_SATFINITE, nearest even).
template <typename Ours, typename Cuda>
void ExpectDecodesAsCuda(float (*decode)(Ours)) {
  for (unsigned code = 0; code < 256; ++code) {
    Cuda cuda;
    cuda.__x = static_cast<__nv_fp8_storage_t>(code);
    const float want = static_cast<float>(cuda);
    const float got = decode(Ours{static_cast<uint8_t>(code)});
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << code;
    } else {
      EXPECT_EQ(got, want) << "code " << code;
    }
  }
}

template <typename Ours>
void ExpectEncodesAsCuda(Ours (*encode)(float), __nv_fp8_interpretation_t kind, float value) {
  const unsigned want = __nv_cvt_float_to_fp8(value, __NV_SATFINITE, kind);
  EXPECT_EQ(encode(value).bits, want) << "value " << value;
}

TEST(Fp8AgainstCuda, EveryCodeDecodesAndFloatsEncodeAsCudaDoes) {
  ExpectDecodesAsCuda<Fp8E4M3, __nv_fp8_e4m3>(&ToFloat);
  ExpectDecodesAsCuda<Fp8E5M2, __nv_fp8_e5m2>(&ToFloat);
  // Around every code: the code, the midpoints to its neighbours (ties go to even) and the
  // floats on either side of them; then a stride through all 2^32 float patterns.
  for (unsigned code = 0; code < 255; ++code) {
    const std::pair<float, float> e4m3{ToFloat(Fp8E4M3{static_cast<uint8_t>(code)}),
                                       ToFloat(Fp8E4M3{static_cast<uint8_t>(code + 1)})};
    const std::pair<float, float> e5m2{ToFloat(Fp8E5M2{static_cast<uint8_t>(code)}),
                                       ToFloat(Fp8E5M2{static_cast<uint8_t>(code + 1)})};
    for (const auto& [lo, hi] : {e4m3, e5m2}) {
      if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
      const float mid = (lo + hi) / 2;
      for (float v : {lo, mid, std::nextafter(mid, lo), std::nextafter(mid, hi)}) {
        ExpectEncodesAsCuda<Fp8E4M3>(&ToFp8E4M3, __NV_E4M3, v);
        ExpectEncodesAsCuda<Fp8E5M2>(&ToFp8E5M2, __NV_E5M2, v);
      }
    }
  }
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 65521) {
    const auto pattern = static_cast<uint32_t>(bits);
    float value = 0;
    std::memcpy(&value, &pattern, sizeof value);
    ExpectEncodesAsCuda<Fp8E4M3>(&ToFp8E4M3, __NV_E4M3, value);
    ExpectEncodesAsCuda<Fp8E5M2>(&ToFp8E5M2, __NV_E5M2, value);
  }
}
#endif

TEST(RealLibraries, LoadAndResolveEverySymbolTheBackendUses) {
  if (!RealLibrariesInstalled()) GTEST_SKIP() << "NCCL or the CUDA runtime is not installed";
  const auto libs = gpu::LoadLibraries(gpu::Vendor::kNvidia, "", "");
  ASSERT_FALSE(libs->runtime.symbols.empty());
  ASSERT_FALSE(libs->nccl_symbols.empty());
  // NCCL 2.28 and CUDA 13 have every call, the optional ones included.
  for (const auto* table : {&libs->runtime.symbols, &libs->nccl_symbols}) {
    for (const gpu::SymbolRecord& s : *table) {
      EXPECT_TRUE(s.found) << s.name << " in " << s.library;
    }
  }
  EXPECT_NE(libs->nccl_library->path().find("libnccl.so"), std::string::npos);
  EXPECT_NE(libs->runtime.library->path().find("libcudart.so"), std::string::npos);
  EXPECT_TRUE(libs->runtime.api.has_graphs());
  EXPECT_EQ(libs->nccl.registration_level(), 2);
#if FABRICSCOPE_HAVE_CUDA_HEADERS
  EXPECT_EQ(libs->nccl_version, NCCL_VERSION_CODE);
  EXPECT_EQ(libs->VersionString(), std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) +
                                       "." + std::to_string(NCCL_PATCH));
#endif
}

TEST(RealLibraries, WithoutADriverTheBinarySaysNoCudaDeviceInOneLineAndExits2) {
  if (!RealLibrariesInstalled()) GTEST_SKIP() << "NCCL or the CUDA runtime is not installed";
  std::string why;
  if (ProbeNccl({}, &why)) GTEST_SKIP() << "this machine has a GPU: " << why;
  const fs::path dir = TestDir();
  for (const char* args : {"run --backend nccl", "run --backend nccl -b 8 -e 8"}) {
    const Outcome o = RunBinary(dir, args);
    EXPECT_EQ(o.exit_code, 2) << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
    const auto lines = Lines(o.err);
    ASSERT_EQ(lines.size(), 1u) << o.err;
    EXPECT_TRUE(lines[0].starts_with("fabricscope: error: no CUDA device: cudaGetDeviceCount: "))
        << lines[0];
  }
  // Without --backend: a host backend, and the reason on stderr.
  const Outcome o = RunBinary(dir, "run -b 1K -e 1K -n 2");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("# fabricscope: no --backend given: using gloo (no CUDA device: "),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("backend=gloo"), std::string::npos);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------
// Every collective, both placements, threads and GPUs per thread, on the fake.

class FakeCollectiveTest : public FakeGpuTest,
                           public ::testing::WithParamInterface<std::tuple<Collective, int, int>> {
};

TEST_P(FakeCollectiveTest, EveryTypeOpRootAndPlacementValidates) {
  const auto [collective, threads, gpus] = GetParam();
  const CollectiveSpec& spec = SpecOf(collective);
  RunOptions o = SmallSweep({collective}, threads, gpus);
  o.types = {DataType::kFloat, DataType::kInt8, DataType::kBfloat16, DataType::kUint64};
  o.ops = AllReduceOps();
  o.root = spec.has_root ? -1 : 0;
  const RunResult result = Run(o);
  ExpectAllValid(result);
  const int nranks = threads * gpus;
  EXPECT_EQ(result.nranks, nranks);
  const size_t roots = spec.has_root ? static_cast<size_t>(nranks) : 1;
  const size_t ops = spec.has_op ? o.ops.size() : 1;
  EXPECT_EQ(result.rows.size(), 4u * o.types.size() * ops * roots);
  // A thread that drives several GPUs creates its communicators and launches every call in
  // groups; the fake refuses anything else, so the run above proves it, and the trace shows it.
  const std::string trace = Trace();
  EXPECT_EQ(Count(trace, "ncclCommInitRank"), static_cast<size_t>(nranks));
  if (threads == 1) {
    // One thread is the whole communicator: ncclCommInitAll, as nccl-tests, and no id.
    EXPECT_EQ(Count(trace, "ncclCommInitAll ndev=" + std::to_string(gpus)), 1u);
  } else {
    EXPECT_EQ(Count(trace, "ncclCommInitAll"), 0u);
    EXPECT_EQ(Count(trace, "ncclGetUniqueId"), 1u);
  }
  if (gpus > 1) {
    EXPECT_EQ(Count(trace, "grouped=0"), 0u);
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::tuple<Collective, int, int>>& info) {
  return std::string(SpecOf(std::get<0>(info.param)).name) + "_t" +
         std::to_string(std::get<1>(info.param)) + "_g" + std::to_string(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Fake, FakeCollectiveTest,
    ::testing::Combine(::testing::Values(Collective::kAllReduce, Collective::kAllGather,
                                         Collective::kReduceScatter, Collective::kBroadcast,
                                         Collective::kReduce, Collective::kAlltoAll,
                                         Collective::kSendRecv, Collective::kGather,
                                         Collective::kScatter),
                       ::testing::Values(1, 2), ::testing::Values(1, 2)),
    CaseName);

TEST_F(FakeGpuTest, DevicesFollowTheLocalRankAndAreDescribed) {
  const RunResult result = Run(SmallSweep({Collective::kAllReduce}, 2, 2));
  ExpectAllValid(result);
  EXPECT_EQ(result.backend, "nccl");
  EXPECT_EQ(result.backend_version, "2.28.9");
  EXPECT_EQ(result.nccl_version, 22809);
  EXPECT_EQ(result.config.ngpus, 2);
  ASSERT_EQ(result.ranks.size(), 4u);
  const char* buses[] = {"0000:1b:00", "0000:1c:00", "0000:1d:00", "0000:1e:00"};
  for (int r = 0; r < 4; ++r) {
    const RankInfo& info = result.ranks[static_cast<size_t>(r)];
    EXPECT_EQ(info.rank, r);
    EXPECT_EQ(info.device, r);  // thread x GPUs + GPU, local rank 0
    EXPECT_EQ(info.device_bus_id, buses[r]);
    EXPECT_EQ(info.device_name, "Fake GPU " + std::to_string(r) + " (host memory test double)");
  }
  // Each communicator is created on its own device.
  const std::string trace = Trace();
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(trace.find("ncclCommInitRank rank=" + std::to_string(r) +
                         " nranks=4 device=" + std::to_string(r)),
              std::string::npos);
  }
}

// The warm-up doubles from -b up to -e whatever the step (nccl-tests' TimeTest,
// src/common.cu:924-931), so its sizes can pass the sweep's: -b 1K -e 2K with the default
// step of 1 MiB sweeps 1K only and warms 1K and 2K. The buffers hold the warm-up's largest
// call, which the fake checks against its device allocations.
TEST_F(FakeGpuTest, TheWarmUpsLargestSizeFitsTheBuffersWhenTheSweepStopsShortOfIt) {
  RunOptions o = SmallSweep({Collective::kAllReduce, Collective::kAllGather}, 2, 1);
  o.min_bytes = 1024;
  o.max_bytes = 2048;
  o.step_factor = 1;
  o.step_bytes = size_t{1} << 20;
  const RunResult result = Run(o);
  ExpectAllValid(result);
  ASSERT_EQ(result.rows.size(), 2u);  // one size, two collectives
  EXPECT_EQ(result.rows[0].size, 1024u);
  const std::string trace = Trace();
  EXPECT_NE(trace.find("ncclAllReduce rank=0 count=512 "), std::string::npos) << trace;
  EXPECT_NE(trace.find("ncclAllGather rank=0 count=256 "), std::string::npos) << trace;
  EXPECT_EQ(trace.find("is not device memory"), std::string::npos) << trace;
}

TEST_F(FakeGpuTest, GraphsAreCapturedOnEveryDeviceAndReplayed) {
  RunOptions o = SmallSweep({Collective::kAllReduce, Collective::kAlltoAll}, 1, 2);
  o.max_bytes = 64;  // 8, 64
  o.graph_launches = 3;
  const RunResult result = Run(o);
  ExpectAllValid(result);
  ASSERT_EQ(result.rows.size(), 4u);
  EXPECT_EQ(result.config.graph, 3);
  const std::string trace = Trace();
  // 4 rows x 2 placements, each captured once per device and replayed 3 times per device.
  EXPECT_EQ(Count(trace, "cudaStreamBeginCapture"), 16u);
  EXPECT_EQ(Count(trace, "cudaStreamBeginCapture device=0 mode=1"), 8u);  // thread-local
  EXPECT_EQ(Count(trace, "cudaStreamBeginCapture device=1 mode=1"), 8u);
  EXPECT_EQ(Count(trace, "cudaStreamEndCapture"), 16u);
  // -n 2 iterations captured per device: two calls (grouped, since one thread drives both).
  EXPECT_EQ(Count(trace, "cudaStreamEndCapture device=0 tasks=2"), 8u);
  EXPECT_EQ(Count(trace, "cudaGraphLaunch tasks=2"), 48u);
}

TEST_F(FakeGpuTest, RegistrationRegistersEveryBufferOfEveryDevice) {
  RunOptions o = SmallSweep({Collective::kAllReduce, Collective::kAllGather}, 1, 2);
  o.registration = 1;
  ExpectAllValid(Run(o));
  std::string trace = Trace();
  // send, receive and the two small exchange buffers, on each device.
  EXPECT_EQ(Count(trace, "ncclMemAlloc"), 8u);
  EXPECT_EQ(Count(trace, "ncclCommRegister rank=0"), 4u);
  EXPECT_EQ(Count(trace, "ncclCommRegister rank=1"), 4u);
  EXPECT_EQ(Count(trace, "ncclCommDeregister"), 8u);

  fs::remove(dir_ / "trace");
  o.registration = 2;
  ExpectAllValid(Run(o));
  trace = Trace();
  EXPECT_EQ(Count(trace, "ncclCommWindowRegister rank=0"), 4u);
  EXPECT_EQ(Count(trace, "ncclCommWindowRegister rank=1"), 4u);
  // Collective, so the devices of one thread register together.
  EXPECT_EQ(Count(trace, "flags=1 grouped=1"), 8u);
  EXPECT_EQ(Count(trace, "ncclCommWindowDeregister"), 8u);
}

TEST_F(FakeGpuTest, BlockingModesAggregationUnalignedBuffersAndTheDefaultStreamValidate) {
  for (int blocking : {1, 2, 3}) {
    RunOptions o = SmallSweep({Collective::kAllReduce, Collective::kSendRecv}, 2, 1);
    o.blocking = blocking;
    o.agg_iters = 2;
    ExpectAllValid(Run(o));
  }
  RunOptions o =
      SmallSweep({Collective::kAllReduce, Collective::kReduceScatter, Collective::kAlltoAll}, 2, 1);
  o.unalign = 3;
  o.types = {DataType::kFloat, DataType::kHalf, DataType::kInt64};
  ExpectAllValid(Run(o));

  fs::remove(dir_ / "trace");
  o.unalign = 0;
  o.stream_null = true;
  o.report_cputime = true;
  ExpectAllValid(Run(o));
  EXPECT_EQ(Count(Trace(), "cudaStreamCreateWithFlags"), 0u);  // the default stream
}

TEST_F(FakeGpuTest, PerIterationTimesComeFromEventsAroundEachIteration) {
  RunOptions o = SmallSweep({Collective::kAllReduce}, 1, 2);
  o.max_bytes = 64;  // 8, 64
  o.iters = 5;
  o.per_iter_timing = true;
  const RunResult result = Run(o);
  ExpectAllValid(result);
  EXPECT_TRUE(result.config.event_timing);
  for (const ResultRow& row : result.rows) {
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      ASSERT_TRUE((*half)->iterations.has_value());
      EXPECT_GT((*half)->iterations->min_us, 0);
      EXPECT_LE((*half)->iterations->min_us, (*half)->iterations->max_us);
    }
  }
  // Two marks per iteration, on each of the two devices: 2 rows x 2 placements x 5 x 2 x 2.
  EXPECT_EQ(Count(Trace(), "cudaEventRecord"), 80u);
  // -z 3 puts an untimed barrier between the iterations.
  o.blocking = 3;
  ExpectAllValid(Run(o));
}

TEST_F(FakeGpuTest, TheEngineWaitsForTheStreamsBeforeReadingResults) {
  // Every device task first sleeps: a read before the stream is done would find stale data.
  env_.Set("FAKE_GPU_TASK_DELAY_US", "300");
  RunOptions o = SmallSweep({Collective::kAllReduce, Collective::kBroadcast}, 2, 1);
  o.max_bytes = 64;
  ExpectAllValid(Run(o));
}

// FP8 from NCCL 2.24 and the premultiplied sum from 2.11, as nccl-tests adds them to its
// lists (src/common.cu:1147-1159 at v2.19.6): every rank's input premultiplied by its own
// scalar (1 or 2, verifiable.h:31-34), exact on 2 and 3 ranks, one op created and destroyed
// around every call as startColl does (common.cu:556-618).
TEST_F(FakeGpuTest, Fp8AndMulsumValidateWhereNcclHasThem) {
  auto backend = MakeBackend("nccl", FakeOptions());
  EXPECT_EQ(SupportedOf(*backend, AllDataTypes()).size(), 12u);
  EXPECT_EQ(SupportedOf(*backend, AllReduceOps()).size(), 6u);
  for (int threads : {2, 3}) {
    RunOptions o = SmallSweep(
        {Collective::kAllReduce, Collective::kReduceScatter, Collective::kReduce}, threads, 1);
    o.max_bytes = 512;
    o.types = {DataType::kFloat8e4m3, DataType::kFloat8e5m2, DataType::kFloat, DataType::kHalf};
    o.ops = {ReduceOp::kMulSum, ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax};
    o.root = 0;
    const RunResult result = Run(o);
    ExpectAllValid(result);
    EXPECT_EQ(result.rows.size(), 3u * 3 * o.types.size() * o.ops.size());  // 8, 64, 512 B
    const std::string trace = Trace();
    EXPECT_GT(Count(trace, "ncclRedOpCreatePreMulSum"), 0u);
    EXPECT_EQ(Count(trace, "ncclRedOpCreatePreMulSum"), Count(trace, "ncclRedOpDestroy"));
    EXPECT_GT(Count(trace, "type=10"), 0u);
    EXPECT_GT(Count(trace, "type=11"), 0u);
    std::filesystem::remove(dir_ / "trace");
  }
}

TEST_F(FakeGpuTest, Fp8IsRefusedBeforeNccl224WithTheVersion) {
  auto backend = MakeBackend("nccl", FakeOptions(FAKE_NCCL_2_18_PATH));
  EXPECT_EQ(SupportedOf(*backend, AllDataTypes()).size(), 10u);  // "-d all" drops FP8
  EXPECT_EQ(SupportedOf(*backend, AllReduceOps()).size(), 6u);   // mulsum is 2.11's
  RunOptions o = SmallSweep({Collective::kAllReduce}, 2, 1);
  o.types = {DataType::kFloat8e4m3};
  try {
    CheckSupported(*backend, o);
    ADD_FAILURE() << "f8e4m3 accepted by NCCL 2.18";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(
        std::string(e.what()).find("'f8e4m3' needs NCCL 2.24 or later, and this is NCCL 2.18.5"),
        std::string::npos)
        << e.what();
  }
  o.types = {DataType::kBfloat16};
  o.ops = {ReduceOp::kMulSum};
  ExpectAllValid(Run(o, FakeOptions(FAKE_NCCL_2_18_PATH)));
}

TEST_F(FakeGpuTest, Fp8IsRefusedBelowSm90AndAllDropsIt) {
  ScopedEnv ampere{{"FAKE_CUDA_COMPUTE_CAPABILITY", "80"}};
  auto backend = MakeBackend("nccl", FakeOptions());
  EXPECT_EQ(backend->capabilities().min_compute_capability, 800);
  EXPECT_EQ(SupportedOf(*backend, AllDataTypes()).size(), 10u);  // as nccl-tests' "-d all"
  RunOptions o = SmallSweep({Collective::kAllReduce}, 2, 1);
  o.types = {DataType::kFloat8e5m2};
  try {
    CheckSupported(*backend, o);
    ADD_FAILURE() << "f8e5m2 accepted on sm_80";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("'f8e5m2' needs GPUs of compute capability 9.0 (sm_90) "
                                         "or later, and this host's start at 8.0"),
              std::string::npos)
        << e.what();
  }
  ScopedEnv hopper{{"FAKE_CUDA_COMPUTE_CAPABILITY", "90"}};
  EXPECT_EQ(MakeBackend("nccl", FakeOptions())->capabilities().min_compute_capability, 900);
}

TEST_F(FakeGpuTest, AnInjectedFaultIsCountedAsWrong) {
  RunOptions o = SmallSweep({Collective::kAllReduce}, 2, 2);
  o.inject_fault_rank = 3;
  const RunResult result = Run(o);
  for (const ResultRow& row : result.rows) {
    EXPECT_EQ(row.out_of_place->wrong, 1);
    EXPECT_EQ(row.in_place->wrong, 1);
  }
  EXPECT_FALSE(Summarize(result).front().okay);
}

TEST_F(FakeGpuTest, Nccl218FallsBackToSendAndReceiveAndRefusesRegistration) {
  RunOptions o = SmallSweep(
      {Collective::kAlltoAll, Collective::kGather, Collective::kScatter, Collective::kSendRecv}, 3,
      1);
  o.root = -1;
  const RunResult result = Run(o, FakeOptions(FAKE_NCCL_2_18_PATH));
  ExpectAllValid(result);
  EXPECT_EQ(result.backend_version, "2.18.5");
  const std::string trace = Trace();
  EXPECT_EQ(Count(trace, "ncclAlltoAll"), 0u);
  EXPECT_EQ(Count(trace, "ncclGather"), 0u);
  EXPECT_GT(Count(trace, "ncclSend"), 0u);
  EXPECT_GT(Count(trace, "ncclRecv"), 0u);

  auto backend = MakeBackend("nccl", FakeOptions(FAKE_NCCL_2_18_PATH));
  EXPECT_EQ(backend->capabilities().registration, 0);
  o.registration = 1;
  try {
    CheckSupported(*backend, o);
    ADD_FAILURE() << "-R 1 accepted by NCCL 2.18";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("-R 1 needs NCCL 2.19"), std::string::npos) << e.what();
  }
}

TEST_F(FakeGpuTest, RcclRunsTheSameLogicThroughHipNames) {
  RunOptions o = SmallSweep({Collective::kAllReduce, Collective::kAlltoAll}, 2, 1);
  o.backend = "rccl";
  const RunResult result = Run(o);
  ExpectAllValid(result);
  EXPECT_EQ(result.backend, "rccl");
  ScopedEnv none{{"FAKE_CUDA_DEVICES", "0"}};
  try {
    MakeBackend("rccl", FakeOptions());
    ADD_FAILURE() << "no exception";
  } catch (const UnsupportedError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no ROCm device: hipGetDeviceCount: no CUDA-capable device is detected "
              "(cudaErrorNoDevice)");
  }
}

TEST_F(FakeGpuTest, NoDeviceAndTooFewDevicesAreClearErrors) {
  {
    ScopedEnv none{{"FAKE_CUDA_DEVICES", "0"}};
    try {
      MakeBackend("nccl", FakeOptions());
      ADD_FAILURE() << "no exception";
    } catch (const UnsupportedError& e) {
      EXPECT_EQ(std::string(e.what()),
                "no CUDA device: cudaGetDeviceCount: no CUDA-capable device is detected "
                "(cudaErrorNoDevice)");
    }
  }
  ScopedEnv two{{"FAKE_CUDA_DEVICES", "2"}};
  try {
    Run(SmallSweep({Collective::kAllReduce}, 3, 1));
    ADD_FAILURE() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 needs CUDA device 2"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("this host has 2 (0-1)"), std::string::npos) << e.what();
  }
}

// The double is strict where NCCL would hang or fault, so the runs above mean something.
TEST_F(FakeGpuTest, TheDoubleRefusesHostMemoryAndUngroupedCallsOfOneThread) {
  auto backend = MakeBackend("nccl", FakeOptions());
  InMemoryStore store;
  ConnectOptions connect;
  connect.store = &store;
  auto comm = backend->Connect(connect);
  std::vector<float> host(16, 1.0f);
  CollectiveCall call;
  call.send = host.data();
  call.recv = host.data();
  call.count = host.size();
  try {
    comm->Run(call);
    ADD_FAILURE() << "host memory accepted";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("sendbuff"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is not device memory"), std::string::npos) << e.what();
  }

  // Two ranks initialized by one thread without a group: NCCL would wait forever.
  ScopedEnv quick{{"FAKE_NCCL_INIT_TIMEOUT_S", "1"}};
  const auto libs = gpu::LoadLibraries(gpu::Vendor::kNvidia, FAKE_NCCL_PATH, FAKE_CUDART_PATH);
  gpu::ncclUniqueId id{};
  ASSERT_EQ(libs->nccl.GetUniqueId(&id), gpu::kNcclSuccess);
  gpu::ncclComm_t first = nullptr;
  EXPECT_EQ(libs->nccl.CommInitRank(&first, 2, id, 0), gpu::kNcclSystemError);
  EXPECT_NE(std::string(libs->nccl.GetLastError(first)).find("must group"), std::string::npos);
  libs->nccl.CommAbort(first);

  // Grouped init, then calls of both ranks from this thread without a group: refused.
  ASSERT_EQ(libs->nccl.GetUniqueId(&id), gpu::kNcclSuccess);
  gpu::ncclComm_t comms[2] = {};
  libs->nccl.GroupStart();
  for (int r = 0; r < 2; ++r) {
    libs->runtime.api.SetDevice(r);
    EXPECT_EQ(libs->nccl.CommInitRank(&comms[r], 2, id, r), gpu::kNcclSuccess);
  }
  ASSERT_EQ(libs->nccl.GroupEnd(), gpu::kNcclSuccess);
  void* buffers[2] = {};
  for (int r = 0; r < 2; ++r) {
    libs->runtime.api.SetDevice(r);
    ASSERT_EQ(libs->runtime.api.Malloc(&buffers[r], 64), gpu::kCudaSuccess);
  }
  EXPECT_EQ(libs->nccl.AllReduce(buffers[0], buffers[0], 4, gpu::kNcclFloat32, gpu::kNcclSum,
                                 comms[0], nullptr),
            gpu::kNcclSuccess);
  EXPECT_EQ(libs->nccl.AllReduce(buffers[1], buffers[1], 4, gpu::kNcclFloat32, gpu::kNcclSum,
                                 comms[1], nullptr),
            gpu::kNcclInvalidUsage);
  EXPECT_NE(std::string(libs->nccl.GetLastError(comms[1])).find("without ncclGroupStart/End"),
            std::string::npos);
  for (int r = 0; r < 2; ++r) libs->nccl.CommAbort(comms[r]);
}

// ---------------------------------------------------------------------------------------
// NCCL's log.

TEST(NcclDebugLog, ParsesTheConnectionLinesOfEveryNcclGeneration) {
  // 2.19 and later.
  auto c = gpu::ParseConnectionLine(
      "node1:12345:12399 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM/read");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->device, 3);
  EXPECT_EQ(c->rank, 3);
  EXPECT_EQ(c->peer, 4);
  EXPECT_EQ(c->transport, "P2P/CUMEM/read");
  // The network, with a direction.
  c = gpu::ParseConnectionLine(
      "node1:1:2 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->rank, 8);
  EXPECT_EQ(c->transport, "NET/IB/0/GDRDMA");
  // Before 2.19: bus ids in the brackets, no "/" in the channel; spaces in the transport.
  c = gpu::ParseConnectionLine(
      "gpu7:931:1043 [1] NCCL INFO Channel 00 : 1[1c000] -> 2[1d000] via P2P/direct pointer");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->peer, 2);
  EXPECT_EQ(c->transport, "P2P/direct pointer");
  // Behind a launcher's prefix, and other lines.
  c = gpu::ParseConnectionLine(
      "[1,0]<stdout>:n1:5:5 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via SHM/direct/direct");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->transport, "SHM/direct/direct");
  EXPECT_FALSE(gpu::ParseConnectionLine("n1:5:5 [0] NCCL INFO Using network IB"));
  // A rank too long for an int (it threw std::out_of_range from std::stoi before).
  EXPECT_FALSE(gpu::ParseConnectionLine(
      "h:1:1 [0] NCCL INFO Channel 00/0 : 99999999999999999999[0] -> 1[1] via P2P/IPC"));
  c = gpu::ParseConnectionLine(
      "h:1:1 [99999999999999999999] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->device, -1);
  EXPECT_FALSE(gpu::ParseConnectionLine("n1:5:5 [0] NCCL INFO Channel 00/02 :    0   1"));

  std::vector<gpu::ConnectionLine> lines;
  for (const char* line : {"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
                           "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC",
                           "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0",
                           "h:1:1 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC"}) {
    lines.push_back(*gpu::ParseConnectionLine(line));
  }
  EXPECT_EQ(gpu::SummarizeTransports(lines, 0, 0), "P2P/IPC, NET/IB/0");
  EXPECT_EQ(gpu::SummarizeTransports(lines, 1, 1), "P2P/IPC");
  EXPECT_EQ(gpu::SummarizeTransports(lines, 1, 0), "");
  EXPECT_EQ(gpu::SummarizeTransports(lines, 2, -1), "");
}

// ---------------------------------------------------------------------------------------
// The real binary on the fake libraries.

class FakeBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TestDir(); }
  void TearDown() override { fs::remove_all(dir_); }
  Outcome Run(const std::string& args, const std::string& env = "") {
    return RunBinary(dir_, "run" + kFakeLibs + args,
                     "FAKE_GPU_TRACE=" + (dir_ / "trace").string() + " " + env);
  }
  nlohmann::json Json(const std::string& name) { return nlohmann::json::parse(Slurp(dir_ / name)); }
  fs::path dir_;
};

TEST_F(FakeBinaryTest, WithoutBackendNcclIsPickedWhereADeviceIsPresentAndSaysSo) {
  Outcome o = Run("-g 2 -G 2 -R 1 -u 1 -b 1K -e 1K -n 2");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("# fabricscope: no --backend given: using nccl (NCCL 2.28.9, 8 CUDA "
                       "devices)"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("backend=nccl nccl-library=2.28.9"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("nThread 1 nGpus 2 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("graph: 2 unalign: 1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("[0000:1c:00] Fake GPU 1"), std::string::npos) << o.out;

  o = Run("-b 1K -e 1K -n 2", "FAKE_CUDA_DEVICES=0");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("using gloo (no CUDA device: cudaGetDeviceCount: no CUDA-capable device "
                       "is detected (cudaErrorNoDevice); host memory instead)"),
            std::string::npos)
      << o.err;
}

TEST_F(FakeBinaryTest, AHungCollectiveIsAbortedAndReportedWithRankAndPhase) {
  // The sixth operation never finishes: after three warm-up calls (1K, 2K, 4K), the untimed call
  // and the barrier, that is the first timed iteration. (-T leaves room for a loaded machine: a
  // peer that is merely slow for longer would time out too, in another phase.)
  Outcome o = Run("--backend nccl -t 1 -b 1K -e 4K -f 4 -n 3 -T 2 -J " + (dir_ / "r.json").string(),
                  "FAKE_NCCL_HANG=0:6");
  EXPECT_EQ(o.exit_code, 3) << o.err;
  auto lines = Lines(o.err);
  ASSERT_EQ(lines.size(), 1u) << o.err;
  EXPECT_TRUE(std::regex_search(
      lines[0],
      std::regex(R"(^fabricscope: error: rank 0 on \S+: during all_reduce float sum size 1024 )"
                 R"(out-of-place \(timing\): nccl all_reduce of 256 float elements did not )"
                 R"(complete within 2 s on rank 0 \(device 0\) \(-T\): a peer is stuck or dead; )"
                 R"(aborted the communicator \(ncclCommAbort\)$)")))
      << lines[0];
  EXPECT_NE(Slurp(dir_ / "trace").find("ncclCommAbort rank=0"), std::string::npos);
  // The results file keeps the rows so far and says why they stop.
  const auto json = Json("r.json");
  ASSERT_EQ(json["errors"].size(), 1u);
  EXPECT_NE(json["errors"][0].get<std::string>().find("did not complete within 2 s"),
            std::string::npos);

  // Two ranks, rank 1 stuck. Its own timeout aborts it (the trace shows it: nothing else can
  // end that operation). Both ranks fail; the job reports the lowest failing rank's error,
  // rank 0's, with the call and the phase. Whether rank 0's own wait times out or it sees its
  // peer abort first is a real race between two -T timers of the same length, so both causes
  // stay accepted here; tests/launch/fake_job_test.cc pins which rank and which error the
  // job reports when the order is known.
  fs::remove(dir_ / "trace");
  o = Run("--backend nccl -t 2 -b 1K -e 4K -f 4 -n 3 -T 3", "FAKE_NCCL_HANG=1:6");
  EXPECT_EQ(o.exit_code, 3) << o.err;
  lines = Lines(o.err);
  ASSERT_EQ(lines.size(), 1u) << o.err;
  EXPECT_TRUE(std::regex_search(
      lines[0],
      std::regex(R"(^fabricscope: error: rank 0 on \S+: during all_reduce float sum size 1024 )"
                 R"(out-of-place \(timing\): nccl (all_reduce of 256 float elements did not )"
                 R"(complete within 3 s|reported an asynchronous error) on rank 0 )"
                 R"(\(device 0\).*aborted the communicator \(ncclCommAbort\)$)")))
      << lines[0];
  const std::string trace = Slurp(dir_ / "trace");
  EXPECT_NE(trace.find("stuck rank=1 op=6 ncclAllReduce"), std::string::npos) << trace;
  EXPECT_NE(trace.find("ncclCommAbort rank=1"), std::string::npos) << trace;
  EXPECT_NE(trace.find("ncclCommAbort rank=0"), std::string::npos) << trace;
}

// A rank whose init never completes (stopped after the rendezvous): NCCL's init has no
// timeout, so the -T watchdog ends the job, naming a rank and the communicator it waited to
// join, and the results file says why it has no rows.
TEST_F(FakeBinaryTest, AnInitThatNeverCompletesEndsTheJobWithinTheTimeout) {
  const Outcome o =
      Run("--backend nccl -t 2 -b 1K -e 1K -n 2 -T 1 -J " + (dir_ / "r.json").string(),
          "FAKE_NCCL_HANG_INIT=1 FAKE_NCCL_INIT_TIMEOUT_S=600");
  EXPECT_EQ(o.exit_code, 3) << o.err;
  EXPECT_TRUE(std::regex_search(
      o.err, std::regex(R"(fabricscope: error: rank [01] on \S+: joining the nccl communicator )"
                        R"(of 2 ranks did not complete within 2\.0 s \(the -T timeout and its )"
                        R"(grace\); a peer is stuck or dead)")))
      << o.err;
  EXPECT_NE(Slurp(dir_ / "trace").find("stuck rank=1 ncclCommInitRank"), std::string::npos);
  const auto json = Json("r.json");
  EXPECT_TRUE(json["results"].empty());
  ASSERT_EQ(json["errors"].size(), 1u) << json.dump();
  EXPECT_NE(json["errors"][0].get<std::string>().find("joining the nccl communicator"),
            std::string::npos);
}

TEST_F(FakeBinaryTest, AnAsynchronousErrorAbortsAndNamesRankAndCall) {
  const Outcome o = Run("--backend nccl -t 2 -b 1K -e 1K -n 3", "FAKE_NCCL_ASYNC_ERROR=0:2");
  EXPECT_EQ(o.exit_code, 3) << o.err;
  EXPECT_NE(o.err.find("during all_reduce float sum size 1024 out-of-place (timing)"),
            std::string::npos)
      << o.err;
  // Rank 0 fails; rank 1 then sees its peer gone. The job reports the lowest failing rank's
  // error, which is rank 0's own, whichever thread caught its error first.
  EXPECT_TRUE(std::regex_search(
      o.err, std::regex(R"(fabricscope: error: rank 0 on \S+: during all_reduce float sum )"
                        R"(size 1024 out-of-place \(timing\): nccl reported an asynchronous )"
                        R"(error on rank 0 \(device 0\) during all_reduce of 256 float )"
                        R"(elements: )")))
      << o.err;
  EXPECT_NE(o.err.find("remote process exited or there was a network error"), std::string::npos)
      << o.err;
  EXPECT_NE(Slurp(dir_ / "trace").find("ncclCommAbort rank=0"), std::string::npos);
}

TEST_F(FakeBinaryTest, NcclDebugInfoPutsTheTransportInTheResults) {
  const Outcome o = Run("--backend nccl -t 2 -b 1K -e 1K -n 2 -J " + (dir_ / "r.json").string(),
                        "NCCL_DEBUG=INFO");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  // NCCL's lines reach the user on stderr; stdout stays the report.
  EXPECT_EQ(Count(o.err, "NCCL INFO Channel"), 4u) << o.err;
  EXPECT_EQ(o.out.find("NCCL INFO"), std::string::npos);
  const auto json = Json("r.json");
  EXPECT_EQ(json["nccl_version"], 22809);
  const auto& devices = json["config"]["devices"];
  ASSERT_EQ(devices.size(), 2u);
  for (const auto& d : devices) EXPECT_EQ(d["transport"], "P2P/direct pointer") << d;

  // Without NCCL_DEBUG there is nothing to say.
  const Outcome quiet =
      Run("--backend nccl -t 2 -b 1K -e 1K -n 2 -J " + (dir_ / "q.json").string());
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_FALSE(Json("q.json")["config"]["devices"][0].contains("transport"));
}

TEST_F(FakeBinaryTest, ProcessesShareTheUniqueIdThroughTheStoreAndPickDevicesByLocalRank) {
  // Process 0's store binds a port of its own and publishes it; the others read it.
  const std::string store =
      " MASTER_ADDR=127.0.0.1 MASTER_PORT=0 FABRICSCOPE_PORT_FILE=" + (dir_ / "port").string();
  std::string script;
  for (int p = 0; p < 2; ++p) {
    const std::string ps = std::to_string(p);
    script += "(RANK=" + ps + " WORLD_SIZE=2 LOCAL_RANK=" + ps + store +
              " NCCL_DEBUG=INFO FAKE_GPU_TRACE=" + (dir_ / "trace").string() + " " +
              FABRICSCOPE_BINARY + " run --backend nccl" + kFakeLibs +
              "-t 2 -b 1K -e 4K -f 4 -n 2 --collective all -J " + (dir_ / ("r" + ps)).string() +
              ".json >" + (dir_ / ("out" + ps)).string() + " 2>" + (dir_ / ("err" + ps)).string() +
              "; echo $? >" + (dir_ / ("rc" + ps)).string() + ") & ";
  }
  script += "wait";
  ASSERT_EQ(std::system(("timeout 120 sh -c '" + script + "'").c_str()), 0);
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(Slurp(dir_ / ("rc" + std::to_string(p))), "0\n")
        << Slurp(dir_ / ("err" + std::to_string(p)));
  }
  const auto json = Json("r0.json");
  const auto& devices = json["config"]["devices"];
  ASSERT_EQ(devices.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(devices[static_cast<size_t>(r)]["device"], r);  // local rank x threads + thread
  }
  // Rank 1's peer is in the other process: shared memory; rank 0's is its sibling thread.
  EXPECT_EQ(devices[0]["transport"], "P2P/direct pointer");
  EXPECT_EQ(devices[1]["transport"], "SHM/direct/direct");
  EXPECT_NE(devices[0]["pid"], devices[2]["pid"]);
  size_t rows = 0;
  for (const auto& row : json["results"]) {
    EXPECT_EQ(row["out_of_place"]["nwrong"], 0) << row;
    EXPECT_EQ(row["in_place"]["nwrong"], 0) << row;
    ++rows;
  }
  EXPECT_EQ(rows, 18u);
  // One id for the one communicator, made by rank 0 and passed on by the store.
  EXPECT_EQ(Count(Slurp(dir_ / "trace"), "ncclGetUniqueId"), 1u);
}

TEST_F(FakeBinaryTest, BadLibrariesAndFlagCombinationsAreRefusedClearly) {
  struct Case {
    std::string args;
    std::string needle;
  };
  const std::string real_flags = " -b 8 -e 8";
  const std::vector<Case> cases = {
      {"--backend nccl" + kFakeLibs + "-G 1 -z 1",
       "-G/--cudagraph cannot be combined with -z/--blocking 1"},
      {"--backend nccl" + kFakeLibs + "-G 1 -y 1", "cannot capture the default stream"},
      {"--backend nccl" + kFakeLibs + "-R 3", "--local_register: 3 is out of range"},
      {"--backend nccl" + kFakeLibs + "-g 0", "--ngpus: 0 is out of range"},
      {"--backend gloo -u 2", "-u/--unalign 2 (unaligned buffers) needs a GPU backend"},
      {"--backend gloo -R 1", "-R/--local_register 1 (buffer registration) needs a GPU backend"},
  };
  for (const Case& c : cases) {
    const Outcome o = RunBinary(dir_, "run " + c.args + real_flags);
    EXPECT_EQ(o.exit_code, 2) << c.args << "\n" << o.err;
    EXPECT_NE(o.err.find(c.needle), std::string::npos) << c.args << "\n" << o.err;
  }
  // Where nccl-tests 2.19.6 notes and goes on (src/common.cu:1421), so does run: -I is
  // disabled under -G, in nccl-tests' words, and the graph run proceeds.
  const Outcome noted =
      RunBinary(dir_, "run --backend nccl" + kFakeLibs + "-G 1 -I 1" + real_flags);
  EXPECT_EQ(noted.exit_code, 0) << noted.err;
  EXPECT_NE(noted.err.find(
                "per-iteration timing (-I) is incompatible with CUDA graph mode (-G). Disabling."),
            std::string::npos)
      << noted.err;
  const std::string nccl = FAKE_NCCL_PATH;
  const std::string cudart = FAKE_CUDART_PATH;
  const std::vector<Case> libraries = {
      {"--backend nccl --nccl-lib /nonexistent/libnccl.so.2 --gpu-runtime-lib " + cudart,
       "cannot load the NCCL library given by --nccl-lib: /nonexistent/libnccl.so.2"},
      {"--backend nccl --nccl-lib " + nccl + " --gpu-runtime-lib /nonexistent/libcudart.so",
       "cannot load the CUDA runtime given by --gpu-runtime-lib"},
      {"--backend nccl --nccl-lib " + cudart + " --gpu-runtime-lib " + cudart,
       "lacks ncclGetVersion"},
      {"--backend gloo --nccl-lib " + nccl, "--nccl-lib and --gpu-runtime-lib apply to the nccl"},
  };
  for (const Case& c : libraries) {
    const Outcome o = RunBinary(dir_, "run " + c.args + real_flags);
    EXPECT_EQ(o.exit_code, 2) << c.args << "\n" << o.err;
    EXPECT_NE(o.err.find(c.needle), std::string::npos) << c.args << "\n" << o.err;
    EXPECT_EQ(Lines(o.err).size(), 1u) << o.err;
  }
}

}  // namespace
}  // namespace fabricscope
