// Fixture for scripts/gen-nccl-env.py: a bundled plugin's variable (never compiled).
#include <stdlib.h>

static int inspectorEnabled() {
  const char* str = getenv("NCCL_INSPECTOR_ENABLE");
  return str != nullptr && atoi(str) == 1;
}
