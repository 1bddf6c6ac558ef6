// Fixture for scripts/gen-plugin-env.py --source tcpxo (not Google's code; never compiled): a
// registered parameter whose prefix is added at run time (params.cc), with its bounds.
#include <cstdint>
void Register(const char* name, int64_t min_value, int64_t max_value, int64_t* slot);
#define NCCL_CONST_PARAM(name, env_var_name, default_value, min_value, \
                         max_value)                                    \
  inline int64_t impl_##name = default_value;                          \
  inline bool reg_##name = (Register(env_var_name, min_value, max_value, &impl_##name), true);

NCCL_CONST_PARAM(kNumFlows, "FASTRAK_NUM_FLOWS", 2, 1, 8);
NCCL_CONST_PARAM(kTimeoutMs, "FASTRAK_TIMEOUT_MS", 5 * 60'000, 0, 86400000);
