// TEST DOUBLE: a profiler plugin that activates Group, Coll, KernelCh and KernelLaunch events
// and writes every call it gets, with the descriptor's fields, to $RECORDING_PLUGIN_LOG, so a
// test can check that the fake NCCL calls a plugin as NCCL does (order, parents, states).
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "profiler/nccl_profiler_abi.h"

namespace {

std::mutex log_mutex;
int next_handle = 0;
int handles[4096];

void Log(const char* format, auto... args) {
  const std::lock_guard lock(log_mutex);
  const char* path = std::getenv("RECORDING_PLUGIN_LOG");
  if (path == nullptr) return;
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, format, args...);
    std::fputc('\n', f);
    std::fclose(f);
  }
}

int IdOf(const void* handle) {
  return handle == nullptr ? -1 : static_cast<int>(static_cast<const int*>(handle) - handles);
}

ncclResult_t Init(void** context, uint64_t comm_id, int* mask, const char*, int nnodes, int nranks,
                  int rank, ncclDebugLogger_t) {
  *context = handles;
  *mask = ncclProfileGroup | ncclProfileColl | ncclProfileKernelCh | ncclProfileKernelLaunch;
  Log("init comm=%llx nnodes=%d nranks=%d rank=%d", static_cast<unsigned long long>(comm_id),
      nnodes, nranks, rank);
  return ncclSuccess;
}

ncclResult_t Start(void*, void** handle, ncclProfilerEventDescr_v5_t* d) {
  int id = 0;
  {
    const std::lock_guard lock(log_mutex);
    id = next_handle++ % 4096;
  }
  *handle = &handles[id];
  if (d->type == ncclProfileColl) {
    Log("start %d coll parent=%d rank=%d seq=%llu func=%s count=%zu type=%s algo=%s proto=%s "
        "channels=%d parentGroup=%d",
        id, IdOf(d->parentObj), d->rank, static_cast<unsigned long long>(d->coll.seqNumber),
        d->coll.func, d->coll.count, d->coll.datatype, d->coll.algo, d->coll.proto,
        d->coll.nChannels, IdOf(d->coll.parentGroup));
  } else if (d->type == ncclProfileKernelCh) {
    Log("start %d kernel parent=%d channel=%d timer=%d", id, IdOf(d->parentObj),
        d->kernelCh.channelId, d->kernelCh.pTimer > 0 ? 1 : 0);
  } else {
    Log("start %d type=%llu parent=%d", id, static_cast<unsigned long long>(d->type),
        IdOf(d->parentObj));
  }
  return ncclSuccess;
}

ncclResult_t Stop(void* handle) {
  Log("stop %d", IdOf(handle));
  return ncclSuccess;
}

ncclResult_t Record(void* handle, ncclProfilerEventState_v5_t state,
                    ncclProfilerEventStateArgs_v5_t* args) {
  Log("state %d %d timer=%d", IdOf(handle), static_cast<int>(state),
      args != nullptr && args->kernelCh.pTimer > 0 ? 1 : 0);
  return ncclSuccess;
}

ncclResult_t Finalize(void*) {
  Log("finalize");
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ncclProfiler_v5_t ncclProfiler_v5 = {"recording", Init, Start, Stop, Record, Finalize};
}
