// Fixture for scripts/gen-nccl-env.py --profile rccl: NCCL_PARAM and RCCL_PARAM in the style
// of ROCm/rccl's src/include/param.h (not AMD's code; never compiled).
#ifndef NCCL_PARAM_H_
#define NCCL_PARAM_H_

#include <stdint.h>

void ncclLoadParam(char const* env, int64_t deftVal, int64_t uninitialized, int64_t* cache);

#define NCCL_PARAM(name, env, deftVal)                            \
  int64_t ncclParam##name() {                                     \
    static int64_t cache = INT64_MIN;                             \
    if (cache == INT64_MIN) {                                     \
      ncclLoadParam("NCCL_" env, deftVal, INT64_MIN, &cache);     \
    }                                                             \
    return cache;                                                 \
  }

#define RCCL_PARAM(name, env, deftVal)                            \
  int64_t rcclParam##name() {                                     \
    static int64_t cache = INT64_MIN;                             \
    if (cache == INT64_MIN) {                                     \
      ncclLoadParam("RCCL_" env, deftVal, INT64_MIN, &cache);     \
    }                                                             \
    return cache;                                                 \
  }

#endif
