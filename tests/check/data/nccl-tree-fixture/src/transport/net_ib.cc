// Fixture for scripts/gen-nccl-log-strings.py: a cut-down NCCL transport file.
#include <inttypes.h>

#include "checks.h"

// WARN("a commented-out call is not recorded");

ncclResult_t ncclIbInit(int nDevs, const char* ifName, uint64_t guid) {
  if (nDevs == 0) {
    INFO(NCCL_INIT | NCCL_NET, "NET/IB : No device found.");
    return ncclSuccess;
  }
  INFO(NCCL_INIT | NCCL_NET, "NET/IB : Using [%d]%s; OOB %s", 0, ifName, "eth0");
  WARN("NET/IB : device guid 0x%" PRIx64 " has %" PRIu64
       " ports, expected \"%s\"\t(see NCCL_IB_HCA) for this HCA device on the host",
       guid, guid, ifName);
  return ncclSuccess;
}

ncclResult_t ncclIbCompletion(const char* peer, int status, int opcode, const char* hint) {
  WARN(
      "NET/IB : Got completion from peer %s with status=%d opcode=%d len=%d vendor err %d"
      " (%s)%s",
      peer, status, opcode, 0, 0, hint ? hint : "", " hca mlx5_0");
  WARN(status == 5 ? "NET/IB : flushed (status %d)" : "NET/IB : failed (status %d)", status);
  return ncclRemoteError;
}
