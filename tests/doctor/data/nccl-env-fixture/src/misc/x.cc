// Fixture for scripts/gen-nccl-env.py (never compiled).
#include <stdlib.h>

#include "param.h"

#define FIXTURE_CHUNK_DEFAULT (1 << 17)

NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", -1);
NCCL_PARAM(ChunkSize, "CHUNK_SIZE", FIXTURE_CHUNK_DEFAULT);
NCCL_PARAM(IbDisable, "IB_DISABLE", 0);

// NCCL_PARAM(Commented, "COMMENTED_OUT", 1);  <- a comment: not a variable

static const char* fixtureIfname() { return ncclGetEnv("NCCL_SOCKET_IFNAME"); }

static int fixtureConf() {
  const char* s = getenv("NCCL_CONF_FILE");
  const char* h = getenv("HOME");  // another prefix: skipped
  return s != nullptr && h != nullptr;
}
