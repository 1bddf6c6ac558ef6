#include "launch/watchdog.h"

#include <cstdio>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"

namespace fabricscope {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

class Watchdog::WatchedCommunicator : public Communicator {
 public:
  WatchedCommunicator(std::unique_ptr<Communicator> inner, Slot& slot)
      : inner_(std::move(inner)), slot_(slot) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void Run(const CollectiveCall& call) override {
    last_call_ = std::string(SpecOf(call.collective).name) + " of " + std::to_string(call.count) +
                 " " + std::string(NameOf(call.type)) + " elements";
    Enter(last_call_);
    inner_->Run(call);
    slot_.started_ns = 0;
  }
  void Exchange(const PeerExchange& exchange) override {
    last_call_ = "exchange of " + std::to_string(exchange.count) + " " +
                 std::string(NameOf(exchange.type)) + " elements with rank " +
                 std::to_string(exchange.peer);
    Enter(last_call_);
    inner_->Exchange(exchange);
    slot_.started_ns = 0;
  }
  void Barrier() override {
    Enter("barrier");
    inner_->Barrier();
    slot_.started_ns = 0;
  }
  // GPU backends wait here, not in Run; their own -T abort comes first (the grace).
  void Sync() override {
    Enter("completion of the enqueued " + last_call_);
    inner_->Sync();
    slot_.started_ns = 0;
  }
  void GroupEnd() override {
    Enter("group launch");
    inner_->GroupEnd();
    slot_.started_ns = 0;
  }
  int devices() const override { return inner_->devices(); }
  void GroupStart() override { inner_->GroupStart(); }
  std::unique_ptr<DeviceBuffers> Allocate(size_t bytes) override { return inner_->Allocate(bytes); }
  void CopyToDevice(int device, void* dst, const void* src, size_t bytes) override {
    inner_->CopyToDevice(device, dst, src, bytes);
  }
  void CopyToHost(int device, void* dst, const void* src, size_t bytes) override {
    inner_->CopyToHost(device, dst, src, bytes);
  }
  std::unique_ptr<CapturedWork> Capture(const std::function<void()>& enqueue) override {
    return inner_->Capture(enqueue);
  }
  std::unique_ptr<DeviceTimer> MakeTimer(int marks) override { return inner_->MakeTimer(marks); }
  std::string Transport(int device) const override { return inner_->Transport(device); }

 private:
  void Enter(std::string what) { Watchdog::Enter(slot_, std::move(what)); }
  std::unique_ptr<Communicator> inner_;
  Slot& slot_;
  std::string last_call_;
};

Watchdog::Watchdog(std::chrono::milliseconds limit, std::string where, OnExpire on_expire)
    : limit_(limit),
      where_(std::move(where)),
      on_expire_(std::move(on_expire)),
      thread_([this] { Loop(); }) {}

Watchdog::~Watchdog() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

void Watchdog::Enter(Slot& slot, std::string what) {
  {
    const std::lock_guard lock(slot.what_mutex);
    slot.what = std::move(what);
  }
  slot.started_ns.store(NowNs(), std::memory_order_release);
}

std::unique_ptr<Communicator> Watchdog::Connect(
    int rank, std::string what, const std::function<std::unique_ptr<Communicator>()>& connect) {
  Slot* slot = nullptr;
  {
    const std::lock_guard lock(mutex_);
    slots_.push_back(std::make_unique<Slot>());
    slot = slots_.back().get();
    slot->rank = rank;
  }
  Enter(*slot, std::move(what));
  std::unique_ptr<Communicator> comm;
  try {
    comm = connect();
  } catch (...) {
    slot->started_ns = 0;
    throw;
  }
  slot->started_ns = 0;
  return std::make_unique<WatchedCommunicator>(std::move(comm), *slot);
}

void Watchdog::Loop() {
  const auto tick = std::max(std::chrono::milliseconds(50), limit_ / 10);
  std::unique_lock lock(mutex_);
  while (!stop_.wait_for(lock, tick, [this] { return stopping_; })) {
    const int64_t now = NowNs();
    for (const auto& slot : slots_) {
      const int64_t started = slot->started_ns.load(std::memory_order_acquire);
      if (started == 0 || now - started < limit_.count() * 1'000'000) continue;
      std::string what;
      {
        const std::lock_guard what_lock(slot->what_mutex);
        what = slot->what;
      }
      char message[1024];
      std::snprintf(message, sizeof message,
                    "rank %d on %s: %s did not complete within %.1f s (the -T timeout and its "
                    "grace); a peer is stuck or dead",
                    slot->rank, where_.c_str(), what.c_str(),
                    static_cast<double>(limit_.count()) / 1000.0);
      if (on_expire_) on_expire_(message);  // the caller's policy: the launcher's ends the process
      return;
    }
  }
}

}  // namespace fabricscope
