#include "launch/liveness.h"

#include <fmt/format.h>

#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/tcp_store.h"

namespace fabricscope {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kAbortKey = "live/abort";
constexpr std::string_view kDone = "done";
constexpr std::string_view kGone = "gone\t";  // then "host\twhy": ended with an error
// A host that acknowledged on the connection within this is up. Keepalive probes a
// connection 5 s after it last received anything, and an answered probe starts that count
// again (tcp(7), the store's EnableKeepalive), so a live host's last answer is at most ~5 s
// old; a host gone since its last beat has not answered for the whole silence (10 s).
constexpr std::chrono::milliseconds kHostAnswers{7500};

std::string Key(int process) { return "live/" + std::to_string(process); }
std::string AckKey(int process) { return "live/ack/" + std::to_string(process); }

std::vector<char> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A beat's fields: "seq\thost\tphase".
struct BeatText {
  std::string host;
  std::string phase;
};

BeatText ParseBeat(const std::string& value) {
  const size_t a = value.find('\t');
  const size_t b = a == std::string::npos ? std::string::npos : value.find('\t', a + 1);
  if (b == std::string::npos) return {"?", "?"};
  return {value.substr(a + 1, b - a - 1), value.substr(b + 1)};
}

}  // namespace

Liveness::Liveness(LivenessOptions options, std::unique_ptr<Store> store, OnSilent on_silent)
    : options_(std::move(options)), store_(std::move(store)), on_silent_(std::move(on_silent)) {
  thread_ = std::thread([this] { Loop(); });
}

Liveness::~Liveness() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
  if (fired_) return;
  try {
    store_->Set(Key(options_.process), Bytes(std::string(kDone)));
  } catch (const std::exception&) {
    // The store is gone: the job is ending anyway, and nobody is left to watch this key.
  }
}

void Liveness::Loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const bool fired = Beat();
    lock.lock();
    if (fired) return;
    stop_.wait_for(lock, options_.interval, [this] { return stopping_; });
  }
}

void Liveness::AwaitAcks(int silent) {
  // Up to one silence: a loaded host's beat may come late, and one that never comes is
  // silent too; the bound from the fault to every exit stays under two silences and a beat.
  const auto deadline = Clock::now() + options_.silence;
  for (int p = 1; p < options_.processes; ++p) {
    if (p == silent) continue;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    try {
      if (store_->Get(Key(p), std::chrono::milliseconds(0)) == Bytes(std::string(kDone))) continue;
      store_->Get(AckKey(p), std::max(left, std::chrono::milliseconds(1)));
    } catch (const TimeoutError&) {
      // Silent too, or slow: the job ends regardless; it will find the store gone.
    }
  }
}

std::string Liveness::FindSilent(int* silent) {
  const auto now = Clock::now();
  for (int p = 1; p < options_.processes; ++p) {
    std::string value;
    try {
      const std::vector<char> v = store_->Get(Key(p), std::chrono::milliseconds(0));
      value.assign(v.begin(), v.end());
    } catch (const StoreTimeoutError&) {
      throw;  // the store itself went silent
    } catch (const TimeoutError&) {
      continue;  // not started yet: the rendezvous's own timeout covers one that never comes
    }
    if (value == kDone) continue;
    if (value.starts_with(kGone)) {
      const std::string rest = value.substr(kGone.size());
      const size_t tab = rest.find('\t');
      *silent = p;
      return fmt::format("process {} ({} on {}) ended with its own error: {}", p,
                         options_.ranks ? options_.ranks(p) : "", rest.substr(0, tab),
                         tab == std::string::npos ? "" : rest.substr(tab + 1));
    }
    auto [it, inserted] = seen_.try_emplace(p, Seen{value, now});
    if (inserted || it->second.value != value) {
      it->second = Seen{value, now};
      continue;
    }
    if (now - it->second.since < options_.silence) continue;
    const BeatText beat = ParseBeat(value);
    *silent = p;
    const double silent_s = std::chrono::duration<double>(now - it->second.since).count();
    const auto answered = options_.since_answered ? options_.since_answered(Key(p)) : std::nullopt;
    if (answered && *answered < kHostAnswers) {
      return fmt::format(
          "process {} ({} on {}) is not progressing during {}: no heartbeat for {:.0f} s while "
          "its host still answers on its connection (last {:.1f} s ago): the process is stopped "
          "(SIGSTOP, a debugger), swapped out or starved of CPU, not gone",
          p, options_.ranks ? options_.ranks(p) : "", beat.host, beat.phase, silent_s,
          std::chrono::duration<double>(*answered).count());
    }
    return fmt::format(
        "process {} ({} on {}) went silent during {}: no heartbeat for {:.0f} s; its host is "
        "down, cut off or black-holed (no FIN or RST came)",
        p, options_.ranks ? options_.ranks(p) : "", beat.host, beat.phase, silent_s);
  }
  return "";
}

std::string Liveness::ReadAbort() {
  std::vector<char> abort;
  try {
    abort = store_->Get(kAbortKey, std::chrono::milliseconds(0));
  } catch (const StoreTimeoutError&) {
    throw;
  } catch (const TimeoutError&) {
    return "";  // no abort: the job goes on
  }
  // Process 0 serves the store until every live process has read why the job ends. It may
  // close the store as soon as this ack is in it, before the store's reply to this Set comes
  // back; that lost reply must not turn the abort, read already, into "process 0 ended the
  // store" (the fault bed's process 2 named process 0 so, under load, on 2026-11-29).
  try {
    store_->Set(AckKey(options_.process), {'K'});
  } catch (const Error&) {
  }
  return {abort.begin(), abort.end()};
}

std::string Liveness::PublishedAbort() {
  try {
    return ReadAbort();
  } catch (const Error&) {
    return "";  // the store is gone: the caller's own error says what failed
  }
}

void Liveness::Leave(const std::string& why) {
  if (fired_) return;  // the heartbeat itself ends the job: it has said why
  try {
    if (options_.process == 0) {
      store_->Set(kAbortKey,
                  Bytes(fmt::format("process 0 ({} on {}) ended with its own error: {}",
                                    options_.ranks ? options_.ranks(0) : "", options_.host, why)));
    } else {
      store_->Set(Key(options_.process), Bytes(fmt::format("{}{}\t{}", kGone, options_.host, why)));
    }
  } catch (const std::exception&) {
    // The store is gone too: the peers find that out by themselves.
  }
}

bool Liveness::Beat() {
  if (fired_) return true;
  const std::string phase = options_.phase ? options_.phase() : "";
  std::string message;
  try {
    store_->Set(Key(options_.process),
                Bytes(fmt::format("{}\t{}\t{}", ++seq_, options_.host, phase)));
    message = ReadAbort();
    if (message.empty() && options_.process == 0) {
      int silent = 0;
      message = FindSilent(&silent);
      if (!message.empty()) {
        store_->Set(kAbortKey, Bytes(message));
        AwaitAcks(silent);
      }
    }
  } catch (const Error& e) {
    // The store is process 0's: losing it means process 0's host went silent or it died.
    const bool silent = dynamic_cast<const StoreTimeoutError*>(&e) != nullptr;
    message = fmt::format("process 0 ({}, the store at {}) {} while process {} on {} was in {}: {}",
                          options_.ranks ? options_.ranks(0) : "", options_.store_address,
                          silent ? "went silent" : "ended or closed the store", options_.process,
                          options_.host, phase, e.what());
  }
  if (message.empty()) return false;
  fired_ = true;
  if (on_silent_) on_silent_(message);
  return true;
}

}  // namespace fabricscope
