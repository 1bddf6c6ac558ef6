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
  // Called once, from the watchdog's own thread, with the message of the first call that
  // outlived the limit; the watchdog then stops watching.
  using OnExpire = std::function<void(const std::string& message)>;

  // `limit`: how long one call may take; `where`: "host", for the message.
  Watchdog(std::chrono::milliseconds limit, std::string where, OnExpire on_expire);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Runs `connect` for job rank `rank` under watch (`what` names it in the message: a
  // library's init waits for every peer, NCCL's and MPI's without a timeout), then wraps the
  // communicator it returns so its calls are watched.
  std::unique_ptr<Communicator> Connect(
      int rank, std::string what, const std::function<std::unique_ptr<Communicator>()>& connect);

 private:
  struct Slot {
    std::atomic<int64_t> started_ns{0};  // 0 = no call in flight
    std::mutex what_mutex;
    std::string what;  // the call in flight
    int rank = 0;
  };
  class WatchedCommunicator;

  // Marks a call as in flight in `slot` from now.
  static void Enter(Slot& slot, std::string what);

  void Loop();

  const std::chrono::milliseconds limit_;
  const std::string where_;
  const OnExpire on_expire_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::thread thread_;
};

}  // namespace fabricscope
