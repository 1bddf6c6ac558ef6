// TEST DOUBLE: the profiler-plugin half of the fake NCCL, calling the plugin in the order
// NCCL 2.30 does. Derived from NVIDIA/nccl v2.30.7-1 (73cf112295c33aee2b895f329f592f2a9b4b0f97);
// the file and function of each behaviour are cited in fake_profiler.cc:
// - loading: NCCL_PROFILER_PLUGIN as given, then libnccl-profiler-<name>.so; ncclProfiler_v6,
//   then _v5, then _v4 (FAKE_NCCL_PROFILER_MAX_VERSION=5 or 4: as NCCL 2.28 or 2.27);
// - one process-wide activation mask that every init writes and every task reads;
// - at the host call, on the caller's thread: GroupApi (outermost only, its groupDepth
//   NCCL's) with its GroupStartApiStop state, CollApi or P2pApi started and stopped; at the
//   outermost group end, GroupEndApiStart before the launch and the GroupApi stop after it;
// - at the launch, on the launching thread: KernelLaunch started and stopped around it, when
//   asked for;
// - after the launch, on the launching thread (hostStreamPlanTask, called directly by
//   ncclLaunchKernelAfter_NoCuda; on the stream, once per replay, only for a plan captured
//   into a graph): Group start, Coll and P2p starts, the proxy ops handed to the proxy
//   thread, Coll and P2p stops, Group stop: back to back;
// - on the proxy thread of the communicator: ProxyOp (and ProxyStep when asked for) per
//   channel and peer, and KernelCh start and stop per channel carrying the GPU timer
//   (pTimer), whose clock is not the host's; none of them for a send or receive to itself;
// - Broadcast gets only its GroupApi and CollApi (its task's mask is 0); AlltoAll, Gather
//   and Scatter are P2p tasks (Send, Recv per peer), as is a send or receive; ncclUint8 is
//   named "Unknown".
//
// Not modelled (an audit against the same commit, 2026-11-28; each is a place where a plugin
// could see more than the fake shows):
// - ProxyOps only on the edges that cross nodes (src/proxy.cc, SaveProxy: no proxyProgress
//   for P2P/SHM), in recv-then-send order, nSteps and chunkSize from the plan; the fake gives
//   every ring edge a send then a receive ProxyOp of 4 steps of 512 KiB, one node or many;
// - one plan per communicator and group (ncclLaunchPrepare), so one Group and KernelLaunch
//   for several Coll events; the fake makes a plan per collective;
// - a captured plan's seqNumber grows per replay only with KernelCh on (src/plugin/
//   profiler.cc, ncclProfilerStartTaskEvents), and without proxy ops it runs once, at capture
//   (enqueue.cc: the host callback only `if (plan->hasProxyOps)`); graphCaptured is false;
// - one-rank communicators and count 0 make no events (enqueue.cc, taskAppend);
// - ProxyStep states beyond SendWait/RecvWait, spread over the kernel; ProxyOpInProgress_v4;
//   ProxyCtrl events;
// - API descriptor details: stream fields, per-peer p2p buffers, CollApi count and datatype
//   for AllGather and Broadcast (the fake gives bytes and ncclInt8);
// - init after the bootstrap with config.commName, unload at the last finalize, profiler
//   versions v3 to v1, the net plugin's library as a fallback; ncclGetVersion says 2.28.9.
// FAKE_NCCL_SLOW_PEER=src:dst:factor makes rank src's link to rank dst slow: its send
// ProxyOps towards dst end (factor - 1) kernel times after the kernel, each on its own while
// the proxy thread goes on with the rest (as NCCL's progressOps advances every operation),
// so they last about `factor` times the other links' whatever the build's speed; the
// kernels' GPU times are left as they are. FAKE_NCCL_LINK_US=us gives every link a network
// time: each ProxyOp ends `us` after the kernel (the slow link's factor x us), so that the
// links' times are the network's rather than the ranks' arrival skew.
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
  bool coll_event = true;  // false: Broadcast, whose task NCCL 2.30 runs with mask 0
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
// ncclEnqueueCheck: at each collective or send/receive call, before its task is appended.
void EnqueueBegin();
// collTaskAppend / p2pTaskAppend: on the calling thread, at the API call. nccl_group_depth is
// NCCL's ncclGroupDepth then: the user's groups plus the call's own implicit one.
void Append(Comm* comm, int rank, Task* task, int nccl_group_depth);
// ncclGroupEndInternal, for every group end (the implicit one of each call included): its
// entry, before any launch, and its exit, after it.
void GroupEndBegin();
void GroupEndExit();
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
