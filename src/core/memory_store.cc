// InMemoryStore: the rendezvous of ranks that are threads of one process.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/store.h"

namespace fabricscope {

std::vector<std::vector<char>> Store::MultiGet(const std::vector<std::string>& keys,
                                               std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  std::vector<std::vector<char>> values;
  values.reserve(keys.size());
  for (const std::string& key : keys) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    values.push_back(Get(key, std::max(left, std::chrono::milliseconds(0))));
  }
  return values;
}

void InMemoryStore::Set(const std::string& key, const std::vector<char>& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
  }
  // Every waiter checks its own key, so all of them must wake.
  changed_.notify_all();
}

std::vector<char> InMemoryStore::Get(const std::string& key, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  // A deadline, not a duration per wake-up: other keys' Sets must not extend the wait.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const bool found =
      changed_.wait_until(lock, deadline, [&] { return values_.find(key) != values_.end(); });
  if (!found) {
    throw MissingKeyError(
        fmt::format(
            "rendezvous: key '{}' did not appear within {} ms; a rank did not start or died", key,
            timeout.count()),
        key);
  }
  return values_.at(key);
}

}  // namespace fabricscope
