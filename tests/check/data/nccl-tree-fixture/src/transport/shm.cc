// Fixture for scripts/gen-nccl-log-strings.py: a cut-down NCCL shm transport file.
#include <unistd.h>

#include "checks.h"

ncclResult_t shmExtend(int fd, off_t size) {
  SYSCHECK(ftruncate(fd, size), "ftruncate");
  INFO(NCCL_SHM, "MMAP allocated shareable host buffer size %zi", (size_t)size);
  return ncclSuccess;
}
