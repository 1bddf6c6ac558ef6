#include "launch/watchdog.h"

#include <cstdio>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"

namespace fabricscope {
namespace {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

class Watchdog::WatchedCommunicator : public Communicator {
 public:
  WatchedCommunicator(std::unique_ptr<Communicator> inner, const Watchdog& watchdog, Slot& slot)
      : inner_(std::move(inner)), watchdog_(watchdog), slot_(slot) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void Run(const CollectiveCall& call) override {
    last_call_ = std::string(SpecOf(call.collective).name) + " of " + std::to_string(call.count) +
                 " " + std::string(NameOf(call.type)) + " elements";
    slot_.bytes = call.count * SizeOf(call.type);
    watchdog_.Watch(slot_, last_call_, [&] { inner_->Run(call); });
  }
  void Exchange(const PeerExchange& exchange) override {
    last_call_ = "exchange of " + std::to_string(exchange.count) + " " +
                 std::string(NameOf(exchange.type)) + " elements with rank " +
                 std::to_string(exchange.peer);
    slot_.bytes = exchange.count * SizeOf(exchange.type);
    watchdog_.Watch(slot_, last_call_, [&] { inner_->Exchange(exchange); });
  }
  void Barrier() override {
    watchdog_.Watch(slot_, "barrier", [&] { inner_->Barrier(); });
  }
  // GPU backends wait here, not in Run; their own -T abort comes first (the grace).
  void Sync() override {
    watchdog_.Watch(slot_, "completion of the enqueued " + last_call_, [&] { inner_->Sync(); });
  }
  void GroupEnd() override {
    watchdog_.Watch(slot_, "group launch", [&] { inner_->GroupEnd(); });
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
  std::unique_ptr<Communicator> inner_;
  const Watchdog& watchdog_;
  Slot& slot_;
  std::string last_call_;
};

Watchdog::Watchdog(std::chrono::milliseconds limit, std::string where, OnExpire on_expire,
                   NowNs now)
    : limit_(limit),
      where_(std::move(where)),
      on_expire_(std::move(on_expire)),
      now_(now ? std::move(now) : NowNs(SteadyNowNs)) {
  if (limit_.count() > 0) thread_ = std::thread([this] { Loop(); });
}

Watchdog::~Watchdog() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Watchdog::LastCall() const {
  const std::lock_guard lock(mutex_);
  const Slot* lowest = nullptr;
  for (const auto& slot : slots_) {
    if (lowest == nullptr || slot->rank < lowest->rank) lowest = slot.get();
  }
  if (lowest == nullptr) return "";
  std::string what;
  {
    const std::lock_guard what_lock(lowest->what_mutex);
    what = lowest->what;
  }
  const size_t bytes = lowest->bytes;
  if (bytes > 0) what += ", " + std::to_string(bytes) + " bytes";
  return what;
}

void Watchdog::Enter(Slot& slot, std::string what) const {
  {
    const std::lock_guard lock(slot.what_mutex);
    slot.what = std::move(what);
  }
  slot.started_ns.store(now_(), std::memory_order_release);
}

template <typename Call>
void Watchdog::Watch(Slot& slot, std::string what, Call&& call) const {
  Enter(slot, std::move(what));
  try {
    std::forward<Call>(call)();
  } catch (...) {
    // A call that failed has ended: left marked, the wait for the peers' reports that
    // follows an error (up to -T under the env launcher) would be taken for this call
    // being stuck, and the watchdog would end the process in place of the error.
    slot.started_ns = 0;
    throw;
  }
  slot.started_ns = 0;
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
  std::unique_ptr<Communicator> comm;
  Watch(*slot, std::move(what), [&] { comm = connect(); });
  return std::make_unique<WatchedCommunicator>(std::move(comm), *this, *slot);
}

void Watchdog::Loop() {
  const auto tick = std::max(std::chrono::milliseconds(50), limit_ / 10);
  std::unique_lock lock(mutex_);
  while (!stop_.wait_for(lock, tick, [this] { return stopping_; })) {
    lock.unlock();
    const bool expired = Scan();
    lock.lock();
    if (expired) return;
  }
}

std::string Watchdog::Describe(Slot& slot) const {
  std::string what;
  {
    const std::lock_guard lock(slot.what_mutex);
    what = slot.what;
  }
  char text[1024];
  std::snprintf(text, sizeof text,
                "rank %d on %s: %s did not complete within %.1f s (the -T timeout and its grace); "
                "a peer is stuck or dead",
                slot.rank, where_.c_str(), what.c_str(),
                static_cast<double>(limit_.count()) / 1000.0);
  return text;
}

bool Watchdog::Scan() {
  if (expired_) return true;
  if (limit_.count() <= 0) return false;  // tracking only
  std::string message;
  {
    const std::lock_guard lock(mutex_);
    const int64_t now = now_();
    // Of the calls over the limit, the lowest rank's: the same answer whichever rank thread
    // registered first.
    Slot* stuck = nullptr;
    for (const auto& slot : slots_) {
      const int64_t started = slot->started_ns.load(std::memory_order_acquire);
      if (started == 0 || now - started < limit_.count() * 1'000'000) continue;
      if (stuck == nullptr || slot->rank < stuck->rank) stuck = slot.get();
    }
    if (stuck != nullptr) message = Describe(*stuck);
  }
  if (message.empty()) return false;
  if (expired_.exchange(true)) return true;
  if (on_expire_) on_expire_(message);  // the caller's policy: the launcher's ends the process
  return true;
}

}  // namespace fabricscope
