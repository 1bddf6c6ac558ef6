// The MPI backend's factory; the implementation stays private to src/backends/mpi.
#pragma once

#include <memory>

#include "fabricscope/backend.h"

namespace fabricscope {

// MPI collectives on host memory, one rank per process. MPI must already be initialized
// (by the launcher) when Connect is called, and stay so until the communicator is gone.
std::unique_ptr<Backend> MakeMpiBackend();

}  // namespace fabricscope
