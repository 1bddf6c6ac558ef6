// Fixture for scripts/gen-nccl-log-strings.py: a cut-down NCCL src/include/checks.h.
#ifndef NCCL_CHECKS_H_
#define NCCL_CHECKS_H_

#include <errno.h>

// A check macro whose WARN pastes its name argument into the format: its call sites are
// recorded with the call's name.
#define SYSCHECK(statement, name)                            \
  do {                                                       \
    int retval = (statement);                                \
    if (retval == -1) {                                      \
      INFO(NCCL_ALL, "Call to " name " returned, retrying"); \
      WARN("Call to " name " failed: %s", strerror(errno));  \
      return ncclSystemError;                                \
    }                                                        \
  } while (false)

// A WARN in a macro without a pasted parameter: recorded once, with in_macro.
#define CUDACHECK(cmd)                                    \
  do {                                                    \
    cudaError_t err = cmd;                                \
    if (err != cudaSuccess) {                             \
      WARN("Cuda failure '%s'", cudaGetErrorString(err)); \
      return ncclUnhandledCudaError;                      \
    }                                                     \
  } while (false)

#endif
