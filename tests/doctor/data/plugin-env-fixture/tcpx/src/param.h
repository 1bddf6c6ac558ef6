// Fixture for scripts/gen-plugin-env.py --source tcpx (not Google's code; never compiled):
// a prefix pasted by a macro two forwards away, and one held by an object-like #define.
#include <stdint.h>
void loadParam(const char* env, int64_t deftVal, int64_t* cache);
#define NCCL_PARAM1(name, env, deftVal) \
  int64_t param##name() { static int64_t c; loadParam("NCCL_" env, deftVal, &c); return c; }
#define __PLUGIN_PARAM(name, env, deftVal) NCCL_PARAM1(name, env, deftVal)
#define PLUGIN_PARAM(name, env, deftVal) __PLUGIN_PARAM(name, env, deftVal)
#define __ENV_PREFIX "NCCL_GPUDIRECTTCPX_"
#define ENV_PREFIX __ENV_PREFIX
#define PLUGIN_GET_ENV(name) (getenv(ENV_PREFIX name))
