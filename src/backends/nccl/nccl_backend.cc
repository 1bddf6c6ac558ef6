// The NCCL (and RCCL) backend: device buffers, one stream per device, calls enqueued and
// completed in Sync, as nccl-tests drives NCCL. Everything reaches NCCL and the runtime
// through the tables of gpu_libraries.h, loaded at run time.
#include "backends/nccl/nccl_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/nccl/gpu_libraries.h"
#include "backends/nccl/nccl_debug_log.h"
#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"
#include "fabricscope/strings.h"

namespace fabricscope {
namespace gpu {
namespace {

using Clock = std::chrono::steady_clock;

// How long Sync spins (yielding the core) before it starts to sleep between polls: long enough
// that a collective of a few microseconds is not timed with a sleep in it.
constexpr auto kSpinBeforeSleep = std::chrono::milliseconds(2);
constexpr auto kPollSleep = std::chrono::microseconds(50);

ncclDataType_t ToNccl(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return kNcclInt8;
    case DataType::kUint8:
      return kNcclUint8;
    case DataType::kInt32:
      return kNcclInt32;
    case DataType::kUint32:
      return kNcclUint32;
    case DataType::kInt64:
      return kNcclInt64;
    case DataType::kUint64:
      return kNcclUint64;
    case DataType::kHalf:
      return kNcclFloat16;
    case DataType::kFloat:
      return kNcclFloat32;
    case DataType::kDouble:
      return kNcclFloat64;
    case DataType::kBfloat16:
      return kNcclBfloat16;
    case DataType::kFloat8e4m3:
      return kNcclFloat8e4m3;
    case DataType::kFloat8e5m2:
      return kNcclFloat8e5m2;
  }
  return kNcclFloat32;
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return kNcclSum;
    case ReduceOp::kProd:
      return kNcclProd;
    case ReduceOp::kMax:
      return kNcclMax;
    case ReduceOp::kMin:
      return kNcclMin;
    case ReduceOp::kAvg:
      return kNcclAvg;
    case ReduceOp::kMulSum:  // created per call: PreMulSum below
      return kNcclSum;
  }
  return kNcclSum;
}

// -o mulsum as nccl-tests runs it (src/common.cu:556-593, 614-618 at v2.19.6): before each
// call an op is created on the lane's communicator with the rank's scalar
// (ncclVerifiablePremulScalar: 1 on even ranks, 2 on odd ones) in the call's type, read from
// host memory, and destroyed once the call is enqueued. Other ops pass through.
class PreMulSum {
 public:
  PreMulSum(const NcclApi& nccl, ReduceOp op, DataType type, int rank, ncclComm_t comm)
      : nccl_(nccl), comm_(comm), op_(ToNccl(op)) {
    if (op != ReduceOp::kMulSum) return;
    uint64_t scalar = 0;  // the union of nccl-tests' startColl: the type's bytes, first
    StoreElement(type, &scalar, 0, PremulScalar(rank));
    result_ =
        nccl.RedOpCreatePreMulSum(&op_, &scalar, ToNccl(type), kNcclScalarHostImmediate, comm);
    created_ = result_ == 0;
  }
  ~PreMulSum() {
    if (created_) nccl_.RedOpDestroy(op_, comm_);
  }
  PreMulSum(const PreMulSum&) = delete;
  PreMulSum& operator=(const PreMulSum&) = delete;

  ncclRedOp_t op() const { return op_; }
  ncclResult_t result() const { return result_; }

 private:
  const NcclApi& nccl_;
  ncclComm_t comm_;
  ncclRedOp_t op_;
  ncclResult_t result_ = 0;
  bool created_ = false;
};

// "0000:8F:00.0" (the runtime's form) -> "0000:8f:00" (nccl-tests' "%04x:%02x:%02x").
std::string NcclTestsBusId(std::string id) {
  if (const size_t dot = id.rfind('.'); dot != std::string::npos) id.resize(dot);
  return Lower(id);
}

// One device a thread drives: its rank, NCCL communicator and stream.
struct Lane {
  int device = 0;
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* barrier = nullptr;  // one int32 the barrier reduces
};

// What a communicator shares with the buffers and graphs it hands out, which may outlive a
// call that aborted it: once aborted, NCCL must not be called on its communicators again.
struct CommState {
  const GpuLibraries* libs = nullptr;
  std::string label;  // "nccl" / "rccl", for messages
  std::vector<Lane> lanes;
  int registration = 0;
  bool aborted = false;

  const NcclApi& nccl() const { return libs->nccl; }
  const RuntimeApi& rt() const { return libs->runtime.api; }

  // Throws BackendError for a failed NCCL call, with NCCL's own message when it keeps one.
  void Check(ncclResult_t result, std::string_view what, const Lane& lane) const {
    if (result == kNcclSuccess) return;
    std::string detail = nccl().GetErrorString(result);
    if (nccl().GetLastError != nullptr && lane.comm != nullptr) {
      if (const char* last = nccl().GetLastError(lane.comm); last != nullptr && last[0] != '\0') {
        detail += fmt::format(" ({})", last);
      }
    }
    throw BackendError(
        fmt::format("{} {} (rank {}, device {}): {}", label, what, lane.rank, lane.device, detail));
  }

  void CheckRuntime(cudaError_t error, const char* what) const {
    if (error != kCudaSuccess) throw BackendError(libs->runtime.Describe(what, error));
  }

  void UseDevice(const Lane& lane) const { CheckRuntime(rt().SetDevice(lane.device), "SetDevice"); }

  // Ends every communicator of this thread at once (ncclCommAbort): a stuck kernel returns
  // and the streams drain.
  void Abort() {
    if (aborted) return;
    aborted = true;
    for (Lane& lane : lanes) {
      if (lane.comm != nullptr) nccl().CommAbort(lane.comm);
    }
  }
};

// One buffer per device, from cudaMalloc, or ncclMemAlloc and registered (-R).
class NcclBuffers final : public DeviceBuffers {
 public:
  NcclBuffers(std::shared_ptr<CommState> state, size_t bytes)
      : state_(std::move(state)), bytes_(bytes) {
    const CommState& s = *state_;
    for (const Lane& lane : s.lanes) {
      s.UseDevice(lane);
      void* p = nullptr;
      if (s.registration > 0) {
        s.Check(s.nccl().MemAlloc(&p, bytes), "ncclMemAlloc", lane);
      } else {
        s.CheckRuntime(s.rt().Malloc(&p, bytes), "Malloc");
      }
      data_.push_back(static_cast<std::byte*>(p));
    }
    if (s.registration == 1) {
      // Local registration: each communicator learns the buffer of its own device.
      for (size_t d = 0; d < s.lanes.size(); ++d) {
        void* handle = nullptr;
        s.Check(s.nccl().CommRegister(s.lanes[d].comm, data_[d], bytes, &handle),
                "ncclCommRegister", s.lanes[d]);
        handles_.push_back(handle);
      }
    } else if (s.registration == 2) {
      // Symmetric windows are collective: the devices of one thread register together.
      std::vector<ncclWindow_t> windows(s.lanes.size());
      s.Check(s.nccl().GroupStart(), "ncclGroupStart", s.lanes[0]);
      ncclResult_t first = kNcclSuccess;
      for (size_t d = 0; d < s.lanes.size(); ++d) {
        const ncclResult_t r = s.nccl().CommWindowRegister(s.lanes[d].comm, data_[d], bytes,
                                                           &windows[d], kNcclWinCollSymmetric);
        if (first == kNcclSuccess) first = r;
      }
      const ncclResult_t end = s.nccl().GroupEnd();
      s.Check(first != kNcclSuccess ? first : end, "ncclCommWindowRegister", s.lanes[0]);
      windows_ = std::move(windows);
    }
  }

  ~NcclBuffers() override {
    const CommState& s = *state_;
    // An aborted communicator has forgotten its registrations; the memory is still ours.
    if (!s.aborted) {
      for (size_t d = 0; d < handles_.size(); ++d) {
        s.nccl().CommDeregister(s.lanes[d].comm, handles_[d]);
      }
      if (!windows_.empty()) {
        s.nccl().GroupStart();
        for (size_t d = 0; d < windows_.size(); ++d) {
          s.nccl().CommWindowDeregister(s.lanes[d].comm, windows_[d]);
        }
        s.nccl().GroupEnd();
      }
    }
    for (size_t d = 0; d < data_.size(); ++d) {
      s.rt().SetDevice(s.lanes[d].device);
      if (s.registration > 0) {
        s.nccl().MemFree(data_[d]);
      } else {
        s.rt().Free(data_[d]);
      }
    }
  }

  std::byte* data(int device) const override { return data_.at(static_cast<size_t>(device)); }
  size_t size() const override { return bytes_; }

 private:
  std::shared_ptr<CommState> state_;
  size_t bytes_;
  std::vector<std::byte*> data_;
  std::vector<void*> handles_;
  std::vector<ncclWindow_t> windows_;
};

// The graphs captured on each device's stream, instantiated for replay.
class NcclGraphs final : public CapturedWork {
 public:
  NcclGraphs(std::shared_ptr<CommState> state, std::function<void()> on_launch)
      : state_(std::move(state)), on_launch_(std::move(on_launch)) {}
  ~NcclGraphs() override {
    const RuntimeApi& rt = state_->rt();
    for (cudaGraphExec_t exec : execs_) rt.GraphExecDestroy(exec);
    for (cudaGraph_t graph : graphs_) rt.GraphDestroy(graph);
  }

  void Add(cudaGraph_t graph) {
    graphs_.push_back(graph);
    cudaGraphExec_t exec = nullptr;
    state_->CheckRuntime(state_->rt().GraphInstantiateWithFlags(&exec, graph, 0),
                         "GraphInstantiateWithFlags");
    execs_.push_back(exec);
  }

  void Launch() override {
    on_launch_();
    for (size_t d = 0; d < execs_.size(); ++d) {
      state_->CheckRuntime(state_->rt().GraphLaunch(execs_[d], state_->lanes[d].stream),
                           "GraphLaunch");
    }
  }

 private:
  std::shared_ptr<CommState> state_;
  std::function<void()> on_launch_;
  std::vector<cudaGraph_t> graphs_;
  std::vector<cudaGraphExec_t> execs_;
};

// CUDA events on every device's stream; intervals are read once the streams have drained.
class NcclTimer final : public DeviceTimer {
 public:
  NcclTimer(std::shared_ptr<CommState> state, int marks) : state_(std::move(state)) {
    const CommState& s = *state_;
    events_.resize(s.lanes.size());
    for (size_t d = 0; d < s.lanes.size(); ++d) {
      s.UseDevice(s.lanes[d]);
      for (int m = 0; m < marks; ++m) {
        cudaEvent_t event = nullptr;
        s.CheckRuntime(s.rt().EventCreate(&event), "EventCreate");
        events_[d].push_back(event);
      }
    }
  }
  ~NcclTimer() override {
    for (const auto& lane : events_) {
      for (cudaEvent_t event : lane) state_->rt().EventDestroy(event);
    }
  }

  void Mark() override {
    const CommState& s = *state_;
    for (size_t d = 0; d < s.lanes.size(); ++d) {
      s.CheckRuntime(s.rt().EventRecord(events_[d].at(next_), s.lanes[d].stream), "EventRecord");
    }
    ++next_;
  }

  std::vector<double> IntervalsUs() override {
    const CommState& s = *state_;
    std::vector<double> out;
    for (size_t m = 0; m + 1 < next_; m += 2) {
      double slowest = 0;
      for (const auto& lane : events_) {
        float ms = 0;
        s.CheckRuntime(s.rt().EventElapsedTime(&ms, lane[m], lane[m + 1]), "EventElapsedTime");
        slowest = std::max(slowest, static_cast<double>(ms) * 1000.0);
      }
      out.push_back(slowest);
    }
    return out;
  }

 private:
  std::shared_ptr<CommState> state_;
  std::vector<std::vector<cudaEvent_t>> events_;  // per device, per mark
  size_t next_ = 0;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<CommState> state, int rank, int size,
                   std::chrono::milliseconds timeout, NcclDebugLog* log)
      : state_(std::move(state)), rank_(rank), size_(size), timeout_(timeout), log_(log) {}

  ~NcclCommunicator() override {
    CommState& s = *state_;
    // Work that never completed (the run failed elsewhere) would hold ncclCommDestroy up:
    // abort instead.
    bool idle = true;
    for (const Lane& lane : s.lanes) idle &= s.rt().StreamQuery(lane.stream) == kCudaSuccess;
    if (!idle) s.Abort();
    for (Lane& lane : s.lanes) {
      s.rt().SetDevice(lane.device);
      if (!s.aborted && lane.comm != nullptr) s.nccl().CommDestroy(lane.comm);
      if (lane.barrier != nullptr) s.rt().Free(lane.barrier);
      if (lane.stream != nullptr) s.rt().StreamDestroy(lane.stream);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int devices() const override { return static_cast<int>(state_->lanes.size()); }

  void Run(const CollectiveCall& call) override {
    const CommState& s = *state_;
    const Lane& lane = s.lanes.at(static_cast<size_t>(call.device));
    pending_ = fmt::format("{} of {} {} elements", SpecOf(call.collective).name, call.count,
                           NameOf(call.type));
    const ncclDataType_t type = ToNccl(call.type);
    const size_t chunk = call.count * SizeOf(call.type);
    const auto* send = static_cast<const std::byte*>(call.send);
    auto* recv = static_cast<std::byte*>(call.recv);
    const NcclApi& n = s.nccl();
    const std::string what = fmt::format("{} {}", SpecOf(call.collective).name, pending_);
    const bool reduces = SpecOf(call.collective).has_op;
    const PreMulSum premul(n, reduces ? call.op : ReduceOp::kSum, call.type, lane.rank, lane.comm);
    s.Check(premul.result(), "ncclRedOpCreatePreMulSum for " + what, lane);
    const ncclRedOp_t op = premul.op();
    switch (call.collective) {
      case Collective::kAllReduce:
        s.Check(n.AllReduce(send, recv, call.count, type, op, lane.comm, lane.stream), what, lane);
        break;
      case Collective::kAllGather:
        s.Check(n.AllGather(send, recv, call.count, type, lane.comm, lane.stream), what, lane);
        break;
      case Collective::kReduceScatter:
        s.Check(n.ReduceScatter(send, recv, call.count, type, op, lane.comm, lane.stream), what,
                lane);
        break;
      case Collective::kBroadcast:
        s.Check(n.Broadcast(send, recv, call.count, type, call.root, lane.comm, lane.stream), what,
                lane);
        break;
      case Collective::kReduce:
        s.Check(n.Reduce(send, recv, call.count, type, op, call.root, lane.comm, lane.stream), what,
                lane);
        break;
      case Collective::kAlltoAll:
        if (n.AlltoAll != nullptr) {
          s.Check(n.AlltoAll(send, recv, call.count, type, lane.comm, lane.stream), what, lane);
          break;
        }
        // Before NCCL 2.28, as nccl-tests does it: a send and a receive with every peer.
        PointToPoint(lane, what, [&] {
          for (int p = 0; p < size_; ++p) {
            const size_t at = chunk * static_cast<size_t>(p);
            s.Check(n.Send(send + at, call.count, type, p, lane.comm, lane.stream), what, lane);
            s.Check(n.Recv(recv + at, call.count, type, p, lane.comm, lane.stream), what, lane);
          }
        });
        break;
      case Collective::kSendRecv:
        // nccl-tests' ring: send to rank+1, receive from rank-1.
        PointToPoint(lane, what, [&] {
          s.Check(n.Send(send, call.count, type, (lane.rank + 1) % size_, lane.comm, lane.stream),
                  what, lane);
          s.Check(n.Recv(recv, call.count, type, (lane.rank + size_ - 1) % size_, lane.comm,
                         lane.stream),
                  what, lane);
        });
        break;
      case Collective::kGather:
        if (n.Gather != nullptr) {
          s.Check(n.Gather(send, recv, call.count, type, call.root, lane.comm, lane.stream), what,
                  lane);
          break;
        }
        PointToPoint(lane, what, [&] {
          s.Check(n.Send(send, call.count, type, call.root, lane.comm, lane.stream), what, lane);
          if (lane.rank != call.root) return;
          for (int p = 0; p < size_; ++p) {
            s.Check(n.Recv(recv + chunk * static_cast<size_t>(p), call.count, type, p, lane.comm,
                           lane.stream),
                    what, lane);
          }
        });
        break;
      case Collective::kScatter:
        if (n.Scatter != nullptr) {
          s.Check(n.Scatter(send, recv, call.count, type, call.root, lane.comm, lane.stream), what,
                  lane);
          break;
        }
        PointToPoint(lane, what, [&] {
          if (lane.rank == call.root) {
            for (int p = 0; p < size_; ++p) {
              s.Check(n.Send(send + chunk * static_cast<size_t>(p), call.count, type, p, lane.comm,
                             lane.stream),
                      what, lane);
            }
          }
          s.Check(n.Recv(recv, call.count, type, call.root, lane.comm, lane.stream), what, lane);
        });
        break;
    }
  }

  void GroupStart() override {
    state_->Check(state_->nccl().GroupStart(), "ncclGroupStart", state_->lanes[0]);
  }
  void GroupEnd() override {
    state_->Check(state_->nccl().GroupEnd(), "ncclGroupEnd", state_->lanes[0]);
  }

  // nccl-tests' testStreamSynchronize: poll each stream, and between polls ask NCCL for an
  // asynchronous error; past the timeout, abort the communicators so the kernels return.
  void Sync() override {
    CommState& s = *state_;
    const auto start = Clock::now();
    std::vector<bool> done(s.lanes.size(), false);
    size_t remaining = s.lanes.size();
    while (remaining > 0) {
      for (size_t d = 0; d < s.lanes.size(); ++d) {
        if (done[d]) continue;
        const Lane& lane = s.lanes[d];
        const cudaError_t query = s.rt().StreamQuery(lane.stream);
        if (query == kCudaSuccess) {
          done[d] = true;
          --remaining;
          continue;
        }
        if (query != kCudaErrorNotReady) {
          s.Abort();
          throw BackendError(fmt::format("{} while waiting for {} on rank {} (device {})",
                                         s.libs->runtime.Describe("StreamQuery", query), pending_,
                                         lane.rank, lane.device));
        }
        CheckAsyncError(lane);
      }
      if (remaining == 0) break;
      const auto waited = Clock::now() - start;
      if (waited > timeout_) {
        const Lane& stuck =
            s.lanes[static_cast<size_t>(std::find(done.begin(), done.end(), false) - done.begin())];
        s.Abort();
        throw TimeoutError(fmt::format(
            "{} {} did not complete within {:g} s on rank {} (device {}) (-T): a peer is stuck "
            "or dead; aborted the communicator (ncclCommAbort)",
            s.label, pending_, std::chrono::duration<double>(timeout_).count(), stuck.rank,
            stuck.device));
      }
      if (waited < kSpinBeforeSleep) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(kPollSleep);
      }
    }
    // A stream can drain although its communicator failed (a peer went away): then the
    // results are not results.
    for (const Lane& lane : s.lanes) CheckAsyncError(lane);
  }

  void Barrier() override {
    const CommState& s = *state_;
    if (s.lanes.size() > 1) GroupStart();
    for (const Lane& lane : s.lanes) {
      s.Check(s.nccl().AllReduce(lane.barrier, lane.barrier, 1, kNcclInt32, kNcclSum, lane.comm,
                                 lane.stream),
              "barrier (all_reduce of 1 int32)", lane);
    }
    if (s.lanes.size() > 1) GroupEnd();
    pending_ = "barrier";
    Sync();
  }

  // A grouped ncclSend and ncclRecv with the peer on this communicator, as nccl-tests'
  // sendrecv does: no communicator is created for the pair.
  void Exchange(const PeerExchange& x) override {
    const CommState& s = *state_;
    const Lane& lane = s.lanes.at(static_cast<size_t>(x.device));
    if (x.peer < 0 || x.peer >= size_ || x.peer == lane.rank) {
      throw UsageError(fmt::format("{} exchange on rank {}: peer {} is not another rank of {}",
                                   s.label, lane.rank, x.peer, size_));
    }
    pending_ =
        fmt::format("exchange with rank {} of {} {} elements", x.peer, x.count, NameOf(x.type));
    const ncclDataType_t type = ToNccl(x.type);
    const NcclApi& n = s.nccl();
    PointToPoint(lane, pending_, [&] {
      s.Check(n.Send(x.send, x.count, type, x.peer, lane.comm, lane.stream), pending_, lane);
      s.Check(n.Recv(x.recv, x.count, type, x.peer, lane.comm, lane.stream), pending_, lane);
    });
  }

  std::unique_ptr<DeviceBuffers> Allocate(size_t bytes) override {
    return std::make_unique<NcclBuffers>(state_, bytes);
  }

  void CopyToDevice(int device, void* dst, const void* src, size_t bytes) override {
    Copy(device, dst, src, bytes, kCudaMemcpyHostToDevice);
  }
  void CopyToHost(int device, void* dst, const void* src, size_t bytes) override {
    Copy(device, dst, src, bytes, kCudaMemcpyDeviceToHost);
  }

  // As nccl-tests captures: every device's stream, thread-local mode, then one graph each.
  std::unique_ptr<CapturedWork> Capture(const std::function<void()>& enqueue) override {
    CommState& s = *state_;
    for (const Lane& lane : s.lanes) {
      s.UseDevice(lane);
      s.CheckRuntime(s.rt().StreamBeginCapture(lane.stream, kCudaStreamCaptureModeThreadLocal),
                     "StreamBeginCapture");
    }
    try {
      enqueue();
    } catch (...) {
      // Leave capture mode, or the streams stay unusable.
      for (const Lane& lane : s.lanes) {
        cudaGraph_t graph = nullptr;
        if (s.rt().StreamEndCapture(lane.stream, &graph) == kCudaSuccess && graph != nullptr) {
          s.rt().GraphDestroy(graph);
        }
      }
      throw;
    }
    const std::string captured = pending_;
    auto graphs = std::make_unique<NcclGraphs>(
        state_, [this, captured] { pending_ = "graph replay of " + captured; });
    for (const Lane& lane : s.lanes) {
      cudaGraph_t graph = nullptr;
      s.CheckRuntime(s.rt().StreamEndCapture(lane.stream, &graph), "StreamEndCapture");
      graphs->Add(graph);
    }
    return graphs;
  }

  std::unique_ptr<DeviceTimer> MakeTimer(int marks) override {
    return std::make_unique<NcclTimer>(state_, marks);
  }

  std::string Transport(int device) const override {
    if (log_ == nullptr) return {};
    const Lane& lane = state_->lanes.at(static_cast<size_t>(device));
    return log_->Transport(lane.rank, lane.device);
  }

 private:
  // Sends and receives that form one operation: one group, nested in any group around it.
  template <typename F>
  void PointToPoint(const Lane& lane, const std::string& what, F&& calls) {
    const CommState& s = *state_;
    s.Check(s.nccl().GroupStart(), "ncclGroupStart", lane);
    try {
      calls();
    } catch (...) {
      s.nccl().GroupEnd();
      throw;
    }
    s.Check(s.nccl().GroupEnd(), what, lane);
  }

  // Throws, after aborting, when NCCL reports an error of a call in flight.
  void CheckAsyncError(const Lane& lane) {
    CommState& s = *state_;
    ncclResult_t async = kNcclSuccess;
    s.Check(s.nccl().CommGetAsyncError(lane.comm, &async), "ncclCommGetAsyncError", lane);
    if (async == kNcclSuccess || async == kNcclInProgress) return;
    std::string detail = s.nccl().GetErrorString(async);
    if (s.nccl().GetLastError != nullptr) {
      if (const char* last = s.nccl().GetLastError(lane.comm); last && last[0] != '\0') {
        detail += fmt::format(" ({})", last);
      }
    }
    s.Abort();
    throw BackendError(fmt::format(
        "{} reported an asynchronous error on rank {} (device {}) during {}: {}; aborted the "
        "communicator (ncclCommAbort)",
        s.label, lane.rank, lane.device, pending_, detail));
  }

  void Copy(int device, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    if (bytes == 0) return;
    const CommState& s = *state_;
    s.UseDevice(s.lanes.at(static_cast<size_t>(device)));
    s.CheckRuntime(s.rt().Memcpy(dst, src, bytes, kind), "Memcpy");
  }

  std::shared_ptr<CommState> state_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  NcclDebugLog* log_;
  std::string pending_ = "nothing";  // the last call enqueued, for messages
};

class NcclBackend final : public Backend {
 public:
  NcclBackend(Vendor vendor, const BackendOptions& options) : vendor_(vendor) {
    // Before NCCL's first call: NCCL reads NCCL_DEBUG_FILE once.
    log_ = NcclDebugLog::Start(options.env);
    libs_ = LoadLibraries(vendor, options.library, options.runtime_library);
    const GpuRuntime& runtime = libs_->runtime;
    const cudaError_t error = runtime.api.GetDeviceCount(&device_count_);
    const std::string word(NamesOf(vendor).runtime);
    if (error != kCudaSuccess) {
      throw UnsupportedError(fmt::format(
          "no {} device: {}", word,
          runtime.Describe((std::string(NamesOf(vendor).symbol_prefix) + "GetDeviceCount").c_str(),
                           error)));
    }
    if (device_count_ <= 0) {
      throw UnsupportedError(fmt::format("no {} device: the {} runtime ({}) sees none", word, word,
                                         runtime.library->path()));
    }
    caps_ = AllCapabilities();
    caps_.point_to_point = true;  // ncclSend/ncclRecv, in every NCCL fabricscope loads
    // ncclAvg and bfloat16 arrived in NCCL 2.10.
    if (libs_->nccl_version < NcclVersionCode(2, 10, 0)) {
      std::erase(caps_.ops, ReduceOp::kAvg);
      std::erase(caps_.types, DataType::kBfloat16);
    }
    caps_.min_compute_capability = MinComputeCapability();
    AddNcclOnly();
    caps_.device_memory = true;
    caps_.graphs = runtime.api.has_graphs() && libs_->nccl_version >= NcclVersionCode(2, 9, 0);
    caps_.registration = libs_->nccl.registration_level();
    caps_.max_devices = 1024;
  }

  // nccl-tests' minCudaArch over the host's devices (src/common.cu:1576-1579 at v2.19.6); 0
  // when the runtime lacks cudaDeviceGetAttribute or a device does not answer.
  int MinComputeCapability() const {
    const RuntimeApi& rt = libs_->runtime.api;
    if (rt.DeviceGetAttribute == nullptr) return 0;
    int lowest = 0;
    for (int d = 0; d < device_count_; ++d) {
      int major = 0, minor = 0;
      if (rt.DeviceGetAttribute(&major, kCudaDevAttrComputeCapabilityMajor, d) != kCudaSuccess ||
          rt.DeviceGetAttribute(&minor, kCudaDevAttrComputeCapabilityMinor, d) != kCudaSuccess) {
        return 0;
      }
      const int arch = 100 * major + 10 * minor;
      lowest = d == 0 ? arch : std::min(lowest, arch);
    }
    return lowest;
  }

  // The premultiplied sum from NCCL 2.11 and FP8 from 2.24, as nccl-tests adds them to its
  // lists (src/common.cu:1147-1159 at v2.19.6), FP8 only from sm_90: NCCL refuses FP8
  // reductions below it ("FP8 reduction support begins with sm90 capable devices",
  // src/enqueue.cc:3026-3031 at v2.30.7-1) and nccl-tests drops FP8 there
  // (src/common.cu:1585-1598). Not on RCCL: not tried there.
  void AddNcclOnly() {
    if (vendor_ != Vendor::kNvidia) return;
    const NcclApi& n = libs_->nccl;
    if (libs_->nccl_version >= NcclVersionCode(2, 11, 0) && n.RedOpCreatePreMulSum != nullptr &&
        n.RedOpDestroy != nullptr) {
      caps_.ops.push_back(ReduceOp::kMulSum);
    }
    const int arch = caps_.min_compute_capability;
    if (libs_->nccl_version >= NcclVersionCode(2, 24, 0) && (arch == 0 || arch >= 900)) {
      caps_.types.push_back(DataType::kFloat8e4m3);
      caps_.types.push_back(DataType::kFloat8e5m2);
    }
  }

  std::string_view name() const override { return vendor_ == Vendor::kAmd ? "rccl" : "nccl"; }
  std::string version() const override { return libs_->VersionString(); }
  const BackendCapabilities& capabilities() const override { return caps_; }
  int nccl_version_code() const override { return libs_->nccl_version; }
  int device_count() const { return device_count_; }

  std::vector<DeviceDescription> Devices(const ConnectOptions& options) const override {
    const RuntimeApi& rt = libs_->runtime.api;
    std::vector<DeviceDescription> out;
    for (int d = 0; d < options.devices; ++d) {
      const int index = options.first_device + d;
      if (index >= device_count_) {
        throw UsageError(fmt::format(
            "rank {} needs {} device {} (nccl-tests' choice: local rank x threads x GPUs), but "
            "this host has {} (0-{}): start fewer processes per host, or lower -t or -g",
            options.world_rank + d, NamesOf(vendor_).runtime, index, device_count_,
            device_count_ - 1));
      }
      DeviceDescription desc;
      desc.index = index;
      std::vector<char> props(kDevicePropBufferBytes, '\0');
      if (rt.GetDeviceProperties(props.data(), index) == kCudaSuccess) {
        desc.name.assign(props.data(), strnlen(props.data(), kDeviceNameBytes));
      }
      char bus[64] = {};
      if (rt.DeviceGetPCIBusId(bus, sizeof bus, index) == kCudaSuccess) {
        desc.bus_id = NcclTestsBusId(bus);
      }
      out.push_back(std::move(desc));
    }
    return out;
  }

  std::unique_ptr<Communicator> Connect(const ConnectOptions& options) override {
    Devices(options);  // every device exists
    auto state = std::make_shared<CommState>();
    state->libs = libs_.get();
    state->label = std::string(name());
    state->registration = options.registration;
    CommState& s = *state;
    for (int d = 0; d < options.devices; ++d) {
      Lane lane;
      lane.device = options.first_device + d;
      lane.rank = options.rank + d;
      s.lanes.push_back(lane);
    }
    // Built step by step: a failure half-way leaves a communicator whose destructor frees
    // what exists.
    auto comm = std::make_unique<NcclCommunicator>(state, options.rank, options.size,
                                                   options.timeout, log_.get());
    for (Lane& lane : s.lanes) {
      s.UseDevice(lane);
      if (!options.stream_null) {
        s.CheckRuntime(s.rt().StreamCreateWithFlags(&lane.stream, kCudaStreamNonBlocking),
                       "StreamCreateWithFlags");
      }
      s.CheckRuntime(s.rt().Malloc(&lane.barrier, sizeof(int32_t)), "Malloc");
    }
    if (options.devices == options.size) {
      // This thread is the whole communicator (one process, one thread): nccl-tests'
      // ncclCommInitAll, which needs no unique id.
      std::vector<ncclComm_t> comms(s.lanes.size());
      std::vector<int> devices;
      for (const Lane& lane : s.lanes) devices.push_back(lane.device);
      s.Check(s.nccl().CommInitAll(comms.data(), options.size, devices.data()),
              fmt::format("ncclCommInitAll of {} devices", options.size), s.lanes.front());
      for (size_t d = 0; d < comms.size(); ++d) s.lanes[d].comm = comms[d];
      return comm;
    }
    const ncclUniqueId id = ShareUniqueId(options, s.lanes.front());
    // One thread joins as several ranks: the inits must be one group, or the first would wait
    // forever for the others.
    s.Check(s.nccl().GroupStart(), "ncclGroupStart", s.lanes.front());
    ncclResult_t first = kNcclSuccess;
    const Lane* failed = nullptr;
    for (Lane& lane : s.lanes) {
      s.UseDevice(lane);
      const ncclResult_t r = s.nccl().CommInitRank(&lane.comm, options.size, id, lane.rank);
      if (r != kNcclSuccess && first == kNcclSuccess) {
        first = r;
        failed = &lane;
      }
    }
    const ncclResult_t end = s.nccl().GroupEnd();
    s.Check(first != kNcclSuccess ? first : end,
            fmt::format("ncclCommInitRank of {} ranks", options.size),
            failed != nullptr ? *failed : s.lanes.front());
    return comm;
  }

 private:
  // Rank 0 of the communicator makes the id and puts it in the store; the others get it.
  ncclUniqueId ShareUniqueId(const ConnectOptions& options, const Lane& lane) const {
    ncclUniqueId id{};
    const std::string key = options.prefix + "/nccl-unique-id";
    if (options.rank == 0) {
      CommState probe;
      probe.libs = libs_.get();
      probe.label = std::string(name());
      probe.Check(libs_->nccl.GetUniqueId(&id), "ncclGetUniqueId", lane);
      options.store->Set(key, std::vector<char>(id.internal, id.internal + sizeof id.internal));
      return id;
    }
    const std::vector<char> bytes = options.store->Get(key, options.timeout);
    if (bytes.size() != sizeof id.internal) {
      throw BackendError(fmt::format("the {} unique id in the store has {} bytes, not {}", name(),
                                     bytes.size(), sizeof id.internal));
    }
    std::memcpy(id.internal, bytes.data(), bytes.size());
    return id;
  }

  Vendor vendor_;
  std::unique_ptr<NcclDebugLog> log_;
  std::unique_ptr<GpuLibraries> libs_;
  int device_count_ = 0;
  BackendCapabilities caps_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Backend> MakeNcclBackend(const BackendOptions& options) {
  return std::make_unique<gpu::NcclBackend>(gpu::Vendor::kNvidia, options);
}

std::unique_ptr<Backend> MakeRcclBackend(const BackendOptions& options) {
  return std::make_unique<gpu::NcclBackend>(gpu::Vendor::kAmd, options);
}

bool ProbeNccl(const BackendOptions& options, std::string* why) {
  try {
    gpu::NcclBackend backend(gpu::Vendor::kNvidia, options);
    *why = fmt::format("NCCL {}, {} CUDA device{}", backend.version(), backend.device_count(),
                       backend.device_count() == 1 ? "" : "s");
    return true;
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
}

}  // namespace fabricscope
