#include "launch/mpi_session.h"

#include <mpi.h>

#include <vector>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

void Check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw BackendError(std::string("MPI bootstrap: ") + call + " failed: " + text);
}

}  // namespace

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    int provided = 0;
    Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    owns_ = true;
    if (provided < MPI_THREAD_MULTIPLE) {
      // Thread ranks (-t > 1) would call MPI concurrently; the launcher refuses them then.
      multithreaded_ = false;
    }
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  Check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && finalized == 0) MPI_Finalize();
}

std::string MpiSession::Broadcast(const std::string& value) const {
  int len = static_cast<int>(value.size());
  Check(MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::vector<char> data(value.begin(), value.end());
  data.resize(static_cast<size_t>(len));
  Check(MPI_Bcast(data.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return std::string(data.begin(), data.end());
}

}  // namespace fabricscope
