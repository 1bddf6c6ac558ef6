// Private: the heartbeat of a job of several processes. With -T 0 (no timeout, the
// nccl-tests default) nothing else notices a host that vanished without a word (powered
// off, black-holed: no FIN, no RST): its peers wait inside the collective library. Each
// process sets its own key in the store every interval, with its host and phase; process 0
// watches every other process's key, and the first one that stops changing for `silence`
// is named in an abort key that every process reads on its next beat. A process that loses
// the store itself (process 0's host vanished) learns it from its beat's deadline. Either
// way the caller's policy (the launcher: record, exit 3) gets a message naming the silent
// host, its process and ranks, and what it was doing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fabricscope/tcp_store.h"

namespace fabricscope {

struct LivenessOptions {
  int process = 0;
  int processes = 1;
  std::string host;                               // this process's host, for the others' messages
  std::string store_address;                      // "host:port" of the store, for the messages
  std::chrono::milliseconds interval{1000};       // between beats
  std::chrono::milliseconds silence{10000};       // a process silent this long is gone
  std::function<std::string()> phase;             // what this process does now
  std::function<std::string(int process)> ranks;  // "ranks 4-5", for the messages
  // Process 0: how long ago the host of a process last answered on the connection it beats
  // over (TcpStoreServer::SinceSetterAnswered of its key), nullopt when unknown. A process
  // silent while its host still answers is named as not progressing (stopped, swapped out,
  // starved), not as a host that is gone.
  std::function<std::optional<std::chrono::milliseconds>(const std::string& key)> since_answered;
};

class Liveness {
 public:
  // Called once, from the heartbeat's thread, with what went silent; the launcher's ends
  // the process. Must not return into a job that is still running (it may, in tests).
  using OnSilent = std::function<void(const std::string& message)>;

  // `store`: a connection of this process's own, so a beat never waits behind a rank's
  // long Get; its I/O deadline should be `silence`.
  Liveness(LivenessOptions options, std::unique_ptr<Store> store, OnSilent on_silent);
  // Says this process is done (so process 0 does not take its end for silence) and stops.
  ~Liveness();
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // One beat: publish, read the abort key, and on process 0 look at the others. True once
  // something went silent (on_silent was called). The thread calls it every interval.
  bool Beat();

  // Why process 0 ended the job, when it has said so (the silent process, described), read
  // once and acknowledged; empty when it has not, or the store is gone. For a process whose
  // own rank failed first: a peer that read the abort and left closes its connections, and
  // the failure that causes names that survivor, not the process that went silent.
  std::string PublishedAbort();

  // This process is ending with `why` (its own error): said in its key, so process 0 names the
  // reason at once instead of waiting out a silence; on process 0, said in the abort key. Best
  // effort, one request: the process ends next.
  void Leave(const std::string& why);

 private:
  struct Seen {
    std::string value;  // the last beat: "seq\thost\tphase"
    std::chrono::steady_clock::time_point since;
  };

  // Process 0: the first process whose beat stopped changing `silence` ago, described;
  // `silent` gets its number.
  std::string FindSilent(int* silent);
  // The abort key's message, acknowledged; empty when there is none. Throws the store's
  // errors but a missing key's.
  std::string ReadAbort();
  // Process 0, after the abort: waits (one silence at most) until every other process still
  // beating has read it, so none finds the store gone instead of the reason.
  void AwaitAcks(int silent);
  void Loop();

  const LivenessOptions options_;
  const std::unique_ptr<Store> store_;
  const OnSilent on_silent_;
  uint64_t seq_ = 0;
  std::atomic<bool> fired_{false};  // read by Leave from other threads
  std::map<int, Seen> seen_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fabricscope
