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
#include "fabricscope/store.h"

namespace fabricscope {

struct RunOptions;

// One call: the arguments of an NCCL collective, on host memory.
struct CollectiveCall {
  Collective collective = Collective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // the count argument (CollectiveCounts::param_count)
  DataType type = DataType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
};

// One rank's connection to its peers. Run returns when the call is complete on this rank.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Throws BackendError / TimeoutError; in-place calls follow nccl-tests' buffer offsets.
  virtual void Run(const CollectiveCall& call) = 0;
  virtual void Barrier() = 0;
};

// What a backend can do; the engine checks a request against it before starting.
struct BackendCapabilities {
  std::vector<Collective> collectives;
  std::vector<DataType> types;
  std::vector<ReduceOp> ops;
};

// Every collective, type and op fabricscope knows: what a complete host backend declares.
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
};

// A communication library.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual std::string version() const = 0;
  virtual const BackendCapabilities& capabilities() const = 0;
  // Blocks until every rank of the communicator has connected.
  virtual std::unique_ptr<Communicator> Connect(const ConnectOptions& options) = 0;
};

// A registry entry: name -> factory and description.
struct BackendEntry {
  std::string_view name;
  std::string_view description;
  std::function<std::unique_ptr<Backend>()> make;
};

// Every backend compiled into this build.
const std::vector<BackendEntry>& Backends();
// Throws UsageError listing the available backends.
std::unique_ptr<Backend> MakeBackend(std::string_view name);
// Throws UnsupportedError naming the backend and what it supports.
void CheckSupported(const Backend& backend, const RunOptions& options);

}  // namespace fabricscope
