// A fixed ring of completed records: producers never block or allocate (a full ring overwrites
// its oldest record, which the reader counts as dropped), one reader drains it. Each slot
// carries a sequence number written after its record (2i+1 while slot i is being written,
// 2i+2 once it is complete), so the reader takes only complete records and sees overwrites.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace fabricscope::profiler {

template <typename Record>
class RecordRing {
 public:
  // `capacity` is rounded up to a power of two (at least 2).
  explicit RecordRing(size_t capacity) {
    size_t n = 2;
    while (n < capacity) n <<= 1;
    mask_ = n - 1;
    slots_ = std::make_unique<Slot[]>(n);
  }

  size_t capacity() const { return mask_ + 1; }

  // Lock-free and allocation-free: the hot path.
  void Push(const Record& record) {
    const uint64_t i = head_.fetch_add(1, std::memory_order_relaxed);
    Slot& s = slots_[i & mask_];
    s.sequence.store(2 * i + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.record = record;
    s.sequence.store(2 * i + 2, std::memory_order_release);
  }

  // Appends every complete record since the last drain to `out` (one reader at a time);
  // returns how many were lost to overwriting. A record still being written stays for the
  // next drain.
  uint64_t Drain(std::vector<Record>* out) {
    const uint64_t head = head_.load(std::memory_order_acquire);
    uint64_t dropped = 0;
    if (head - tail_ > capacity()) {  // the writers lapped the reader
      dropped += head - tail_ - capacity();
      tail_ = head - capacity();
    }
    for (; tail_ < head; ++tail_) {
      Slot& s = slots_[tail_ & mask_];
      const uint64_t before = s.sequence.load(std::memory_order_acquire);
      if (before < 2 * tail_ + 2) break;  // not yet complete
      Record copy = s.record;
      std::atomic_thread_fence(std::memory_order_acquire);
      if (before != 2 * tail_ + 2 || s.sequence.load(std::memory_order_relaxed) != before) {
        ++dropped;  // overwritten by a later record while or before it was read
        continue;
      }
      out->push_back(copy);
    }
    return dropped;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> sequence{0};
    Record record{};
  };
  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 1;
  std::atomic<uint64_t> head_{0};
  uint64_t tail_ = 0;  // the reader's own
};

}  // namespace fabricscope::profiler
