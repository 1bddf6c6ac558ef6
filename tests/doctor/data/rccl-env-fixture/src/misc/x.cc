// Fixture for scripts/gen-nccl-env.py --profile rccl (never compiled): NCCL's and RCCL's own
// parameters, a ROCm runtime variable read by name, and a name of another family (skipped).
#include <stdlib.h>

#include "param.h"

NCCL_PARAM(IbDisable, "IB_DISABLE", 0);
RCCL_PARAM(MscclEnabled, "MSCCL_ENABLE", 1);
RCCL_PARAM(WorkFifoDepth, "WORK_FIFO_DEPTH", 256 << 10);

bool FineGrain() {
  const char* v = getenv("HSA_FORCE_FINE_GRAIN_PCIE");
  const char* other = getenv("MSCCL_SCHEDULER");
  return v != nullptr && other == nullptr;
}
