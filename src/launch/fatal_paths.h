// Private: the ends of a run that no rank thread sees coming, taken through the launcher's one
// failure path (the rows so far kept, the report ended with the reason, a named exit code):
// - SIGTERM and SIGINT (what Slurm, Kubernetes and a user's ^C send). They are blocked in
//   every thread of the run and taken by a thread of their own with sigtimedwait, so no
//   handler runs in signal context and no library thread is interrupted.
// - An exception thrown on a thread the run does not own: Gloo's transport thread enforces
//   its invariants with gloo::EnforceNotMet (a peer that sent more than was posted), which no
//   try block of ours can catch, and std::terminate would abort the process with a core dump.
//   The terminate handler names it instead.
// One FatalPaths exists per run; the terminate handler is process-wide by nature, so the
// instance registers itself while it lives and the handler reaches it through that one slot.
#pragma once

#include <signal.h>

#include <atomic>
#include <exception>
#include <functional>
#include <string>
#include <thread>

namespace fabricscope {

class FatalPaths {
 public:
  // Called once, from the signal thread or the terminating one; must not return (it ends the
  // process). `signal` is SIGTERM or SIGINT, or 0 for an exception, which `what` describes.
  using OnFatal = std::function<void(int signal, const std::string& what)>;

  // Blocks SIGTERM and SIGINT in the calling thread, so every thread it starts afterwards
  // inherits the mask: construct before any thread of the run exists.
  explicit FatalPaths(OnFatal on_fatal);
  // Stops the signal thread and restores the mask and the previous terminate handler.
  ~FatalPaths();
  FatalPaths(const FatalPaths&) = delete;
  FatalPaths& operator=(const FatalPaths&) = delete;

  // "SIGTERM", "SIGINT".
  static std::string SignalName(int signal);

 private:
  static void OnTerminate();
  void Watch();

  OnFatal on_fatal_;
  bool active_ = false;  // this one holds the slot (no other run is active in the process)
  sigset_t old_mask_{};
  std::terminate_handler old_terminate_ = nullptr;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

}  // namespace fabricscope
