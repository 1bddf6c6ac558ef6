#include "locate/pair_communicator.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"

namespace fabricscope {

PairCommunicator::PairCommunicator(Communicator& world, int peer, bool host_memory)
    : world_(world), peer_(peer), self_(peer > world.rank() ? 0 : 1), host_memory_(host_memory) {
  if (peer < 0 || peer >= world.size() || peer == world.rank()) {
    throw UsageError(fmt::format("a pair of rank {} needs another rank of {}, not {}", world.rank(),
                                 world.size(), peer));
  }
  if (world.devices() != 1) {
    throw UnsupportedError("a pair on the job's communicator needs one device per rank (-g 1)");
  }
  token_ = world_.Allocate(2 * sizeof(int32_t));
}

void PairCommunicator::Swap(const void* send, void* recv, size_t count, DataType type) {
  PeerExchange x;
  x.send = send;
  x.recv = recv;
  x.count = count;
  x.type = type;
  x.peer = peer_;
  world_.Exchange(x);
}

std::byte* PairCommunicator::Scratch(size_t bytes) {
  if (!scratch_ || scratch_->size() < bytes) scratch_ = world_.Allocate(bytes);
  return scratch_->data(0);
}

void PairCommunicator::Run(const CollectiveCall& call) {
  if (call.count == 0) return;
  switch (call.collective) {
    case Collective::kSendRecv:
      // A ring of two: rank+1 and rank-1 are both the peer.
      Swap(call.send, call.recv, call.count, call.type);
      return;
    case Collective::kAllReduce:
      AllReduce(call);
      return;
    case Collective::kAllGather:
      AllGather(call);
      return;
    default:
      throw UnsupportedError(
          fmt::format("a pair on the job's communicator runs sendrecv, "
                      "all_reduce and all_gather, not {}",
                      SpecOf(call.collective).name));
  }
}

// Each rank sends its whole buffer and combines: the bytes a ring all_reduce of two moves
// (half out and back twice). The lower rank's data comes first in every rank's sum, so
// both hold the same bits.
void PairCommunicator::AllReduce(const CollectiveCall& call) {
  const size_t bytes = call.count * SizeOf(call.type);
  std::byte* theirs = Scratch(bytes);
  Swap(call.send, theirs, call.count, call.type);
  const ReduceOp combine = call.op == ReduceOp::kAvg ? ReduceOp::kSum : call.op;
  const void* mine = call.send;
  void* out = call.recv;
  if (!host_memory_) {
    world_.Sync();
    mine_.resize(bytes);
    theirs_.resize(bytes);
    world_.CopyToHost(0, mine_.data(), call.send, bytes);
    world_.CopyToHost(0, theirs_.data(), theirs, bytes);
    mine = mine_.data();
    theirs = theirs_.data();
    out = mine_.data();
  }
  const void* first = self_ == 0 ? mine : theirs;
  const void* second = self_ == 0 ? theirs : mine;
  Reduce3(call.type, combine, out, first, second, call.count);
  if (call.op == ReduceOp::kAvg) FinishAverage(call.type, out, call.count, 2);
  if (!host_memory_) world_.CopyToDevice(0, call.recv, out, bytes);
}

void PairCommunicator::AllGather(const CollectiveCall& call) {
  const size_t chunk = call.count * SizeOf(call.type);
  auto* recv = static_cast<std::byte*>(call.recv);
  std::byte* own = recv + static_cast<size_t>(self_) * chunk;
  Swap(call.send, recv + static_cast<size_t>(1 - self_) * chunk, call.count, call.type);
  if (call.send == own) return;  // in place: already there
  if (host_memory_) {
    std::memmove(own, call.send, chunk);
    return;
  }
  world_.Sync();
  mine_.resize(chunk);
  world_.CopyToHost(0, mine_.data(), call.send, chunk);
  world_.CopyToDevice(0, own, mine_.data(), chunk);
}

void PairCommunicator::Barrier() {
  std::byte* t = token_->data(0);
  Swap(t, t + sizeof(int32_t), 1, DataType::kInt32);
  world_.Sync();
}

}  // namespace fabricscope
