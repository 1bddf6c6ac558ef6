// Private: two ranks of a bigger communicator seen as a communicator of two, through the
// bigger one's point-to-point exchange (Communicator::Exchange). How locate measures a
// pair on the job's communicator without creating one for the pair: the engine runs
// sendrecv and all_reduce on it as on any communicator of two.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fabricscope/backend.h"

namespace fabricscope {

class PairCommunicator final : public Communicator {
 public:
  // `peer`: the other rank's rank in `world`, which must drive one device and have the
  // point_to_point capability. The lower of the two ranks is rank 0 of the pair.
  // `host_memory`: world's buffers are host memory (reductions are done on them in place);
  // otherwise they go through host copies (correct, but the copies are timed with the call).
  PairCommunicator(Communicator& world, int peer, bool host_memory);

  int rank() const override { return self_; }
  int size() const override { return 2; }
  // sendrecv, all_reduce and all_gather; anything else throws UnsupportedError.
  void Run(const CollectiveCall& call) override;
  void GroupStart() override { world_.GroupStart(); }
  void GroupEnd() override { world_.GroupEnd(); }
  void Sync() override { world_.Sync(); }
  void Barrier() override;
  std::unique_ptr<DeviceBuffers> Allocate(size_t bytes) override { return world_.Allocate(bytes); }
  void CopyToDevice(int device, void* dst, const void* src, size_t bytes) override {
    world_.CopyToDevice(device, dst, src, bytes);
  }
  void CopyToHost(int device, void* dst, const void* src, size_t bytes) override {
    world_.CopyToHost(device, dst, src, bytes);
  }
  std::unique_ptr<DeviceTimer> MakeTimer(int marks) override { return world_.MakeTimer(marks); }
  std::string Transport(int device) const override { return world_.Transport(device); }

 private:
  void Swap(const void* send, void* recv, size_t count, DataType type);
  void AllReduce(const CollectiveCall& call);
  void AllGather(const CollectiveCall& call);
  std::byte* Scratch(size_t bytes);

  Communicator& world_;
  const int peer_;
  const int self_;
  const bool host_memory_;
  std::unique_ptr<DeviceBuffers> scratch_;  // grows only
  std::unique_ptr<DeviceBuffers> token_;    // the barrier's two ints
  std::vector<std::byte> mine_, theirs_;    // host copies of device memory
};

}  // namespace fabricscope
