// TEST DOUBLE: the profiler-plugin half of the fake NCCL. It loads NCCL_PROFILER_PLUGIN the
// way NCCL 2.28 does (the name as given, then libnccl-profiler-<name>.so; libnccl-profiler.so
// when unset), looks up ncclProfiler_v5 then ncclProfiler_v4, calls init per communicator and
// passes the event descriptors NCCL passes: a Group event as the parent of each Coll event, a
// KernelCh event under it with its ncclProfilerKernelChStop state, each only when the plugin
// activated it; finalize at ncclCommDestroy. FAKE_NCCL_PROFILER_MAX_VERSION=4 makes it look
// only for v4, as NCCL 2.27 does. Point-to-point and proxy events are not produced.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fake_profiler {

struct Comm;

// What the fake knows of a collective when it is called.
struct Collective {
  uint64_t seq = 0;
  const char* func = nullptr;  // NCCL's name: "AllReduce"
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  int root = 0;
  const char* datatype = nullptr;  // "ncclFloat32"
};

// The handles of one collective's events.
struct Events {
  void* group = nullptr;
  void* coll = nullptr;
  void* kernel = nullptr;
};

// Null when no plugin is loaded or its init failed (NCCL then runs without it).
Comm* Init(uint64_t comm_id, int nnodes, int nranks, int rank);
// At the host call.
Events Start(Comm* comm, int rank, const Collective& coll);
// On the stream: the kernel starts.
void KernelStart(Comm* comm, int rank, Events* events);
// On the stream, when the collective completed.
void Stop(Comm* comm, Events* events);
void Finalize(Comm* comm);

// NCCL's datatype name of the fake's type index.
const char* DatatypeName(int type);

}  // namespace fake_profiler
