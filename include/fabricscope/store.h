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

// How a job started by the env launcher (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) finds
// its store.
struct JobStoreOptions {
  bool serve = false;     // this is process 0: it serves the store
  uint16_t port = 0;      // MASTER_PORT; 0 = process 0 binds a free port and publishes it
  std::string port_file;  // FABRICSCOPE_PORT_FILE: where the port is published, with port 0
  std::chrono::milliseconds timeout{0};  // how long the others wait for the port file
};

// The store of such a job. With a port, process 0 serves it there. With port 0, the owner
// of the port binds it: process 0's server binds port 0, takes the port the kernel gave it
// and writes it to `port_file` (atomically: a temporary file renamed), and every other
// process waits for that file and reads the port from it. So no process picks a port that
// was free a moment ago and another takes before it binds. Process 0 removes the file when
// the store closes.
class JobStore {
 public:
  // Throws UsageError for port 0 without a port file or a file holding no port,
  // SystemError when the file cannot be written, TimeoutError when it never appears.
  explicit JobStore(const JobStoreOptions& options);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;
  // The port every process of the job connects to.
  uint16_t port() const { return port_; }

 private:
  std::unique_ptr<TcpStoreServer> server_;
  uint16_t port_ = 0;
  std::string published_;  // the file this process wrote, removed at the end
};

}  // namespace fabricscope
