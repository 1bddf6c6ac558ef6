// The key-value store ranks meet through (rendezvous), independent of any backend.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fabricscope {

// Set once, read by everyone; Get blocks until the key exists or the timeout passes.
class Store {
 public:
  virtual ~Store() = default;
  virtual void Set(const std::string& key, const std::vector<char>& value) = 0;
  // Throws TimeoutError naming the key when it does not appear in time.
  virtual std::vector<char> Get(const std::string& key, std::chrono::milliseconds timeout) = 0;
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
