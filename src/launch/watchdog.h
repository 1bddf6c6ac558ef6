// Private: the -T watchdog. Backends time out their own waits where they can (Gloo, the
// store); MPI cannot, nor can NCCL's init, so every rank's connect and calls are watched,
// and one that outlives the timeout is handed to the caller with an error that names the
// rank, its host and the call. What follows is the caller's policy: the launcher ends the
// process rather than hanging the job.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fabricscope/backend.h"

namespace fabricscope {

class Watchdog {
 public:
  // Called once, from the thread that scans (the watchdog's own, or Scan's caller), with the
  // message of the first call that outlived the limit; the watchdog then stops watching.
  using OnExpire = std::function<void(const std::string& message)>;
  // Monotonic nanoseconds, always above 0; steady_clock unless a test injects virtual time.
  using NowNs = std::function<int64_t()>;

  // `limit`: how long one call may take, 0 for no limit (the calls are only tracked, for
  // LastCall); `where`: "host", for the message.
  Watchdog(std::chrono::milliseconds limit, std::string where, OnExpire on_expire, NowNs now = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Runs `connect` for job rank `rank` under watch (`what` names it in the message: a
  // library's init waits for every peer, NCCL's and MPI's without a timeout), then wraps the
  // communicator it returns so its calls are watched.
  std::unique_ptr<Communicator> Connect(
      int rank, std::string what, const std::function<std::unique_ptr<Communicator>()>& connect);

  // One look at the calls in flight, as the watchdog's thread takes every tick: calls
  // on_expire for the first one older than the limit. True once it has expired.
  bool Scan();

  // The call the lowest rank is in or last made, with its size ("all_reduce of 256 float
  // elements, 1024 bytes"), or empty before any: where a process was when it went silent.
  std::string LastCall() const;

 private:
  struct Slot {
    std::atomic<int64_t> started_ns{0};  // 0 = no call in flight
    mutable std::mutex what_mutex;
    std::string what;              // the call in flight
    std::atomic<size_t> bytes{0};  // of the last collective or exchange, 0 for none
    int rank = 0;
  };
  class WatchedCommunicator;

  // Marks a call as in flight in `slot` from now.
  void Enter(Slot& slot, std::string what) const;
  // Runs `call` as in flight in `slot`: a call that throws is over, not stuck.
  template <typename Call>
  void Watch(Slot& slot, std::string what, Call&& call) const;

  void Loop();
  // The expiry message for the call in flight in `slot`.
  std::string Describe(Slot& slot) const;

  const std::chrono::milliseconds limit_;
  const std::string where_;
  const OnExpire on_expire_;
  const NowNs now_;
  std::atomic<bool> expired_{false};
  mutable std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::thread thread_;
};

}  // namespace fabricscope
