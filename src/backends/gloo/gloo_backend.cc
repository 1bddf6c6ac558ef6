// The Gloo backend: every fabricscope collective on host memory over Gloo's TCP transport.
#include "backends/gloo/gloo_backend.h"

#include <fmt/format.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/config.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"
#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = uint8_t;

// Slot prefixes for the collectives written here over unbound buffers. Gloo's own use
// 0x01..0x08; keeping ours apart means a message can never be matched by the wrong kind.
constexpr uint8_t kReduceScatterSlotPrefix = 0x20;
constexpr uint8_t kSendRecvSlotPrefix = 0x21;
constexpr uint8_t kExchangeSlotPrefix = 0x22;

// Gloo's rendezvous sees our Store through this, under the communicator's key prefix.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  StoreAdapter(fabricscope::Store& store, std::string prefix, std::chrono::milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.Set(Key(key), data);
  }

  // Gloo only gets after a wait, but our Store needs a bound for every blocking read.
  std::vector<char> get(const std::string& key) override { return store_.Get(Key(key), timeout_); }

  // Both overloads are bounded: a rank that never starts must fail the run, not hang it.
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    // One deadline for the whole set, so n keys cannot stretch the wait to n timeouts.
    const auto deadline = Clock::now() + timeout;
    for (const std::string& key : keys) {
      // Rounded up, so a single key gets the whole timeout and the message says so.
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      store_.Get(Key(key), std::max(left, std::chrono::milliseconds(0)));
    }
  }

 private:
  std::string Key(const std::string& key) const { return prefix_ + "/" + key; }

  fabricscope::Store& store_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
};

// Runs f with a value of an unsigned type as wide as one element. Gloo's templates only use
// the type for its size (to cut segments on element boundaries); the arithmetic is ours.
template <typename F>
void WithElementType(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      f(uint8_t{});
      return;
    case 2:
      f(uint16_t{});
      return;
    case 4:
      f(uint32_t{});
      return;
    case 8:
      f(uint64_t{});
      return;
    default:
      throw BackendError(fmt::format("no Gloo element type of {} bytes", element_size));
  }
}

// Gloo reads inputs but takes them as non-const pointers.
template <typename T>
T* Mutable(const void* p) {
  return static_cast<T*>(const_cast<void*>(p));
}

bool Overlaps(const void* a, const void* b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto y = reinterpret_cast<uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

gloo::AllreduceOptions::Func ReduceFunction(DataType type, ReduceOp op) {
  const ReduceOp combine = CombiningOp(op);
  return [type, combine](void* out, const void* a, const void* b, size_t n) {
    Reduce3(type, combine, out, a, b, n);
  };
}

bool MentionsTimeout(std::string_view what) {
  const std::string lower = Lower(what);
  return lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos;
}

// Converts whatever is in flight into a typed fabricscope error that starts with `where`.
// Called from inside a catch block; our own errors keep their kind.
[[noreturn]] void RethrowAs(const std::string& where) {
  try {
    throw;
  } catch (const TimeoutError& e) {
    throw TimeoutError(where + e.what());
  } catch (const UsageError& e) {
    throw UsageError(where + e.what());
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(where + e.what());
  } catch (const SystemError& e) {
    throw SystemError(where + e.what());
  } catch (const Error& e) {
    throw BackendError(where + e.what());
  } catch (const gloo::IoException& e) {
    // Gloo reports its own deadline ("Timed out waiting ...", "Connect timeout") and the
    // pair closures that follow one as IoException; the rest are broken connections.
    if (MentionsTimeout(e.what())) throw TimeoutError(where + e.what());
    throw BackendError(where + e.what());
  } catch (const gloo::EnforceNotMet& e) {
    throw BackendError(where + e.what());
  } catch (const std::bad_alloc&) {
    throw SystemError(where + "out of host memory");
  } catch (const std::exception& e) {
    if (MentionsTimeout(e.what())) throw TimeoutError(where + e.what());
    throw BackendError(where + e.what());
  }
}

void CheckCompleted(bool completed, std::string_view what) {
  if (!completed) throw BackendError(fmt::format("{} was aborted", what));
}

// One rank's Gloo context plus the scratch memory that aliasing calls need.
class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::Context> context, std::chrono::milliseconds timeout)
      : context_(std::move(context)), timeout_(timeout) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }

  void Run(const CollectiveCall& call) override {
    // NCCL returns at once for count 0, and Gloo's checks reject empty buffers.
    if (call.count == 0) return;
    try {
      if (IsRooted(call.collective) && (call.root < 0 || call.root >= size())) {
        throw UsageError(fmt::format("root {} is not a rank of {}", call.root, size()));
      }
      if (size() == 1) {
        RunAlone(call);
        return;
      }
      switch (call.collective) {
        case Collective::kAllReduce:
          AllReduce(call);
          break;
        case Collective::kAllGather:
          AllGather(call);
          break;
        case Collective::kReduceScatter:
          ReduceScatter(call);
          break;
        case Collective::kBroadcast:
          Broadcast(call);
          break;
        case Collective::kReduce:
          Reduce(call);
          break;
        case Collective::kAlltoAll:
          AlltoAll(call);
          break;
        case Collective::kSendRecv:
          SendRecv(call);
          break;
        case Collective::kGather:
          Gather(call);
          break;
        case Collective::kScatter:
          Scatter(call);
          break;
      }
    } catch (...) {
      RethrowAs(fmt::format("gloo {} (rank {} of {}, {} elements): ", SpecOf(call.collective).name,
                            rank(), size(), call.count));
    }
  }

  // Over the pair of the context that connectFullMesh made at Connect: nothing is set up
  // per exchange but two unbound buffers.
  void Exchange(const PeerExchange& x) override {
    const size_t bytes = x.count * SizeOf(x.type);
    try {
      if (x.peer < 0 || x.peer >= size() || x.peer == rank()) {
        throw UsageError(fmt::format("peer {} is not another rank of {}", x.peer, size()));
      }
      if (bytes == 0) return;
      SendAndReceive(x.send, x.recv, bytes, x.peer, x.peer, kExchangeSlotPrefix);
    } catch (...) {
      RethrowAs(fmt::format("gloo exchange (rank {} with {} of {}, {} bytes): ", rank(), x.peer,
                            size(), bytes));
    }
  }

  void Barrier() override {
    if (size() == 1) return;
    try {
      gloo::BarrierOptions opts(context_);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    } catch (...) {
      RethrowAs(fmt::format("gloo barrier (rank {} of {}): ", rank(), size()));
    }
  }

 private:
  static bool IsRooted(Collective c) {
    return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
           c == Collective::kScatter;
  }

  // sendrecv takes an op in nccl-tests but only moves data.
  static bool Reduces(Collective c) {
    return c == Collective::kAllReduce || c == Collective::kReduce ||
           c == Collective::kReduceScatter;
  }

  // Grows only: after the first call of the largest size, the hot path never allocates.
  Bytes* Scratch(size_t bytes) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
  }

  // Gloo's ring algorithms need a peer; with one rank every collective is a local copy, as
  // in NCCL.
  void RunAlone(const CollectiveCall& call) {
    const size_t bytes = call.count * SizeOf(call.type);
    if (call.send != call.recv) std::memmove(call.recv, call.send, bytes);
    if (Reduces(call.collective) && call.op == ReduceOp::kAvg) {
      FinishAverage(call.type, call.recv, call.count, 1);
    }
  }

  void AllReduce(const CollectiveCall& call) {
    WithElementType(SizeOf(call.type), [&](auto element) {
      using T = decltype(element);
      gloo::AllreduceOptions opts(context_);
      // Without an input Gloo reduces the output in place.
      if (call.send != call.recv) opts.setInput(Mutable<T>(call.send), call.count);
      opts.setOutput(static_cast<T*>(call.recv), call.count);
      opts.setReduceFunction(ReduceFunction(call.type, call.op));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
    if (call.op == ReduceOp::kAvg) FinishAverage(call.type, call.recv, call.count, size());
  }

  void AllGather(const CollectiveCall& call) {
    const size_t chunk = call.count * SizeOf(call.type);
    auto* recv = static_cast<Bytes*>(call.recv);
    gloo::AllgatherOptions opts(context_);
    // In place (send = recv + rank * count) Gloo takes no input: the chunk is already there.
    if (call.send != recv + static_cast<size_t>(rank()) * chunk) {
      opts.setInput(Mutable<Bytes>(call.send), chunk);
    }
    opts.setOutput(recv, chunk * static_cast<size_t>(size()));
    opts.setTimeout(timeout_);
    gloo::allgather(opts);
  }

  // Gloo 0.5 has no options-style reduce-scatter, so this is a ring over unbound buffers:
  // in n-1 steps each rank passes a partial sum of one chunk to rank+1 and folds its own
  // contribution into the partial it receives from rank-1; after the last step rank r holds
  // chunk r. The send buffer is only read, so the in-place layout (recv = send + r*count)
  // is safe: chunk r is read for the last time by the very Reduce3 that writes it.
  void ReduceScatter(const CollectiveCall& call) {
    const int n = size();
    const int r = rank();
    const size_t chunk = call.count * SizeOf(call.type);
    const auto* send = static_cast<const Bytes*>(call.send);
    auto* recv = static_cast<Bytes*>(call.recv);
    Bytes* incoming = Scratch(2 * chunk);
    Bytes* partial = incoming + chunk;

    auto send_buffer =
        context_->createUnboundBuffer(Mutable<Bytes>(send), chunk * static_cast<size_t>(n));
    auto partial_buffer = context_->createUnboundBuffer(partial, chunk);
    auto incoming_buffer = context_->createUnboundBuffer(incoming, chunk);
    const uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, 0);
    const int next = (r + 1) % n;
    const int prev = (r + n - 1) % n;
    const ReduceOp combine = CombiningOp(call.op);

    for (int step = 0; step < n - 1; ++step) {
      const auto send_chunk = static_cast<size_t>(((r - step - 1) % n + n) % n);
      const auto fold_chunk = static_cast<size_t>(((r - step - 2) % n + n) % n);
      incoming_buffer->recv(prev, slot);
      // The first step sends this rank's own data straight from the send buffer.
      gloo::transport::UnboundBuffer* outgoing =
          step == 0 ? send_buffer.get() : partial_buffer.get();
      if (step == 0) {
        send_buffer->send(next, slot, send_chunk * chunk, chunk);
      } else {
        partial_buffer->send(next, slot);
      }
      CheckCompleted(incoming_buffer->waitRecv(timeout_), "receive");
      // The partial must be on its way before it is overwritten below.
      CheckCompleted(outgoing->waitSend(timeout_), "send");
      Bytes* out = step == n - 2 ? recv : partial;
      Reduce3(call.type, combine, out, incoming, send + fold_chunk * chunk, call.count);
    }
    if (call.op == ReduceOp::kAvg) FinishAverage(call.type, call.recv, call.count, n);
  }

  void Broadcast(const CollectiveCall& call) {
    const size_t bytes = call.count * SizeOf(call.type);
    gloo::BroadcastOptions opts(context_);
    // Gloo rejects an input on non-roots, and on the root none means in place.
    if (rank() == call.root && call.send != call.recv) {
      opts.setInput(Mutable<Bytes>(call.send), bytes);
    }
    opts.setOutput(static_cast<Bytes*>(call.recv), bytes);
    opts.setRoot(call.root);
    opts.setTimeout(timeout_);
    gloo::broadcast(opts);
  }

  // Gloo's reduce is a ring reduce-scatter then a gather to the root: every rank's recv
  // buffer is used as working space, and only the root's holds the result (as in NCCL,
  // where non-root recv buffers are not meaningful).
  void Reduce(const CollectiveCall& call) {
    WithElementType(SizeOf(call.type), [&](auto element) {
      using T = decltype(element);
      gloo::ReduceOptions opts(context_);
      if (call.send != call.recv) opts.setInput(Mutable<T>(call.send), call.count);
      opts.setOutput(static_cast<T*>(call.recv), call.count);
      opts.setRoot(call.root);
      opts.setReduceFunction(ReduceFunction(call.type, call.op));
      opts.setTimeout(timeout_);
      gloo::reduce(opts);
    });
    if (call.op == ReduceOp::kAvg && rank() == call.root) {
      FinishAverage(call.type, call.recv, call.count, size());
    }
  }

  void AlltoAll(const CollectiveCall& call) {
    const size_t bytes = call.count * SizeOf(call.type) * static_cast<size_t>(size());
    const void* send = call.send;
    // Gloo sends chunk j to rank j while receiving rank j's chunk into the same place; with
    // one buffer a receive could land before the send has left.
    if (Overlaps(call.send, call.recv, bytes)) {
      Bytes* copy = Scratch(bytes);
      std::memcpy(copy, call.send, bytes);
      send = copy;
    }
    gloo::AlltoallOptions opts(context_);
    opts.setInput(Mutable<Bytes>(send), bytes);
    opts.setOutput(static_cast<Bytes*>(call.recv), bytes);
    opts.setTimeout(timeout_);
    gloo::alltoall(opts);
  }

  void SendRecv(const CollectiveCall& call) {
    const size_t bytes = call.count * SizeOf(call.type);
    SendAndReceive(call.send, call.recv, bytes, (rank() + 1) % size(),
                   (rank() + size() - 1) % size(), kSendRecvSlotPrefix);
  }

  // Sends to one rank and receives from another (or the same) on unbound buffers.
  void SendAndReceive(const void* send, void* recv, size_t bytes, int to, int from,
                      uint8_t slot_prefix) {
    // In place, the incoming data would overwrite ours before it has been sent.
    if (Overlaps(send, recv, bytes)) {
      Bytes* copy = Scratch(bytes);
      std::memcpy(copy, send, bytes);
      send = copy;
    }
    auto send_buffer = context_->createUnboundBuffer(Mutable<Bytes>(send), bytes);
    auto recv_buffer = context_->createUnboundBuffer(recv, bytes);
    const uint64_t slot = gloo::Slot::build(slot_prefix, 0);
    recv_buffer->recv(from, slot);
    send_buffer->send(to, slot);
    CheckCompleted(recv_buffer->waitRecv(timeout_), "receive");
    CheckCompleted(send_buffer->waitSend(timeout_), "send");
  }

  // In place on the root, send = recv + root * count and Gloo's local copy has source equal
  // to destination, which every memcpy handles (compilers emit such copies themselves).
  void Gather(const CollectiveCall& call) {
    const size_t chunk = call.count * SizeOf(call.type);
    gloo::GatherOptions opts(context_);
    opts.setInput(Mutable<Bytes>(call.send), chunk);
    // Gloo needs (and checks) the output only on the root.
    if (rank() == call.root) {
      opts.setOutput(static_cast<Bytes*>(call.recv), chunk * static_cast<size_t>(size()));
    }
    opts.setRoot(call.root);
    opts.setTimeout(timeout_);
    gloo::gather(opts);
  }

  // The in-place root is as for Gather: recv is the root's own input chunk.
  void Scatter(const CollectiveCall& call) {
    const size_t chunk = call.count * SizeOf(call.type);
    gloo::ScatterOptions opts(context_);
    if (rank() == call.root) {
      scatter_inputs_.clear();
      auto* send = Mutable<Bytes>(call.send);
      for (int i = 0; i < size(); ++i) {
        scatter_inputs_.push_back(send + static_cast<size_t>(i) * chunk);
      }
      opts.setInputs(scatter_inputs_.data(), scatter_inputs_.size(), chunk);
    }
    opts.setOutput(static_cast<Bytes*>(call.recv), chunk);
    opts.setRoot(call.root);
    opts.setTimeout(timeout_);
    gloo::scatter(opts);
  }

  std::shared_ptr<gloo::Context> context_;
  const std::chrono::milliseconds timeout_;
  std::vector<Bytes> scratch_;
  std::vector<Bytes*> scatter_inputs_;  // reused: one pointer per rank
};

class GlooBackend final : public Backend {
 public:
  GlooBackend() : capabilities_(Capabilities()) {}

  std::string_view name() const override { return "gloo"; }

  std::string version() const override {
    return fmt::format("{}.{}.{}", GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH);
  }

  const BackendCapabilities& capabilities() const override { return capabilities_; }

  std::unique_ptr<Communicator> Connect(const ConnectOptions& options) override {
    const std::string where =
        fmt::format("gloo connect (rank {} of {}): ", options.rank, options.size);
    if (options.store == nullptr) throw UsageError(where + "no rendezvous store");
    if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
      throw UsageError(where + "rank must be in [0, size)");
    }
    if (options.timeout.count() <= 0) throw UsageError(where + "timeout must be positive");
    try {
      gloo::transport::tcp::attr attr;
      if (!options.network_interface.empty()) {
        attr.iface = options.network_interface;
      } else {
        attr.hostname = options.hostname;
      }
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
      // Gloo waits five context timeouts for its pairs to connect; a fifth during the
      // connect keeps the whole wait within the timeout the user gave (-T).
      context->setTimeout(std::max(std::chrono::milliseconds(1), options.timeout / 5));
      StoreAdapter store(*options.store, options.prefix, options.timeout);
      context->connectFullMesh(store, device);
      context->setTimeout(options.timeout);
      return std::make_unique<GlooCommunicator>(std::move(context), options.timeout);
    } catch (...) {
      RethrowAs(where);
    }
  }

 private:
  static BackendCapabilities Capabilities() {
    BackendCapabilities c = AllCapabilities();
    c.point_to_point = true;
    return c;
  }

  const BackendCapabilities capabilities_;
};

}  // namespace

std::unique_ptr<Backend> MakeGlooBackend() { return std::make_unique<GlooBackend>(); }

}  // namespace fabricscope
