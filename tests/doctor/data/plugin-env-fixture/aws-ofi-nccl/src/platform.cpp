// Fixture: what the plugin reads and sets for libfabric and NCCL.
#include <stdlib.h>

static const struct { const char* name; const char* value; } table[] = {
    { "NCCL_BUFFSIZE", "8388608" },
    { "SOME_OTHER", "1" },
};

int configure(int new_libfabric) {
  const char* provider = getenv("FI_PROVIDER");
  const char* fork_safe = new_libfabric ? "FI_EFA_FORK_SAFE" : "RDMAV_FORK_SAFE";
  setenv(fork_safe, "1", 0);
  setenv("NCCL_PROTO", "simple", 0);
  return provider != nullptr && table[0].value != nullptr;
}
