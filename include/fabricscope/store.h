// The key-value store ranks meet through (rendezvous), independent of any backend.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
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

// Serves an InMemoryStore over TCP to the processes of a job (hosted by rank 0), like
// torchrun's TCPStore. Listens on every address; port 0 picks a free one.
class TcpStoreServer {
 public:
  explicit TcpStoreServer(uint16_t port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;
  uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A process's connection to a TcpStoreServer. Connecting retries until `connect_timeout`,
// so ranks may start before rank 0. Thread-safe: one request at a time per client.
class TcpStoreClient : public Store {
 public:
  TcpStoreClient(const std::string& host, uint16_t port, std::chrono::milliseconds connect_timeout);
  ~TcpStoreClient() override;
  void Set(const std::string& key, const std::vector<char>& value) override;
  std::vector<char> Get(const std::string& key, std::chrono::milliseconds timeout) override;
  // The local address of the connection: the interface this host reaches rank 0 through.
  std::string LocalAddress() const;

 private:
  std::mutex mutex_;
  int fd_ = -1;
  std::string where_;  // "host:port" for messages
};

}  // namespace fabricscope
