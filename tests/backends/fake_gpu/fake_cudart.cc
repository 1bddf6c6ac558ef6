// TEST DOUBLE: libfake_cudart, a CUDA runtime (and, under HIP's names, a HIP runtime) over
// host memory and threads, for tests on machines without a GPU. Only the calls the nccl
// backend makes exist. Knobs (environment): FAKE_CUDA_DEVICES (device count, default 8; 0 =
// "no device"), FAKE_GPU_TASK_DELAY_US (each task waits first, so that a missing wait shows
// up as wrong data), FAKE_CUDA_COMPUTE_CAPABILITY (every device's, as sm_NN: default 90),
// FAKE_GPU_TRACE (a file that gets one line per notable call).
//
// Like the real runtime it keeps process-wide state (devices, allocations, streams): that is
// the API being imitated.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_gpu.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// cudaError_t values (driver_types.h).
constexpr int kSuccess = 0;
constexpr int kErrorInvalidValue = 1;
constexpr int kErrorMemoryAllocation = 2;
constexpr int kErrorInsufficientDriver = 35;
constexpr int kErrorNoDevice = 100;
constexpr int kErrorInvalidDevice = 101;
constexpr int kErrorInvalidResourceHandle = 400;
constexpr int kErrorNotReady = 600;
constexpr int kErrorStreamCaptureUnsupported = 900;
constexpr int kErrorStreamCaptureWrongThread = 908;

constexpr int kMemcpyHostToDevice = 1;
constexpr int kMemcpyDeviceToHost = 2;

struct ErrorText {
  int code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {kSuccess, "cudaSuccess", "no error"},
    {kErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {kErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {kErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {kErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {kErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {kErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {kErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {kErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {kErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "operation not permitted on an event last recorded in a capturing stream"},
};

const ErrorText* Find(int code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

thread_local int current_device = 0;

int DeviceCount() { return fake_gpu::EnvInt("FAKE_CUDA_DEVICES", 8); }

}  // namespace

// The opaque types of the runtime API, defined by the fake.
struct CUstream_st {
  explicit CUstream_st(int dev) : device(dev), worker([this] { Work(); }) {}
  ~CUstream_st() {
    {
      const std::lock_guard lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    worker.join();
  }

  void Work() {
    const auto delay = std::chrono::microseconds(fake_gpu::EnvInt("FAKE_GPU_TASK_DELAY_US", 0));
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [this] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and drained
      std::shared_ptr<const fake_gpu::Task> task = queue.front();
      busy = true;
      lock.unlock();
      if (delay.count() > 0) std::this_thread::sleep_for(delay);
      (*task)();
      lock.lock();
      queue.pop_front();
      busy = false;
      changed.notify_all();
    }
  }

  bool Idle() {
    const std::lock_guard lock(mutex);
    return queue.empty() && !busy;
  }

  void WaitIdle() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [this] { return queue.empty() && !busy; });
  }

  const int device;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::shared_ptr<const fake_gpu::Task>> queue;
  bool busy = false;
  bool stopping = false;
  // Capture (cudaStreamBeginCapture .. EndCapture): tasks are recorded, not run.
  bool capturing = false;
  std::thread::id capturing_thread;
  std::vector<std::shared_ptr<const fake_gpu::Task>> captured;
  std::thread worker;  // last: starts once the rest exists
};

// An event: the host clock when its stream reached it; -1 until then.
struct CUevent_st {
  std::atomic<int64_t> ns{-1};
};

struct CUgraph_st {
  std::vector<std::shared_ptr<const fake_gpu::Task>> tasks;
};
struct CUgraphExec_st {
  std::vector<std::shared_ptr<const fake_gpu::Task>> tasks;
};

namespace {

// One allocation: the address handed out (no access) and the fakes' view of it.
struct Allocation {
  std::byte* host = nullptr;
  size_t bytes = 0;
  size_t mapped = 0;
  int device = 0;
};

class Runtime {
 public:
  static Runtime& Get() {
    static Runtime* runtime = new Runtime;  // never destroyed: streams may outlive statics
    return *runtime;
  }

  void* Allocate(size_t bytes, int device) {
    if (bytes == 0) return nullptr;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t mapped = (bytes + page - 1) / page * page;
    const int fd = ::memfd_create("fake-cuda-device-memory", MFD_CLOEXEC);
    if (fd < 0) return nullptr;
    if (::ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
      ::close(fd);
      return nullptr;
    }
    void* device_view = ::mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd, 0);
    void* host_view = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (device_view == MAP_FAILED || host_view == MAP_FAILED) return nullptr;
    const std::lock_guard lock(mutex_);
    allocations_[reinterpret_cast<uintptr_t>(device_view)] =
        Allocation{static_cast<std::byte*>(host_view), bytes, mapped, device};
    return device_view;
  }

  bool Free(void* ptr) {
    if (ptr == nullptr) return true;
    Allocation a;
    {
      const std::lock_guard lock(mutex_);
      auto it = allocations_.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == allocations_.end()) return false;
      a = it->second;
      allocations_.erase(it);
    }
    ::munmap(ptr, a.mapped);
    ::munmap(a.host, a.mapped);
    return true;
  }

  void* HostView(const void* ptr, size_t bytes, int* device) {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    const std::lock_guard lock(mutex_);
    auto it = allocations_.upper_bound(p);
    if (it == allocations_.begin()) return nullptr;
    --it;
    const uintptr_t base = it->first;
    if (p < base || p - base + bytes > it->second.bytes) return nullptr;
    if (device != nullptr) *device = it->second.device;
    return it->second.host + (p - base);
  }

  // The legacy default stream of a device (stream 0).
  CUstream_st* DefaultStream(int device) {
    const std::lock_guard lock(mutex_);
    auto& s = default_streams_[device];
    if (!s) s = std::make_unique<CUstream_st>(device);
    return s.get();
  }

 private:
  std::mutex mutex_;
  std::map<uintptr_t, Allocation> allocations_;
  std::map<int, std::unique_ptr<CUstream_st>> default_streams_;
};

// 0 is the legacy default stream of `device`; 1 and 2 are cudaStreamLegacy and
// cudaStreamPerThread, treated alike.
CUstream_st* Resolve(CUstream_st* stream, int device) {
  if (reinterpret_cast<uintptr_t>(stream) <= 2) return Runtime::Get().DefaultStream(device);
  return stream;
}

}  // namespace

namespace fake_gpu {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::atoi(v) : fallback;
}

void Trace(const std::string& line) {
  const char* path = std::getenv("FAKE_GPU_TRACE");
  if (path == nullptr || path[0] == '\0') return;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string out = std::to_string(::getpid()) + " " + line + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, out.data(), out.size());  // atomic: O_APPEND
  ::close(fd);
}

int Enqueue(void* stream, int device, std::shared_ptr<const Task> task) {
  CUstream_st* s = Resolve(static_cast<CUstream_st*>(stream), device);
  {
    const std::lock_guard lock(s->mutex);
    if (s->capturing) {
      s->captured.push_back(std::move(task));
      return kSuccess;
    }
    s->queue.push_back(std::move(task));
  }
  s->changed.notify_all();
  return kSuccess;
}

bool Capturing(void* stream, int device) {
  CUstream_st* s = Resolve(static_cast<CUstream_st*>(stream), device);
  const std::lock_guard lock(s->mutex);
  return s->capturing;
}

void* HostView(const void* ptr, size_t bytes, int* device) {
  return Runtime::Get().HostView(ptr, bytes, device);
}

void* AllocateDevice(size_t bytes, int device) { return Runtime::Get().Allocate(bytes, device); }

void FreeDevice(void* ptr) { Runtime::Get().Free(ptr); }

int CurrentDevice() { return current_device; }

}  // namespace fake_gpu

FAKE_EXPORT int cudaGetDeviceCount(int* count) {
  const int n = DeviceCount();
  *count = n > 0 ? n : 0;
  return n > 0 ? kSuccess : kErrorNoDevice;
}

FAKE_EXPORT int cudaSetDevice(int device) {
  if (device < 0 || device >= DeviceCount()) return kErrorInvalidDevice;
  current_device = device;
  return kSuccess;
}

FAKE_EXPORT int cudaGetDevice(int* device) {
  *device = current_device;
  return kSuccess;
}

FAKE_EXPORT int cudaMalloc(void** ptr, size_t bytes) {
  *ptr = Runtime::Get().Allocate(bytes, current_device);
  if (*ptr == nullptr && bytes > 0) return kErrorMemoryAllocation;
  return kSuccess;
}

FAKE_EXPORT int cudaFree(void* ptr) {
  return Runtime::Get().Free(ptr) ? kSuccess : kErrorInvalidValue;
}

// Synchronous, and ordered only after the legacy default stream: work queued on a
// non-blocking stream is not waited for, exactly as on a GPU.
FAKE_EXPORT int cudaMemcpy(void* dst, const void* src, size_t bytes, int kind) {
  if (bytes == 0) return kSuccess;
  Runtime::Get().DefaultStream(current_device)->WaitIdle();
  void* to = dst;
  const void* from = src;
  if (kind == kMemcpyHostToDevice) {
    to = Runtime::Get().HostView(dst, bytes, nullptr);
  } else if (kind == kMemcpyDeviceToHost) {
    from = Runtime::Get().HostView(src, bytes, nullptr);
  } else {
    return kErrorInvalidValue;
  }
  if (to == nullptr || from == nullptr) return kErrorInvalidValue;
  std::memcpy(to, from, bytes);
  return kSuccess;
}

FAKE_EXPORT int cudaStreamCreateWithFlags(CUstream_st** stream, unsigned int flags) {
  *stream = new CUstream_st(current_device);
  fake_gpu::Trace("cudaStreamCreateWithFlags device=" + std::to_string(current_device) +
                  " flags=" + std::to_string(flags));
  return kSuccess;
}

FAKE_EXPORT int cudaStreamDestroy(CUstream_st* stream) {
  if (reinterpret_cast<uintptr_t>(stream) <= 2) return kErrorInvalidResourceHandle;
  delete stream;  // drains its queue first
  return kSuccess;
}

FAKE_EXPORT int cudaStreamQuery(CUstream_st* stream) {
  CUstream_st* s = Resolve(stream, current_device);
  {
    const std::lock_guard lock(s->mutex);
    if (s->capturing) return kErrorStreamCaptureUnsupported;
  }
  return s->Idle() ? kSuccess : kErrorNotReady;
}

FAKE_EXPORT int cudaEventCreate(CUevent_st** event) {
  *event = new CUevent_st;
  return kSuccess;
}

FAKE_EXPORT int cudaEventRecord(CUevent_st* event, CUstream_st* stream) {
  if (event == nullptr) return kErrorInvalidResourceHandle;
  event->ns.store(-1);
  fake_gpu::Trace("cudaEventRecord");
  return fake_gpu::Enqueue(
      stream, current_device, std::make_shared<const fake_gpu::Task>([event] {
        event->ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count());
      }));
}

FAKE_EXPORT int cudaEventElapsedTime(float* ms, CUevent_st* start, CUevent_st* end) {
  if (start == nullptr || end == nullptr) return kErrorInvalidResourceHandle;
  const int64_t a = start->ns.load();
  const int64_t b = end->ns.load();
  if (a < 0 || b < 0) return kErrorNotReady;
  *ms = static_cast<float>(static_cast<double>(b - a) / 1e6);
  return kSuccess;
}

FAKE_EXPORT int cudaEventDestroy(CUevent_st* event) {
  delete event;
  return kSuccess;
}

FAKE_EXPORT const char* cudaGetErrorString(int error) {
  const ErrorText* e = Find(error);
  return e != nullptr ? e->text : "unrecognized error code";
}

FAKE_EXPORT const char* cudaGetErrorName(int error) {
  const ErrorText* e = Find(error);
  return e != nullptr ? e->name : "cudaErrorUnknown";
}

FAKE_EXPORT int cudaDeviceGetPCIBusId(char* bus_id, int length, int device) {
  if (device < 0 || device >= DeviceCount()) return kErrorInvalidDevice;
  std::snprintf(bus_id, static_cast<size_t>(length), "0000:%02X:00.0", 0x1b + device);
  return kSuccess;
}

// Only the name: the real struct's first field, which is all the backend reads.
FAKE_EXPORT int cudaGetDeviceProperties(void* properties, int device) {
  if (device < 0 || device >= DeviceCount()) return kErrorInvalidDevice;
  std::snprintf(static_cast<char*>(properties), 256, "Fake GPU %d (host memory test double)",
                device);
  return kSuccess;
}

// Only the compute capability (cudaDevAttrComputeCapabilityMajor 75, Minor 76 in
// driver_types.h), the attributes nccl-tests reads; others are cudaErrorInvalidValue.
FAKE_EXPORT int cudaDeviceGetAttribute(int* value, int attribute, int device) {
  if (device < 0 || device >= DeviceCount()) return kErrorInvalidDevice;
  const int sm = fake_gpu::EnvInt("FAKE_CUDA_COMPUTE_CAPABILITY", 90);
  if (attribute == 75) {
    *value = sm / 10;
  } else if (attribute == 76) {
    *value = sm % 10;
  } else {
    return kErrorInvalidValue;
  }
  return kSuccess;
}

FAKE_EXPORT int cudaRuntimeGetVersion(int* version) {
  *version = 13000;
  return kSuccess;
}

FAKE_EXPORT int cudaStreamBeginCapture(CUstream_st* stream, int mode) {
  if (reinterpret_cast<uintptr_t>(stream) <= 2) return kErrorStreamCaptureUnsupported;
  const std::lock_guard lock(stream->mutex);
  if (stream->capturing) return kErrorStreamCaptureUnsupported;
  stream->capturing = true;
  stream->capturing_thread = std::this_thread::get_id();
  stream->captured.clear();
  fake_gpu::Trace("cudaStreamBeginCapture device=" + std::to_string(stream->device) +
                  " mode=" + std::to_string(mode));
  return kSuccess;
}

FAKE_EXPORT int cudaStreamEndCapture(CUstream_st* stream, CUgraph_st** graph) {
  if (reinterpret_cast<uintptr_t>(stream) <= 2) return kErrorStreamCaptureUnsupported;
  const std::lock_guard lock(stream->mutex);
  if (!stream->capturing) return kErrorInvalidValue;
  // Thread-local mode: only the capturing thread may end it.
  if (stream->capturing_thread != std::this_thread::get_id()) {
    return kErrorStreamCaptureWrongThread;
  }
  stream->capturing = false;
  *graph = new CUgraph_st{std::move(stream->captured)};
  stream->captured.clear();
  fake_gpu::Trace("cudaStreamEndCapture device=" + std::to_string(stream->device) +
                  " tasks=" + std::to_string((*graph)->tasks.size()));
  return kSuccess;
}

FAKE_EXPORT int cudaGraphInstantiateWithFlags(CUgraphExec_st** exec, CUgraph_st* graph,
                                              unsigned long long /*flags*/) {
  if (graph == nullptr) return kErrorInvalidValue;
  *exec = new CUgraphExec_st{graph->tasks};
  return kSuccess;
}

FAKE_EXPORT int cudaGraphLaunch(CUgraphExec_st* exec, CUstream_st* stream) {
  if (exec == nullptr) return kErrorInvalidValue;
  fake_gpu::Trace("cudaGraphLaunch tasks=" + std::to_string(exec->tasks.size()));
  for (const auto& task : exec->tasks) fake_gpu::Enqueue(stream, current_device, task);
  return kSuccess;
}

FAKE_EXPORT int cudaGraphExecDestroy(CUgraphExec_st* exec) {
  delete exec;
  return kSuccess;
}

FAKE_EXPORT int cudaGraphDestroy(CUgraph_st* graph) {
  delete graph;
  return kSuccess;
}

// The HIP runtime's names for the same calls (ROCm keeps CUDA's signatures and values), so
// the rccl backend runs on the same double.
#define FAKE_HIP_ALIAS(hip, cuda) FAKE_EXPORT __typeof__(cuda) hip __attribute__((alias(#cuda)));
FAKE_HIP_ALIAS(hipGetDeviceCount, cudaGetDeviceCount)
FAKE_HIP_ALIAS(hipSetDevice, cudaSetDevice)
FAKE_HIP_ALIAS(hipGetDevice, cudaGetDevice)
FAKE_HIP_ALIAS(hipMalloc, cudaMalloc)
FAKE_HIP_ALIAS(hipFree, cudaFree)
FAKE_HIP_ALIAS(hipMemcpy, cudaMemcpy)
FAKE_HIP_ALIAS(hipStreamCreateWithFlags, cudaStreamCreateWithFlags)
FAKE_HIP_ALIAS(hipStreamDestroy, cudaStreamDestroy)
FAKE_HIP_ALIAS(hipStreamQuery, cudaStreamQuery)
FAKE_HIP_ALIAS(hipEventCreate, cudaEventCreate)
FAKE_HIP_ALIAS(hipEventRecord, cudaEventRecord)
FAKE_HIP_ALIAS(hipEventElapsedTime, cudaEventElapsedTime)
FAKE_HIP_ALIAS(hipEventDestroy, cudaEventDestroy)
FAKE_HIP_ALIAS(hipGetErrorString, cudaGetErrorString)
FAKE_HIP_ALIAS(hipGetErrorName, cudaGetErrorName)
FAKE_HIP_ALIAS(hipDeviceGetPCIBusId, cudaDeviceGetPCIBusId)
FAKE_HIP_ALIAS(hipGetDevicePropertiesR0600, cudaGetDeviceProperties)
FAKE_HIP_ALIAS(hipRuntimeGetVersion, cudaRuntimeGetVersion)
FAKE_HIP_ALIAS(hipStreamBeginCapture, cudaStreamBeginCapture)
FAKE_HIP_ALIAS(hipStreamEndCapture, cudaStreamEndCapture)
FAKE_HIP_ALIAS(hipGraphInstantiateWithFlags, cudaGraphInstantiateWithFlags)
FAKE_HIP_ALIAS(hipGraphLaunch, cudaGraphLaunch)
FAKE_HIP_ALIAS(hipGraphExecDestroy, cudaGraphExecDestroy)
FAKE_HIP_ALIAS(hipGraphDestroy, cudaGraphDestroy)
