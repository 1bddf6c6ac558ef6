// A fixed ring of completed records: producers never block or allocate, one reader drains it.
// When the ring is full the NEWEST record is dropped and counted; a record once in the ring
// is never overwritten, so the reader can never get a torn one.
//
// It is D. Vyukov's bounded queue (www.1024cores.net, "Bounded MPMC queue"): each slot has a
// sequence number; a producer claims position `pos` only while its slot's sequence equals
// `pos` (free for this lap), writes the record, then publishes `pos + 1`; the reader takes
// position `pos` only once it reads `pos + 1`, then frees the slot for the next lap with
// `pos + capacity`. The release/acquire pairs order the plain copies, so ThreadSanitizer
// sees no race. The previous design (a seqlock that let a lapping writer overwrite a slot)
// could hand out a record mixed from two writers when both were preempted in the same slot
// (issue 27); tests/profiler/profiler_test.cc, RecordRing.*, preempts writers mid-push
// through the test hook below to show it no longer can.
// Boost.Lockfree's queue was considered: its pop copies the payload before its CAS and may
// discard it, a read racing a write that ThreadSanitizer reports on multi-word records.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "profiler/helgrind_annotations.h"

namespace fabricscope::profiler {

// Test hook: called between a producer's claim and its publication (nullptr in production;
// the tests make it yield so that writers are preempted mid-push).
using RingPushHook = void (*)();

template <typename Record>
class RecordRing {
  static_assert(std::is_trivially_copyable_v<Record>, "records are copied as they are");

 public:
  // `capacity` is rounded up to a power of two (at least 2).
  explicit RecordRing(size_t capacity, RingPushHook hook = nullptr) : hook_(hook) {
    size_t n = 2;
    while (n < capacity) n <<= 1;
    mask_ = n - 1;
    slots_ = std::make_unique<Slot[]>(n);
    for (size_t i = 0; i < n; ++i) {
      MarkAtomics(slots_[i].sequence);
      slots_[i].sequence.store(i, std::memory_order_relaxed);
    }
    MarkAtomics(head_, dropped_);
  }

  size_t capacity() const { return mask_ + 1; }

  // Lock-free and allocation-free: the hot path. False (and counted) when the ring is full.
  bool Push(const Record& record) {
    uint64_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& s = slots_[pos & mask_];
      const uint64_t seq = s.sequence.load(std::memory_order_acquire);
      FABRICSCOPE_HAPPENS_AFTER(&s.sequence);
      const auto diff = static_cast<int64_t>(seq - pos);
      if (diff == 0) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          if (hook_ != nullptr) hook_();
          s.record = record;
          FABRICSCOPE_HAPPENS_BEFORE(&s.sequence);
          s.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {  // the reader has not freed this slot yet: full
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return false;
      } else {
        pos = head_.load(std::memory_order_relaxed);  // another producer took it
      }
    }
  }

  // Appends every published record since the last drain to `out` (one reader at a time);
  // returns how many were dropped since the last drain because the ring was full.
  uint64_t Drain(std::vector<Record>* out) {
    for (;;) {
      Slot& s = slots_[tail_ & mask_];
      if (s.sequence.load(std::memory_order_acquire) != tail_ + 1) break;  // none, or unfinished
      FABRICSCOPE_HAPPENS_AFTER(&s.sequence);
      out->push_back(s.record);
      FABRICSCOPE_HAPPENS_BEFORE(&s.sequence);
      s.sequence.store(tail_ + mask_ + 1, std::memory_order_release);
      ++tail_;
    }
    return dropped_.exchange(0, std::memory_order_relaxed);
  }

 private:
  struct Slot {
    std::atomic<uint64_t> sequence{0};
    Record record{};
  };
  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 1;
  RingPushHook hook_ = nullptr;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> dropped_{0};
  uint64_t tail_ = 0;  // the reader's own
};

}  // namespace fabricscope::profiler
