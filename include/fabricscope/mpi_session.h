// Private: MPI as a launcher: initialization for the job's lifetime and the few calls the
// bootstrap needs. The MPI backend finds MPI initialized by this.
#pragma once

#include <string>

namespace fabricscope {

// What the process will ask of MPI, which decides the thread level it initializes at.
struct MpiSessionOptions {
  // Several rank threads of this process may call MPI at once (-t > 1): then it asks for
  // MPI_THREAD_MULTIPLE. Otherwise only the thread that creates the session calls MPI (the
  // watchdog and store threads never do), and it asks for MPI_THREAD_SINGLE, the level of a
  // plain MPI_Init: Open MPI 4.1 takes its thread-safe paths at any level above it
  // (docs/performance.md).
  bool rank_threads = false;
};

// Initializes MPI at the level the options need unless it already is, and finalizes what
// it initialized.
// MPI's name of a thread level ("MPI_THREAD_SINGLE"), or "unknown".
const char* ThreadLevelName(int level);

class MpiSession {
 public:
  explicit MpiSession(const MpiSessionOptions& options = {});
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // False when several threads may not call MPI at once: the library cannot, or MPI was
  // initialized (here or before) at a lower level.
  bool multithreaded() const { return multithreaded_; }
  // The level MPI provides, as MPI names it: "MPI_THREAD_SINGLE".
  const std::string& thread_level() const { return thread_level_; }
  // Rank 0's `value` reaches every process.
  std::string Broadcast(const std::string& value) const;

 private:
  bool owns_ = false;
  bool multithreaded_ = false;
  std::string thread_level_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace fabricscope
