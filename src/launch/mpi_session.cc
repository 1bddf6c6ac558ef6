#include "fabricscope/mpi_session.h"

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

const char* ThreadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "unknown";
  }
}

MpiSession::MpiSession(const MpiSessionOptions& options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (initialized == 0) {
    const int required = options.rank_threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    Check(MPI_Init_thread(nullptr, nullptr, required, &provided), "MPI_Init_thread");
    owns_ = true;
  } else {
    // Whoever initialized MPI chose the level (a program that embeds the library).
    Check(MPI_Query_thread(&provided), "MPI_Query_thread");
  }
  // Below MULTIPLE, thread ranks (-t > 1) must not call MPI at once: the launcher refuses them.
  multithreaded_ = provided >= MPI_THREAD_MULTIPLE;
  thread_level_ = ThreadLevelName(provided);
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
