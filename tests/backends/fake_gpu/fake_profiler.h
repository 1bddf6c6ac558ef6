// TEST DOUBLE: the profiler-plugin half of the fake NCCL, calling the plugin in the order
// NCCL 2.30 does. Derived from NVIDIA/nccl v2.30.7-1 (73cf112295c33aee2b895f329f592f2a9b4b0f97);
// the file and function of each behaviour are cited in fake_profiler.cc:
// - loading: NCCL_PROFILER_PLUGIN as given, then libnccl-profiler-<name>.so; ncclProfiler_v6,
//   then _v5, then _v4 (FAKE_NCCL_PROFILER_MAX_VERSION=5 or 4: as NCCL 2.28 or 2.27);
// - one process-wide activation mask that every init writes and every task reads;
// - at the host call, on the caller's thread: GroupApi (outermost only) with its
//   GroupStartApiStop state, CollApi or P2pApi started and stopped; at the outermost group
//   end, GroupEndApiStart and the GroupApi stop;
// - at the launch, on the launching thread: KernelLaunch started and stopped around it, when
//   asked for;
// - after the launch, on the launching thread (hostStreamPlanTask, called directly by
//   ncclLaunchKernelAfter_NoCuda; on the stream, once per replay, only for a plan captured
//   into a graph): Group start, Coll and P2p starts, the proxy ops handed to the proxy
//   thread, Coll and P2p stops, Group stop: back to back;
// - on the proxy thread of the communicator: ProxyOp (and ProxyStep when asked for) per
//   channel and peer, and KernelCh start and stop per channel carrying the GPU timer
//   (pTimer), whose clock is not the host's;
// - Broadcast (as AllGatherV) gets no Coll event; AlltoAll, Gather and Scatter are P2p
//   tasks (Send, Recv per peer), as is a send or receive.
// FAKE_NCCL_SLOW_PEER=src:dst:factor makes rank src's link to rank dst slow: its send
// ProxyOps towards dst end (factor - 1) kernel times later (the proxy thread waits), so they
// last about `factor` times the other links' whatever the build's speed; the kernels' GPU
// times are left as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace fake_profiler {

struct Comm;

// One task of a plan, as NCCL's ncclTaskColl / ncclTaskP2p carries it to the launch.
struct Task {
  const char* func = nullptr;  // ncclFuncToString's name: "AllReduce", "Send"
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // as NCCL's descriptor: AllGather and Broadcast in bytes (ncclInt8)
  int root = 0;      // P2p: the peer
  const char* datatype = nullptr;
  bool p2p = false;
  bool coll_event = true;  // false: Broadcast, which NCCL 2.30 runs as AllGatherV
  uint8_t channels = 2;
  // Set by Append: what the host call left for the launch.
  int mask = 0;
  void* api = nullptr;        // the CollApi / P2pApi handle (the Coll/P2p parent in v5, v6)
  void* group_api = nullptr;  // t->groupApiEventHandle: the KernelLaunch's parent
};

// The events of a plan in flight.
struct Flight;

// Null when no plugin is loaded or its init failed (NCCL then runs without it).
Comm* Init(uint64_t comm_id, int nnodes, int nranks, int rank);
// collTaskAppend / p2pTaskAppend: on the calling thread, at the API call.
void Append(Comm* comm, int rank, Task* task);
// ncclGroupEndInternal at depth 0 (or the implicit group of an ungrouped call).
void GroupEnd();
// ncclLaunchKernel: on the launching thread, around the kernel's launch.
void KernelLaunch(Comm* comm, const std::vector<Task>& tasks);
// hostStreamPlanTask: on the launching thread after the launch (on the stream for a captured
// plan), before the kernel has done anything.
std::shared_ptr<Flight> PlanStart(Comm* comm, int rank, std::vector<Task> tasks);
// The kernel starts and ends on the stream; the proxy thread sees it.
void KernelBegin(const std::shared_ptr<Flight>& flight);
void KernelEnd(const std::shared_ptr<Flight>& flight);
void Finalize(Comm* comm);

// NCCL's datatype name of the fake's type index.
const char* DatatypeName(int type);

}  // namespace fake_profiler
