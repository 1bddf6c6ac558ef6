// Private: MPI as a launcher: initialization for the job's lifetime and the few calls the
// bootstrap needs. The MPI backend finds MPI initialized by this.
#pragma once

#include <string>

namespace fabricscope {

// Initializes MPI (MPI_THREAD_MULTIPLE, so thread ranks may call it) unless it already is,
// and finalizes what it initialized.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // False when the MPI library cannot take calls from several threads at once.
  bool multithreaded() const { return multithreaded_; }
  // Rank 0's `value` reaches every process.
  std::string Broadcast(const std::string& value) const;

 private:
  bool owns_ = false;
  bool multithreaded_ = true;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace fabricscope
