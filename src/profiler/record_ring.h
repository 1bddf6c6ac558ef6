// A fixed ring of completed records: producers never block or allocate (a full ring overwrites
// its oldest record, which the reader counts as dropped), one reader drains it. Each slot
// carries a sequence number written after its record (2i+1 while slot i is being written,
// 2i+2 once it is complete), so the reader takes only complete records and sees overwrites.
// The record itself is stored as relaxed atomic words (a seqlock in the C++ memory model: a
// plain copy racing with an overwrite is a data race, which ThreadSanitizer reports); on
// x86-64 and AArch64 relaxed loads and stores are the same plain moves.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace fabricscope::profiler {

template <typename Record>
class RecordRing {
  static_assert(std::is_trivially_copyable_v<Record>, "records are copied word by word");

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
    StoreWords(s, record);
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
      const Record copy = LoadWords(s);
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
  static constexpr size_t kWords = (sizeof(Record) + sizeof(uint64_t) - 1) / sizeof(uint64_t);
  struct Slot {
    std::atomic<uint64_t> sequence{0};
    std::array<std::atomic<uint64_t>, kWords> words{};
  };

  static void StoreWords(Slot& s, const Record& record) {
    std::array<uint64_t, kWords> words{};
    std::memcpy(words.data(), &record, sizeof(Record));
    for (size_t w = 0; w < kWords; ++w) s.words[w].store(words[w], std::memory_order_relaxed);
  }

  static Record LoadWords(const Slot& s) {
    std::array<uint64_t, kWords> words{};
    for (size_t w = 0; w < kWords; ++w) words[w] = s.words[w].load(std::memory_order_relaxed);
    Record record;
    std::memcpy(static_cast<void*>(&record), words.data(), sizeof(Record));
    return record;
  }
  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 1;
  std::atomic<uint64_t> head_{0};
  uint64_t tail_ = 0;  // the reader's own
};

}  // namespace fabricscope::profiler
