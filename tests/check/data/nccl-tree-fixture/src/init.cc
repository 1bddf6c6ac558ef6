// Fixture for scripts/gen-nccl-log-strings.py: a cut-down ncclGetErrorString().
#include "checks.h"

const char* ncclGetErrorString(ncclResult_t code) {
  switch (code) {
    case ncclSuccess:
      return "no error";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    default:
      return "unknown result code";
  }
}
