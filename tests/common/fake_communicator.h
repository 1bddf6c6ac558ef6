// Test double of the Communicator interface: ranks as threads of one process share a
// FakeWorld, which computes each collective's true result on host memory (so the engine's
// validation passes or fails for real) and plays a script: a typed error at call N on rank R,
// a corrupted result, a call that hangs until the test releases it, and calls that take
// virtual time on a FakeClock. A test decides which outcome happens; nothing depends on
// thread scheduling or the wall clock. Real backends are tested against real libraries
// elsewhere; this double pins what the engine, the launcher and the watchdog do with them.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/backend.h"
#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"
#include "fabricscope/options.h"

namespace fabricscope::test {

// Virtual time in nanoseconds, moved only by the test or by a scripted delay. Starts above 0:
// the watchdog reads a start of 0 as "no call in flight".
class FakeClock {
 public:
  int64_t Now() const { return ns_.load(); }
  void Advance(std::chrono::nanoseconds by) { ns_ += by.count(); }

 private:
  std::atomic<int64_t> ns_{1'000'000'000};
};

enum class FakeFaultKind {
  kFail,     // the call throws `code` with `message`; the peers then fail naming this rank
  kCorrupt,  // the call completes, then every bit of this rank's first result element flips
  kHang,     // the call never completes by itself: it waits until FakeWorld::Release
  kDelay,    // once every peer waits for it, the call takes `duration` of virtual time on the
             // world's clock (OnDelay's hook runs then), and completes
};

// One scripted event: on rank `rank`, its communication call number `step` (Run and Barrier
// calls, counted from 0 on each rank; FakeWorld::Trace lists them).
struct FakeFault {
  int rank = 0;
  int64_t step = 0;
  FakeFaultKind kind = FakeFaultKind::kFail;
  ErrorCode code = ErrorCode::kBackend;
  std::string message = "injected failure";
  std::chrono::nanoseconds duration{0};
};

// Throws the exception class of `code`, as a real backend converts its library's errors.
[[noreturn]] inline void ThrowTyped(ErrorCode code, const std::string& message) {
  ThrowWithMessage(Error(code, message), message);
}

// What the ranks of one fake communicator share: the script, the clock, the rendezvous.
class FakeWorld {
 public:
  explicit FakeWorld(int size, std::vector<FakeFault> script = {})
      : size_(size),
        script_(std::move(script)),
        inputs_(static_cast<size_t>(size)),
        traces_(static_cast<size_t>(size)) {}

  int size() const { return size_; }
  FakeClock& clock() { return clock_; }

  // Runs after a scripted delay has moved the clock, on the delayed rank's thread, while its
  // call is still in flight: where a test makes the watchdog look (Watchdog::Scan).
  void OnDelay(std::function<void()> hook) { on_delay_ = std::move(hook); }

  // Ends every call that waits (a hang, or peers waiting for it) with a BackendError, as
  // aborting a real communicator does.
  void Release() {
    const std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

  // Blocks until a scripted hang has been reached and every other rank waits in the same
  // step for it: the test's cue to move the clock.
  void AwaitHang() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return hanging_ && arrived_ == size_ - 1; });
  }

  // The calls rank `rank` made, one line each ("all_reduce 256 float", "barrier").
  std::vector<std::string> Trace(int rank) const {
    const std::lock_guard lock(mutex_);
    return traces_[static_cast<size_t>(rank)];
  }

  // A communicator of this world for `rank`.
  std::unique_ptr<Communicator> Connect(int rank);

 private:
  friend class FakeCommunicator;

  // The fault scripted for this call, if any; records the call in the rank's trace.
  const FakeFault* Begin(int rank, std::string line) {
    const std::lock_guard lock(mutex_);
    auto& trace = traces_[static_cast<size_t>(rank)];
    const auto step = static_cast<int64_t>(trace.size());
    trace.push_back(std::move(line));
    for (const FakeFault& f : script_) {
      if (f.rank == rank && f.step == step) return &f;
    }
    return nullptr;
  }

  // Plays `fault` before the call meets its peers; returns normally when the call goes on.
  void Play(const FakeFault& fault, int rank) {
    switch (fault.kind) {
      case FakeFaultKind::kFail: {
        const std::lock_guard lock(mutex_);
        failed_rank_ = rank;
        changed_.notify_all();
        ThrowTyped(fault.code, fault.message);
      }
      case FakeFaultKind::kHang: {
        std::unique_lock lock(mutex_);
        hanging_ = true;
        changed_.notify_all();
        changed_.wait(lock, [this] { return released_; });
        throw BackendError("fake: rank " + std::to_string(rank) +
                           "'s hung call was aborted (FakeWorld::Release)");
      }
      case FakeFaultKind::kDelay: {
        // The peers' calls are in flight before the time passes, as a slow rank's peers are.
        std::unique_lock lock(mutex_);
        changed_.wait(lock,
                      [this] { return arrived_ == size_ - 1 || failed_rank_ >= 0 || released_; });
        lock.unlock();
        clock_.Advance(fault.duration);
        if (on_delay_) on_delay_();
        return;
      }
      case FakeFaultKind::kCorrupt:
        return;  // after the result is in
    }
  }

  // Every rank of the world arrives before any leaves; throws when a peer failed or the test
  // released the world instead.
  void Meet(int rank, std::string_view what) {
    std::unique_lock lock(mutex_);
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.notify_all();  // a delayed rank and AwaitHang wait for the peers to arrive
    changed_.wait(lock,
                  [&] { return generation_ != generation || failed_rank_ >= 0 || released_; });
    if (generation_ != generation) return;
    if (failed_rank_ >= 0) {
      throw BackendError("fake: rank " + std::to_string(rank) + "'s " + std::string(what) +
                         " cannot complete: peer rank " + std::to_string(failed_rank_) + " failed");
    }
    throw BackendError("fake: rank " + std::to_string(rank) + "'s " + std::string(what) +
                       " was aborted (FakeWorld::Release)");
  }

  const int size_;
  const std::vector<FakeFault> script_;
  FakeClock clock_;
  std::function<void()> on_delay_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t generation_ = 0;
  int arrived_ = 0;
  int failed_rank_ = -1;
  bool released_ = false;
  bool hanging_ = false;
  std::vector<std::vector<std::byte>> inputs_;  // each rank's send buffer of the current call
  std::vector<std::vector<std::string>> traces_;
};

// One rank of a FakeWorld: host memory, every call complete on return.
class FakeCommunicator final : public Communicator {
 public:
  FakeCommunicator(FakeWorld& world, int rank) : world_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }

  void Run(const CollectiveCall& call) override {
    const std::string what = std::string(SpecOf(call.collective).name) + " " +
                             std::to_string(call.count) + " " + std::string(NameOf(call.type));
    const FakeFault* fault = world_.Begin(rank_, what);
    if (fault != nullptr) world_.Play(*fault, rank_);
    const size_t n = static_cast<size_t>(size());
    const size_t e = SizeOf(call.type);
    const size_t chunk = call.count * e;
    // Each rank's send buffer is copied before any rank writes its result: in-place calls
    // share memory between the two.
    world_.inputs_[static_cast<size_t>(rank_)].assign(
        static_cast<const std::byte*>(call.send),
        static_cast<const std::byte*>(call.send) + chunk * SendChunks(call.collective, n));
    world_.Meet(rank_, what);
    Compute(call, n, chunk);
    if (fault != nullptr && fault->kind == FakeFaultKind::kCorrupt && chunk > 0) {
      auto* first = static_cast<std::byte*>(call.recv);
      for (size_t b = 0; b < e; ++b) first[b] = ~first[b];
    }
    world_.Meet(rank_, what);  // nobody overwrites the inputs while a peer still reads them
  }

  void Barrier() override {
    const FakeFault* fault = world_.Begin(rank_, "barrier");
    if (fault != nullptr) world_.Play(*fault, rank_);
    world_.Meet(rank_, "barrier");
  }

 private:
  static size_t SendChunks(Collective c, size_t n) {
    return c == Collective::kReduceScatter || c == Collective::kScatter ||
                   c == Collective::kAlltoAll
               ? n
               : 1;
  }

  const std::byte* Input(size_t rank, size_t offset = 0) const {
    return world_.inputs_[rank].data() + offset;
  }

  // recv = the reduction over the ranks of each input's chunk at `offset`.
  void ReduceChunks(const CollectiveCall& call, size_t n, size_t chunk, size_t offset) const {
    std::memcpy(call.recv, Input(0, offset), chunk);
    for (size_t r = 1; r < n; ++r) {
      ReduceInto(call.type, call.op, call.recv, Input(r, offset), call.count);
    }
    if (call.op == ReduceOp::kAvg) FinishAverage(call.type, call.recv, call.count, size());
  }

  void Compute(const CollectiveCall& call, size_t n, size_t chunk) const {
    if (chunk == 0) return;
    auto* recv = static_cast<std::byte*>(call.recv);
    const auto me = static_cast<size_t>(rank_);
    const auto root = static_cast<size_t>(call.root);
    switch (call.collective) {
      case Collective::kAllReduce:
        ReduceChunks(call, n, chunk, 0);
        break;
      case Collective::kReduce:
        if (me == root) ReduceChunks(call, n, chunk, 0);
        break;
      case Collective::kReduceScatter:
        ReduceChunks(call, n, chunk, me * chunk);
        break;
      case Collective::kBroadcast:
        std::memcpy(recv, Input(root), chunk);
        break;
      case Collective::kScatter:
        std::memcpy(recv, Input(root, me * chunk), chunk);
        break;
      case Collective::kSendRecv:
        std::memcpy(recv, Input((me + n - 1) % n), chunk);
        break;
      case Collective::kAllGather:
      case Collective::kGather:
        if (call.collective == Collective::kGather && me != root) break;
        for (size_t r = 0; r < n; ++r) std::memcpy(recv + r * chunk, Input(r), chunk);
        break;
      case Collective::kAlltoAll:
        for (size_t r = 0; r < n; ++r) std::memcpy(recv + r * chunk, Input(r, me * chunk), chunk);
        break;
    }
  }

  FakeWorld& world_;
  const int rank_;
};

inline std::unique_ptr<Communicator> FakeWorld::Connect(int rank) {
  return std::make_unique<FakeCommunicator>(*this, rank);
}

// A Backend whose communicators are one FakeWorld's ranks: what the launcher runs on.
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(FakeWorld& world) : world_(world), capabilities_(AllCapabilities()) {}
  std::string_view name() const override { return "fake"; }
  std::string version() const override { return "test double"; }
  const BackendCapabilities& capabilities() const override { return capabilities_; }
  std::unique_ptr<Communicator> Connect(const ConnectOptions& options) override {
    if (options.size != world_.size()) {
      throw UsageError("fake backend: the job has " + std::to_string(options.size) +
                       " ranks, the FakeWorld " + std::to_string(world_.size()));
    }
    return world_.Connect(options.rank);
  }

 private:
  FakeWorld& world_;
  BackendCapabilities capabilities_;
};

// One size of `collective`, 1024 bytes, on `ranks` thread ranks: three timed iterations
// after one warm-up, validated once. Each rank's calls on a FakeCommunicator are then, by
// step: 0 warm-up (the one size from -b to -e by doubling), then out-of-place: 1 untimed,
// 2 barrier, 3-5 the three timed iterations, 6 all_gather of the times, 7 validation,
// 8 all_reduce of the wrong counts; then in-place: 9 untimed, 10 barrier, 11-13 timed, 14,
// 15, 16.
inline RunOptions OneSize(Collective collective = Collective::kAllReduce, int ranks = 1) {
  RunOptions o;
  o.collectives = {collective};
  o.nthreads = ranks;
  o.min_bytes = o.max_bytes = 1024;
  o.iters = 3;
  o.warmup_iters = 1;
  o.check = 1;
  o.memory_limit_bytes = size_t{1} << 30;
  return o;
}
constexpr int64_t kOutOfPlaceBarrier = 2;
constexpr int64_t kThirdTimedIteration = 5;
constexpr int64_t kOutOfPlaceValidation = 7;
constexpr int64_t kInPlaceBarrier = 10;
constexpr int64_t kInPlaceValidation = 15;
constexpr int64_t kStepsPerSize = 17;

}  // namespace fabricscope::test
