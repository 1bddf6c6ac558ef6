#include "launch/fatal_paths.h"

#include <pthread.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

namespace fabricscope {
namespace {

// The run whose terminate handler is installed: the one slot std::set_terminate leaves.
std::atomic<FatalPaths*> g_current{
    nullptr};  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

sigset_t Stops() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// What the exception in flight says; empty when there is none (std::terminate called for
// another reason).
std::string CurrentException() {
  const std::exception_ptr e = std::current_exception();
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace

FatalPaths::FatalPaths(OnFatal on_fatal) : on_fatal_(std::move(on_fatal)) {
  // A run inside another's (a test's job in a job) leaves both paths to the outer one.
  FatalPaths* none = nullptr;
  active_ = g_current.compare_exchange_strong(none, this);
  if (!active_) return;
  const sigset_t stops = Stops();
  pthread_sigmask(SIG_BLOCK, &stops, &old_mask_);
  old_terminate_ = std::set_terminate(&FatalPaths::OnTerminate);
  thread_ = std::thread([this] { Watch(); });
}

FatalPaths::~FatalPaths() {
  if (!active_) return;
  stopping_ = true;
  thread_.join();
  std::set_terminate(old_terminate_);
  g_current.store(nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

std::string FatalPaths::SignalName(int signal) {
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGINT) return "SIGINT";
  return "signal " + std::to_string(signal);
}

void FatalPaths::Watch() {
  const sigset_t stops = Stops();
  const timespec tick{0, 100'000'000L};  // how soon the destructor's stop is seen
  while (!stopping_) {
    const int signal = sigtimedwait(&stops, nullptr, &tick);
    if (signal <= 0 || fired_.exchange(true)) continue;
    on_fatal_(signal, "");
  }
}

void FatalPaths::OnTerminate() {
  FatalPaths* self = g_current.load();
  const std::string what = CurrentException();
  if (self == nullptr) std::abort();
  if (!self->fired_.exchange(true)) self->on_fatal_(0, what);
  // Another thread is ending the process with the first reason: wait for it to.
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace fabricscope
