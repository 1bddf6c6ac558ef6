// The key-value store ranks meet through (rendezvous), independent of any backend.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fabricscope/error.h"

namespace fabricscope {

// A key that did not appear within its timeout: what Get and MultiGet throw, with the key, so
// that a caller reading many keys can say whose it was.
class MissingKeyError : public TimeoutError {
 public:
  MissingKeyError(const std::string& message, std::string key)
      : TimeoutError(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// Set once, read by everyone; Get blocks until the key exists or the timeout passes.
class Store {
 public:
  virtual ~Store() = default;
  virtual void Set(const std::string& key, const std::vector<char>& value) = 0;
  // Throws MissingKeyError naming the key when it does not appear in time.
  virtual std::vector<char> Get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // The values of `keys` in their order, each waited for as Get waits, all within `timeout`:
  // what rank 0 reads of every process (their ranks, plans, transports). This one asks one key
  // at a time; the TCP client asks for all of them in one write (its server answers requests
  // in order), so 16384 keys cost one round trip, not 16384. Throws MissingKeyError naming the
  // first key that did not appear (the TCP client then gives its connection up: the Gets
  // behind it would each wait their own timeout).
  virtual std::vector<std::vector<char>> MultiGet(const std::vector<std::string>& keys,
                                                  std::chrono::milliseconds timeout);
};

// A store for ranks that are threads of one process.
class InMemoryStore : public Store {
 public:
  void Set(const std::string& key, const std::vector<char>& value) override;
  std::vector<char> Get(const std::string& key, std::chrono::milliseconds timeout) override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> values_;
};

}  // namespace fabricscope
