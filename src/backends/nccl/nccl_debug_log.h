// Private: NCCL's own INFO log (NCCL_DEBUG=INFO), tapped for the transport NCCL chose for
// each connection ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"), which goes into the results.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fabricscope/env.h"

namespace fabricscope::gpu {

// One connection line of the log.
struct ConnectionLine {
  int device = -1;  // the "[dev]" of the "host:pid:tid [dev]" prefix; -1 without one
  int rank = 0;
  int peer = 0;
  std::string transport;  // "P2P/CUMEM/read", "NET/IB/0/GDRDMA", "SHM/direct/direct"
};

// Parses a line of NCCL's INFO log (any NCCL since 2.4, prefix optional); nullopt for every
// other line.
std::optional<ConnectionLine> ParseConnectionLine(std::string_view line);

// The transports rank `rank` on device `device` (-1: any) connects through, each once, in order
// of first appearance: "P2P/IPC, NET/IB/0/GDRDMA". Empty when the log does not say.
std::string SummarizeTransports(const std::vector<ConnectionLine>& lines, int rank, int device);

// Reads NCCL's log while NCCL writes it. Without NCCL_DEBUG_FILE the log goes to a file of
// ours, and each line is copied to stderr as it appears: NCCL would have printed it on stdout,
// where the report goes. With NCCL_DEBUG_FILE the user's file is read and left alone.
class NcclDebugLog {
 public:
  // A tap when `env`'s NCCL_DEBUG asks for INFO or TRACE; null otherwise. Without
  // NCCL_DEBUG_FILE in `env`, sets it in the process environment for NCCL to read, so it must
  // run before NCCL's first call, while the process has a single thread.
  static std::unique_ptr<NcclDebugLog> Start(const Env& env);

  NcclDebugLog(std::string path, bool owned);
  ~NcclDebugLog();
  NcclDebugLog(const NcclDebugLog&) = delete;
  NcclDebugLog& operator=(const NcclDebugLog&) = delete;

  // What the log says so far (read up to now) about `rank` on `device`.
  std::string Transport(int rank, int device);

 private:
  void Loop();
  void DrainLocked();  // reads what NCCL wrote since the last call

  const std::string path_;
  const bool owned_;  // ours: echo each line, remove the file at the end
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int fd_ = -1;
  std::string partial_;  // the start of a line NCCL has not finished writing
  std::vector<ConnectionLine> lines_;
  std::thread thread_;
};

}  // namespace fabricscope::gpu
