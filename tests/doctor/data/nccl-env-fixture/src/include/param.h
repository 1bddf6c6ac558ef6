// Fixture for scripts/gen-nccl-env.py: NCCL_PARAM in the style of NCCL's
// src/include/param.h (not NVIDIA's code; never compiled).
#ifndef NCCL_PARAM_H_
#define NCCL_PARAM_H_

#include <stdint.h>

const char* ncclGetEnv(const char* name);
void ncclLoadParam(char const* env, int64_t deftVal, int64_t uninitialized, int64_t* cache);

#define NCCL_PARAM(name, env, deftVal)                            \
  int64_t ncclParam##name() {                                     \
    constexpr int64_t uninitialized = INT64_MIN;                  \
    static int64_t cache = uninitialized;                         \
    if (cache == uninitialized) {                                 \
      ncclLoadParam("NCCL_" env, deftVal, uninitialized, &cache); \
    }                                                             \
    return cache;                                                 \
  }

#endif
