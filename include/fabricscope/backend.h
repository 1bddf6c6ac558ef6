// The backend interface: a communication library seen as "run this collective on these buffers".
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/env.h"
#include "fabricscope/store.h"

namespace fabricscope {

struct RunOptions;

// One call: the arguments of an NCCL collective, on memory from Communicator::Allocate.
struct CollectiveCall {
  Collective collective = Collective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // the count argument (CollectiveCounts::param_count)
  DataType type = DataType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  int device = 0;  // which of the communicator's devices (-g) runs it: rank() + device
};

// One point-to-point exchange with one peer (Communicator::Exchange), as nccl-tests'
// sendrecv does it: a grouped ncclSend and ncclRecv, MPI_Sendrecv, a Gloo pair.
struct PeerExchange {
  const void* send = nullptr;  // memory from Communicator::Allocate; may be recv (in place)
  void* recv = nullptr;
  size_t count = 0;
  DataType type = DataType::kFloat;
  int peer = 0;    // a rank of this communicator other than this one
  int device = 0;  // which of the communicator's devices (-g) exchanges
};

// One buffer of the same size on each device a communicator drives: device memory on GPU
// backends (not addressable from the host: copy with CopyToDevice / CopyToHost), host
// memory on host backends.
class DeviceBuffers {
 public:
  virtual ~DeviceBuffers() = default;
  virtual std::byte* data(int device) const = 0;
  virtual size_t size() const = 0;
};

// Calls recorded once and replayed as a whole (a CUDA graph per device, -G).
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  // Enqueues one replay; Communicator::Sync waits for it.
  virtual void Launch() = 0;
};

// Marks on the devices' streams between which the devices' own clocks measure (CUDA events):
// how -I times each iteration without waiting after it, as nccl-tests does.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // Records a mark on every device's stream, after the calls enqueued so far.
  virtual void Mark() = 0;
  // Once Sync has returned: for each pair of marks (0-1, 2-3, ...) the microseconds between
  // them on the slowest device.
  virtual std::vector<double> IntervalsUs() = 0;
};

// What one thread drives: one rank, or with -g several (ranks rank() .. rank()+devices()-1,
// one per device). GPU backends enqueue calls on a stream and complete them in Sync; host
// backends complete each call in Run, and their memory is the host's.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // of device 0
  virtual int size() const = 0;
  virtual int devices() const { return 1; }
  // Throws BackendError / TimeoutError; in-place calls follow nccl-tests' buffer offsets.
  virtual void Run(const CollectiveCall& call) = 0;
  // Calls between the two are launched together (ncclGroupStart/End): how one thread drives
  // several devices, and how -m aggregates operations. Groups nest.
  virtual void GroupStart() {}
  virtual void GroupEnd() {}
  // Returns when every call enqueued so far has completed on every device; a call that does
  // not complete within the timeout is aborted and throws TimeoutError.
  virtual void Sync() {}
  // Every rank of the communicator has reached the barrier (and finished its calls).
  virtual void Barrier() = 0;
  // Memory the calls use; registered with the library when the backend was asked to (-R).
  virtual std::unique_ptr<DeviceBuffers> Allocate(size_t bytes);
  virtual void CopyToDevice(int device, void* dst, const void* src, size_t bytes);
  virtual void CopyToHost(int device, void* dst, const void* src, size_t bytes);
  // Records the calls `enqueue` makes, instead of running them, for replay (-G). Throws
  // UnsupportedError on backends without graphs.
  virtual std::unique_ptr<CapturedWork> Capture(const std::function<void()>& enqueue);
  // Room for `marks` marks; null on host backends, whose calls complete in Run, so the host
  // clock times them.
  virtual std::unique_ptr<DeviceTimer> MakeTimer(int marks);
  // What the library reports it uses to reach its peers from `device` ("P2P/CUMEM/read,
  // NET/IB/0/GDRDMA"), when it reports it (NCCL_DEBUG=INFO); empty otherwise.
  virtual std::string Transport(int device) const;
  // Point-to-point on this communicator (BackendCapabilities::point_to_point): sends
  // `count` elements of `send` to rank `peer` while receiving as many from it into `recv`,
  // without the other ranks taking part. Completes as Run does (host backends: on return;
  // GPU backends: enqueued on the device's stream, Sync waits). Both ranks must call it
  // with each other as the peer. Throws UnsupportedError where the backend cannot.
  virtual void Exchange(const PeerExchange& exchange);
};

// What a backend can do; the engine checks a request against it before starting.
struct BackendCapabilities {
  std::vector<Collective> collectives;
  std::vector<DataType> types;
  std::vector<ReduceOp> ops;
  bool device_memory = false;  // buffers live on GPUs (-g -u -y -p); -I times with MakeTimer
  bool graphs = false;         // -G: Communicator::Capture works
  int registration = 0;        // the highest -R mode: 1 ncclCommRegister, 2 symmetric windows
  int max_devices = 1;         // -g: devices one thread may drive
  // Ranks are MPI processes: MPI must number them (mpirun, srun --mpi=pmix), one rank per
  // process; the launch layer starts MPI for it.
  bool mpi_processes = false;
  // Communicator::Exchange works: two ranks of a communicator exchange data without the
  // others, so that locate measures its pairs on the job's communicator instead of
  // creating one per pair.
  bool point_to_point = false;
  // The lowest compute capability of the host's visible devices as nccl-tests' minCudaArch
  // counts it (100 * major + 10 * minor: 900 for sm_90); 0 where unknown or not CUDA.
  int min_compute_capability = 0;
};

// A device a rank computes on, for the "Using devices" lines.
struct DeviceDescription {
  int index = 0;       // the runtime's device number on its host
  std::string bus_id;  // "0000:8f:00"
  std::string name;    // "NVIDIA H200"
};

// Every collective, type and op fabricscope knows: what a complete host backend declares.
// Every collective; the types and ops every backend has (not FP8, not mulsum).
BackendCapabilities AllCapabilities();

// How a rank joins a communicator.
struct ConnectOptions {
  int rank = 0;
  int size = 1;
  Store* store = nullptr;     // rendezvous; shared by all ranks of the communicator
  std::string prefix = "fs";  // key namespace in the store
  std::chrono::milliseconds timeout{30000};
  // Sub-communicator colour (NCCL_TESTS_SPLIT): ranks with the same colour form one
  // communicator; `rank` and `size` are then the rank within and the size of that group.
  int color = 0;
  // This rank's rank in the whole job, across colours (what MPI_COMM_WORLD numbers).
  int world_rank = 0;
  // Where this rank listens and what it tells its peers: a host name or IP address. The
  // default keeps thread ranks on loopback; ranks on several hosts need a routable one.
  std::string hostname = "127.0.0.1";
  // A network interface to listen on instead (e.g. "eth0"); when set it wins over hostname.
  std::string network_interface;
  // GPU backends: the devices this thread drives (-g; ranks rank .. rank+devices-1), the
  // first one's number (chosen from the local rank, as nccl-tests does), -R and -y.
  int devices = 1;
  int first_device = 0;
  int registration = 0;
  bool stream_null = false;
};

// Where a backend finds its libraries (--nccl-lib, --gpu-runtime-lib); empty = search.
struct BackendOptions {
  std::string library;
  std::string runtime_library;
  // The variables the backend reads (the nccl and rccl backends: NCCL_DEBUG,
  // NCCL_DEBUG_FILE); by default none is set.
  Env env;
};

// A communication library.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual std::string version() const = 0;
  virtual const BackendCapabilities& capabilities() const = 0;
  // NCCL_VERSION_CODE of the loaded NCCL or RCCL (22809); 0 for other libraries.
  virtual int nccl_version_code() const { return 0; }
  // The devices a rank joining with `options` computes on, one per device it drives; empty
  // on host memory. Throws when a device it needs does not exist.
  virtual std::vector<DeviceDescription> Devices(const ConnectOptions& options) const;
  // Blocks until every rank of the communicator has connected.
  virtual std::unique_ptr<Communicator> Connect(const ConnectOptions& options) = 0;
};

// A registry entry: name -> factory and description.
struct BackendEntry {
  std::string_view name;
  std::string_view description;
  std::function<std::unique_ptr<Backend>(const BackendOptions&)> make;
};

// Every backend compiled into this build.
const std::vector<BackendEntry>& Backends();
// Throws UsageError listing the available backends; the backend's own errors (a library
// that does not load, no device) propagate.
std::unique_ptr<Backend> MakeBackend(std::string_view name, const BackendOptions& options = {});
// The backend `fabricscope run` uses without --backend: nccl where a CUDA device is
// present, else gloo. `reason` says why, for the user.
std::string DefaultBackend(const BackendOptions& options, std::string* reason);
// Throws UnsupportedError naming the backend and what it supports.
void CheckSupported(const Backend& backend, const RunOptions& options);
// What `-d all` / `-o all` mean on a backend: those of the list it supports, as nccl-tests'
// "all" is the types and ops its NCCL has (src/common.cu:1141-1160 at v2.19.6).
std::vector<DataType> SupportedOf(const Backend& backend, std::vector<DataType> types);
std::vector<ReduceOp> SupportedOf(const Backend& backend, std::vector<ReduceOp> ops);

}  // namespace fabricscope
