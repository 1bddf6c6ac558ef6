// The job's rendezvous over TCP: the store server rank 0 hosts, its clients with deadlines,
// and the job store that puts them together (src/launch/tcp_store.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/store.h"

namespace fabricscope {

// Where a store request stopped: what the deadline of a TcpStoreClient or server was on.
enum class StorePhase { kConnect, kSend, kReceive };

// A store peer went silent: the connection could not be made, or a request or its reply did
// not pass, within its deadline. Names the peer (host:port) and the phase.
class StoreTimeoutError : public TimeoutError {
 public:
  StoreTimeoutError(const std::string& message, std::string where, StorePhase phase)
      : TimeoutError(message), where_(std::move(where)), phase_(phase) {}
  const std::string& where() const { return where_; }
  StorePhase phase() const { return phase_; }

 private:
  std::string where_;
  StorePhase phase_;
};

// "connect", "send" or "receive", for messages.
const char* NameOf(StorePhase phase);

// What a TcpStoreServer holds right now, for the rendezvous bench and the reaping tests.
struct StoreServerStats {
  size_t connections = 0;  // open client connections (each one fd)
  size_t threads = 0;      // serving threads: the one event loop
  uint64_t wakeups = 0;    // waiters a Set woke: only those waiting on its key
  uint64_t requests = 0;
  size_t waiters = 0;  // Gets waiting for their key now
};

// Serves a key-value store over TCP to the processes of a job (hosted by rank 0), like
// torchrun's TCPStore. Listens on every address; port 0 picks a free one. One thread serves
// every connection from an epoll loop (16k ranks are 16k connections, not 16k threads); a
// client that leaves (or goes silent past TCP keepalive) has its fd closed then, not at the
// server's end.
class TcpStoreServer {
 public:
  explicit TcpStoreServer(uint16_t port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;
  uint16_t port() const;
  StoreServerStats stats() const;
  // How long ago the host of the connection that last set `key` acknowledged anything on it
  // (TCP_INFO's tcpi_last_ack_recv; keepalive probes an idle connection every second after
  // 5 s): a host that still answers while its process is silent has a process that is
  // stopped or starved, not a host that is gone. nullopt when the key was not set or that
  // connection is closed.
  std::optional<std::chrono::milliseconds> SinceSetterAnswered(const std::string& key) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a client knows of the store's listener when it connects. kMaybeNotYet: rank 0 may
// not have started, so a refused connect is retried. kKnown: the store was seen listening
// (its port was published after it bound, by the port file or MPI's broadcast, or another
// connection of this process reached it), so a refused connect means process 0 is gone and
// fails at once rather than retrying to the connect deadline.
enum class StoreListening { kMaybeNotYet, kKnown };

// A process's connection to a TcpStoreServer. Connecting retries until `connect_timeout`,
// so ranks may start before rank 0 (unless `listening` says it was seen: then a refusal
// is a BackendError at once); a host that drops SYNs costs that timeout, not the
// kernel's two minutes of retries. Every request then has a deadline: `io_timeout` to send
// it, and its own wait (a Get's timeout) plus `io_timeout` for the reply. Thread-safe: one
// request at a time per client. Deadlines throw StoreTimeoutError.
class TcpStoreClient : public Store {
 public:
  static constexpr std::chrono::milliseconds kDefaultIoTimeout{30000};
  TcpStoreClient(const std::string& host, uint16_t port, std::chrono::milliseconds connect_timeout,
                 std::chrono::milliseconds io_timeout = kDefaultIoTimeout,
                 StoreListening listening = StoreListening::kMaybeNotYet);
  ~TcpStoreClient() override;
  void Set(const std::string& key, const std::vector<char>& value) override;
  std::vector<char> Get(const std::string& key, std::chrono::milliseconds timeout) override;
  // Every Get in one write, the replies read in order (the server serves a connection's
  // requests in order, a parked one holding those behind it).
  std::vector<std::vector<char>> MultiGet(const std::vector<std::string>& keys,
                                          std::chrono::milliseconds timeout) override;
  // The local address of the connection: the interface this host reaches rank 0 through.
  std::string LocalAddress() const;

 private:
  // Sends `request` and reads the reply's first byte, all before `deadline`.
  // Throws StoreTimeoutError past the deadline, BackendError when the connection is lost.
  char Exchange(const std::vector<char>& request, const std::string& key,
                std::chrono::steady_clock::time_point deadline);
  // Reads the next reply's first byte (a request sent earlier), before `deadline`.
  char ReadStatus(const std::string& key, std::chrono::steady_clock::time_point deadline);

  std::mutex mutex_;
  int fd_ = -1;
  bool broken_ = false;  // a deadline passed mid-request: the stream is out of step
  std::string where_;    // "host:port" for messages
  std::chrono::milliseconds io_timeout_;
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
  // kKnown when the port was read from the port file, which process 0 writes only once its
  // store listens; kMaybeNotYet for a fixed MASTER_PORT, which a process may meet first.
  StoreListening listening() const { return listening_; }
  // The server, on process 0; null elsewhere.
  const TcpStoreServer* server() const { return server_.get(); }

 private:
  std::unique_ptr<TcpStoreServer> server_;
  uint16_t port_ = 0;
  StoreListening listening_ = StoreListening::kMaybeNotYet;
  std::string published_;  // the file this process wrote, removed at the end
};

}  // namespace fabricscope
