// TEST DOUBLE: libfake_nccl, NCCL's API over host memory, for tests on machines without a
// GPU. Built twice: as NCCL 2.28 (every call the backend may use) and, with
// FAKE_NCCL_VERSION=21805, as an NCCL 2.18 that lacks ncclAlltoAll/Gather/Scatter and buffer
// registration, so the backend's fallbacks run too.
//
// Real where it can be: ranks meet in a POSIX shared-memory segment named by the unique id,
// so ranks in several processes work as well as threads of one; every collective is computed
// (each rank publishes its contribution to its slot, a barrier, each computes its own output
// from the slots, a barrier), on the stream of the fake runtime, so it completes only when
// that stream runs it. Strict where NCCL is strict, or would hang: buffers must be device
// memory of the communicator's device; one thread driving several ranks must group its calls
// (ncclCommInitRank outside a group waits for every rank, as NCCL does, but gives up after
// FAKE_NCCL_INIT_TIMEOUT_S seconds instead of hanging); symmetric window registration is
// collective. Point-to-point is between the two ranks only, as in NCCL: a group's sends go
// into the sender's slot, each receiver takes its own and says so, and the other ranks do
// not take part (so disjoint pairs of one communicator exchange at the same time, as
// locate's rounds do). Limits: a rank's contribution (a group's sends together) must fit
// its slot (FAKE_NCCL_SLOT_BYTES, default 4 MiB).
//
// FAKE_NCCL_INIT_LOG=FILE appends one line per ncclCommInitRank (ncclCommInitAll makes one
// per device): "<communicator id> <rank> <nranks>", so that tests count the communicators a
// run creates.
//
// Faults on demand: FAKE_NCCL_HANG=rank:op makes that rank's op-th operation never finish
// (until ncclCommAbort), FAKE_NCCL_ASYNC_ERROR=rank:op makes it fail the way a dead peer
// does (ncclCommGetAsyncError reports ncclRemoteError), FAKE_NCCL_HANG_INIT=rank makes that
// rank's ncclCommInitRank never finish. NCCL_DEBUG=INFO writes NCCL-style connection lines
// to NCCL_DEBUG_FILE or stdout. FAKE_GPU_TRACE gets one line per call.
//
// The profiler plugin (NCCL_PROFILER_PLUGIN) is loaded and driven as NCCL 2.30.7 does it
// (fake_profiler.h, which also reads FAKE_NCCL_SLOW_PEER=src:dst:factor, a slow link, and
// FAKE_NCCL_PROFILER_MAX_VERSION); FAKE_NCCL_SLOW=rank:us makes that rank call every collective
// that much later, as a rank with slow compute does, so the others wait for it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fake_gpu.h"
#include "fake_profiler.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" int cudaSetDevice(int device);  // libfake_cudart's
FAKE_EXPORT int ncclGroupStart();
FAKE_EXPORT int ncclGroupEnd();

#ifndef FAKE_NCCL_VERSION
#define FAKE_NCCL_VERSION 22809
#endif

namespace {

using Clock = std::chrono::steady_clock;

// ncclResult_t values (nccl.h).
constexpr int kSuccess = 0;
constexpr int kSystemError = 2;
constexpr int kInternalError = 3;
constexpr int kInvalidArgument = 4;
constexpr int kInvalidUsage = 5;
constexpr int kRemoteError = 6;

// int8 .. bfloat16, and from NCCL 2.24 ncclFloat8e4m3 = 10, ncclFloat8e5m2 = 11 (nccl.h).
constexpr int kNumTypes = FAKE_NCCL_VERSION >= 22400 ? 12 : 10;
constexpr int kNumOps = 5;     // ncclNumOps: sum prod max min avg; created ops are >= 5
constexpr int kPreMulSum = 5;  // Op::op of a user-created premultiplied sum
constexpr size_t kTypeSize[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

constexpr char kIdMagic[8] = {'F', 'A', 'K', 'E', 'N', 'C', 'C', 'L'};
constexpr int kMaxRanks = 256;

struct UniqueId {
  char internal[128];
};
static_assert(sizeof(UniqueId) == 128);

// ---------------------------------------------------------------------------------------
// Element arithmetic, written here rather than borrowed from fabricscope, so that the double
// checks the backend instead of agreeing with it by construction.

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits = 0;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | (static_cast<uint32_t>(exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) == 0xff) {
    return static_cast<uint16_t>(sign | 0x7c00 | (mantissa != 0 ? 0x200 : 0));
  }
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10) return sign;
    mantissa |= 0x800000;
    const int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into the exponent
  return static_cast<uint16_t>(sign | half);
}

float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// FP8 as cuda_fp8.h's __nv_fp8_e4m3 / __nv_fp8_e5m2 hold it: a float becomes the nearest of
// the 256 codes (ties to the even code), values past the largest finite saturate to it
// (__NV_SATFINITE, what their float constructors use), NaN is 0x7f. Written as a search over
// the codes, unlike fabricscope's arithmetic, so that the two are independent.
template <int kExpBits>
struct Fp8Arith {
  using Stored = uint8_t;
  using Wide = float;
  static constexpr int kMantBits = 7 - kExpBits;
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr uint8_t kMaxFinite = kExpBits == 4 ? 0x7e : 0x7b;
  static bool IsNan(uint8_t b) {
    if (kExpBits == 4) return (b & 0x7f) == 0x7f;
    return (b & 0x7c) == 0x7c && (b & 0x03) != 0;
  }
  static float Load(uint8_t b) {
    if (IsNan(b)) return std::nanf("");
    const int e = (b >> kMantBits) & ((1 << kExpBits) - 1);
    const int m = b & ((1 << kMantBits) - 1);
    float v = 0;
    if (kExpBits == 5 && e == 31) {
      v = HUGE_VALF;
    } else if (e == 0) {
      v = std::ldexp(static_cast<float>(m), 1 - kBias - kMantBits);
    } else {
      v = std::ldexp(1.0f + static_cast<float>(m) / (1 << kMantBits), e - kBias);
    }
    return (b & 0x80) != 0 ? -v : v;
  }
  static uint8_t Store(float f) {
    if (std::isnan(f)) return 0x7f;
    const double a = std::fabs(static_cast<double>(f));
    uint8_t best = 0;
    for (uint8_t code = 1; code <= kMaxFinite; ++code) {
      const double d = std::fabs(a - static_cast<double>(Load(code)));
      const double was = std::fabs(a - static_cast<double>(Load(best)));
      if (d < was || (d == was && (code & 1) == 0)) best = code;
    }
    return static_cast<uint8_t>(best | (std::signbit(f) ? 0x80 : 0));
  }
};

// Load widens an element to the type it is computed in; Store narrows back.
template <typename T>
struct Plain {
  using Stored = T;
  using Wide = std::conditional_t<std::is_floating_point_v<T>, T,
                                  std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
  static Wide Load(T v) { return static_cast<Wide>(v); }
  static T Store(Wide w) { return static_cast<T>(w); }
};
struct HalfArith {
  using Stored = uint16_t;
  using Wide = float;
  static float Load(uint16_t v) { return HalfToFloat(v); }
  static uint16_t Store(float w) { return FloatToHalf(w); }
};
struct Bf16Arith {
  using Stored = uint16_t;
  using Wide = float;
  static float Load(uint16_t v) { return Bf16ToFloat(v); }
  static uint16_t Store(float w) { return FloatToBf16(w); }
};

template <typename F>
void WithArith(int type, F&& f) {
  switch (type) {
    case 0:
      return f(Plain<int8_t>{});
    case 1:
      return f(Plain<uint8_t>{});
    case 2:
      return f(Plain<int32_t>{});
    case 3:
      return f(Plain<uint32_t>{});
    case 4:
      return f(Plain<int64_t>{});
    case 5:
      return f(Plain<uint64_t>{});
    case 6:
      return f(HalfArith{});
    case 7:
      return f(Plain<float>{});
    case 8:
      return f(Plain<double>{});
    case 10:
      return f(Fp8Arith<4>{});
    case 11:
      return f(Fp8Arith<5>{});
    default:
      return f(Bf16Arith{});
  }
}

// One element of acc (op) in. Integers wrap, as on a GPU: benchmark iterations keep reducing
// whatever the buffers hold, so sums overflow.
template <typename A>
typename A::Stored Combine(int op, typename A::Stored x_stored, typename A::Stored y_stored) {
  using T = typename A::Stored;
  if constexpr (std::is_integral_v<T> && std::is_same_v<A, Plain<T>>) {
    using Unsigned = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
    const auto x = static_cast<Unsigned>(x_stored);
    const auto y = static_cast<Unsigned>(y_stored);
    switch (op) {
      case 1:
        return static_cast<T>(x * y);
      case 2:
        return x_stored > y_stored ? x_stored : y_stored;
      case 3:
        return x_stored < y_stored ? x_stored : y_stored;
      default:
        return static_cast<T>(x + y);
    }
  } else {
    const auto x = A::Load(x_stored);
    const auto y = A::Load(y_stored);
    switch (op) {
      case 1:
        return A::Store(x * y);
      case 2:
        return A::Store(x > y ? x : y);
      case 3:
        return A::Store(x < y ? x : y);
      default:
        return A::Store(x + y);
    }
  }
}

// acc[i] = acc[i] (op) in[i]; avg sums here and divides once at the end, as NCCL does.
void ReduceInto(int type, int op, std::byte* acc, const std::byte* in, size_t n) {
  WithArith(type, [&](auto arith) {
    using A = decltype(arith);
    using T = typename A::Stored;
    auto* a = reinterpret_cast<T*>(acc);
    const auto* b = reinterpret_cast<const T*>(in);
    for (size_t i = 0; i < n; ++i) a[i] = Combine<A>(op, a[i], b[i]);
  });
}

// A premultiplied sum's first step on this rank's input: data[i] *= scalar, the scalar being
// the bytes ncclRedOpCreatePreMulSum was given, of the op's type.
void Premultiply(int type, std::byte* data, size_t n, uint64_t scalar_bits) {
  WithArith(type, [&](auto arith) {
    using A = decltype(arith);
    using T = typename A::Stored;
    T scalar;
    std::memcpy(&scalar, &scalar_bits, sizeof scalar);
    auto* d = reinterpret_cast<T*>(data);
    for (size_t i = 0; i < n; ++i) d[i] = Combine<A>(1, d[i], scalar);
  });
}

void DivideBy(int type, std::byte* data, size_t n, int nranks) {
  WithArith(type, [&](auto arith) {
    using A = decltype(arith);
    using T = typename A::Stored;
    auto* d = reinterpret_cast<T*>(data);
    for (size_t i = 0; i < n; ++i) {
      d[i] = A::Store(A::Load(d[i]) / static_cast<typename A::Wide>(nranks));
    }
  });
}

// ---------------------------------------------------------------------------------------
// The shared segment a communicator's ranks meet in.

struct SegmentHeader {
  std::atomic<int32_t> joined;
  std::atomic<int32_t> aborted;  // a rank aborted: the others fail as NCCL fails on a dead peer
  std::atomic<uint32_t> barrier_count;  // the streams' barrier
  std::atomic<uint32_t> barrier_generation;
  std::atomic<uint32_t> host_count;  // the barrier of collective host calls (registration)
  std::atomic<uint32_t> host_generation;
  int32_t pids[kMaxRanks];
  int32_t devices[kMaxRanks];
  // Point-to-point: messages rank s has put in its slot for rank d, and of them, those d
  // has taken. A rank rewrites its slot only once every message in it has been taken.
  std::atomic<uint32_t> posted[kMaxRanks][kMaxRanks];
  std::atomic<uint32_t> taken[kMaxRanks][kMaxRanks];
};

struct SlotHeader {
  uint64_t bytes;
};

size_t SlotBytes() {
  return static_cast<size_t>(fake_gpu::EnvInt("FAKE_NCCL_SLOT_BYTES", 4 << 20));
}

class Clique {
 public:
  Clique(std::string name, void* base, size_t total, size_t slot_bytes)
      : name_(std::move(name)),
        base_(static_cast<std::byte*>(base)),
        total_(total),
        slot_bytes_(slot_bytes) {}
  ~Clique() { ::munmap(base_, total_); }

  // The name is needed only until every rank has mapped the segment; a crashed or failed
  // run must not leave it in /dev/shm.
  void Unlink() const { ::shm_unlink(name_.c_str()); }

  static size_t HeaderBytes() { return (sizeof(SegmentHeader) + 4095) / 4096 * 4096; }
  static size_t SlotStride(size_t slot_bytes) { return sizeof(SlotHeader) + slot_bytes; }

  SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(base_); }
  SlotHeader* slot(int rank) const {
    return reinterpret_cast<SlotHeader*>(base_ + HeaderBytes() +
                                         static_cast<size_t>(rank) * SlotStride(slot_bytes_));
  }
  std::byte* data(int rank) const { return reinterpret_cast<std::byte*>(slot(rank) + 1); }
  size_t slot_bytes() const { return slot_bytes_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::byte* base_;
  size_t total_;
  size_t slot_bytes_;
};

std::string SegmentName(const UniqueId& id) {
  uint64_t token = 0;
  std::memcpy(&token, id.internal + 8, sizeof token);
  char name[64];
  std::snprintf(name, sizeof name, "/fabricscope-fake-nccl-%016llx",
                static_cast<unsigned long long>(token));
  return name;
}

// Every rank maps the same segment; the first to come creates it, zero-filled, which is the
// initial state of every counter.
std::shared_ptr<Clique> AttachClique(const UniqueId& id, int nranks, std::string* error) {
  const std::string name = SegmentName(id);
  const size_t slot_bytes = SlotBytes();
  const size_t total =
      Clique::HeaderBytes() + static_cast<size_t>(nranks) * Clique::SlotStride(slot_bytes);
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    *error = "shm_open " + name + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (static_cast<size_t>(st.st_size) < total &&
                                ::ftruncate(fd, static_cast<off_t>(total)) != 0)) {
    *error = "sizing " + name + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    *error = "mmap " + name + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::make_shared<Clique>(name, base, total, slot_bytes);
}

// ---------------------------------------------------------------------------------------
// Communicators.

// "rank:op" from a FAKE_NCCL_* variable: the op-th operation (from 1) of that rank.
int InjectionFor(const char* variable, int rank) {
  const char* v = std::getenv(variable);
  if (v == nullptr) return 0;
  int r = -1, op = 0;
  if (std::sscanf(v, "%d:%d", &r, &op) != 2 || r != rank) return 0;
  return op;
}

struct CommImpl {
  int rank = 0;
  int nranks = 0;
  int device = 0;
  UniqueId id{};
  std::shared_ptr<Clique> clique;
  bool joined = false;
  std::atomic<bool> aborted{false};
  std::atomic<int> async_error{kSuccess};
  std::mutex error_mutex;
  std::string last_error;
  std::atomic<uint64_t> ops{0};
  int hang_at = 0;
  int fail_at = 0;
  int slow_us = 0;                          // FAKE_NCCL_SLOW
  fake_profiler::Comm* profiler = nullptr;  // finalized when the last task lets go
  std::vector<uint32_t> received;           // messages taken from each peer (the stream's)
  std::vector<int> unread;                  // peers the slot's messages are for
  // ncclRedOpCreatePreMulSum's ops, by index (comm->userRedOps); freed ones are reused.
  struct UserOp {
    int type = 0;
    uint64_t scalar = 0;
    bool allocated = false;
  };
  std::mutex user_ops_mutex;
  std::vector<UserOp> user_ops;

  CommImpl() = default;
  CommImpl(const CommImpl&) = delete;
  CommImpl& operator=(const CommImpl&) = delete;
  ~CommImpl() { fake_profiler::Finalize(profiler); }

  void SetError(const std::string& message) {
    const std::lock_guard lock(error_mutex);
    last_error = message;
  }
};

}  // namespace

// The opaque communicator handle.
struct ncclComm {
  std::shared_ptr<CommImpl> impl;
};

namespace {

thread_local std::string thread_last_error;

int Fail(int code, const std::string& message, CommImpl* comm = nullptr) {
  thread_last_error = "fake nccl: " + message;
  if (comm != nullptr) comm->SetError(thread_last_error);
  fake_gpu::Trace("error " + thread_last_error);
  return code;
}

// Waits for `ready`, unless this communicator or a peer aborts, or the deadline passes.
template <typename F>
int WaitFor(CommImpl& c, F&& ready, Clock::time_point deadline = Clock::time_point::max()) {
  for (int spins = 0; !ready(); ++spins) {
    if (c.aborted.load()) return kInvalidUsage;
    if (c.clique->header()->aborted.load() != 0) return kRemoteError;
    if (Clock::now() > deadline) return kSystemError;
    if (spins < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return kSuccess;
}

int Barrier(CommImpl& c) {
  SegmentHeader* h = c.clique->header();
  const uint32_t generation = h->barrier_generation.load();
  if (h->barrier_count.fetch_add(1) + 1 == static_cast<uint32_t>(c.nranks)) {
    h->barrier_count.store(0);
    h->barrier_generation.fetch_add(1);
    return kSuccess;
  }
  return WaitFor(c, [&] { return h->barrier_generation.load() != generation; });
}

bool AsksForInfo() {
  const char* level = std::getenv("NCCL_DEBUG");
  if (level == nullptr) return false;
  std::string upper(level);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return upper == "INFO" || upper == "TRACE";
}

// NCCL's INFO lines about this rank's connections, where NCCL would write them.
void LogConnections(const CommImpl& c) {
  if (!AsksForInfo() || c.nranks < 2) return;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const SegmentHeader* h = c.clique->header();
  const int next = (c.rank + 1) % c.nranks;
  const char* via = h->pids[next] == ::getpid() ? "P2P/direct pointer" : "SHM/direct/direct";
  std::string text;
  char line[512];
  const auto tid = static_cast<int>(::gettid());
  for (int channel = 0; channel < 2; ++channel) {
    std::snprintf(
        line, sizeof line, "%s:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via %s\n",
        host, ::getpid(), tid, c.device, channel, c.rank, c.device, next, h->devices[next], via);
    text += line;
  }
  std::snprintf(line, sizeof line,
                "%s:%d:%d [%d] NCCL INFO ncclCommInitRank comm %p rank %d nranks %d cudaDev %d - "
                "Init COMPLETE\n",
                host, ::getpid(), tid, c.device, static_cast<const void*>(&c), c.rank, c.nranks,
                c.device);
  text += line;
  const char* file = std::getenv("NCCL_DEBUG_FILE");
  const int fd = file != nullptr && file[0] != '\0'
                     ? ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
                     : STDOUT_FILENO;
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t n = ::write(fd, text.data(), text.size());
  if (fd != STDOUT_FILENO) ::close(fd);
}

// First half of ncclCommInitRank: take this rank's place in the segment. The rank named by
// FAKE_NCCL_HANG_INIT never does: it stays here, as a process stopped after the rendezvous
// would, and its peers wait for it.
int Join(CommImpl& c) {
  if (const char* v = std::getenv("FAKE_NCCL_HANG_INIT"); v != nullptr && std::atoi(v) == c.rank) {
    fake_gpu::Trace("stuck rank=" + std::to_string(c.rank) + " ncclCommInitRank");
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::string error;
  c.clique = AttachClique(c.id, c.nranks, &error);
  if (!c.clique) return Fail(kSystemError, error);
  SegmentHeader* h = c.clique->header();
  h->pids[c.rank] = ::getpid();
  h->devices[c.rank] = c.device;
  if (h->joined.fetch_add(1) + 1 == c.nranks) c.clique->Unlink();
  return kSuccess;
}

// Second half: wait for every rank, as NCCL's bootstrap does (but not forever).
int AwaitPeers(CommImpl& c) {
  const auto deadline =
      Clock::now() + std::chrono::seconds(fake_gpu::EnvInt("FAKE_NCCL_INIT_TIMEOUT_S", 30));
  SegmentHeader* h = c.clique->header();
  const int r = WaitFor(
      c, [&] { return h->joined.load() >= c.nranks; }, deadline);
  if (r != kSuccess) {
    c.clique->Unlink();
    return Fail(r,
                "ncclCommInitRank: rank " + std::to_string(c.rank) + ": only " +
                    std::to_string(h->joined.load()) + " of " + std::to_string(c.nranks) +
                    " ranks joined (a thread that inits several ranks must group the calls)",
                &c);
  }
  c.joined = true;
  LogConnections(c);
  return kSuccess;
}

// ---------------------------------------------------------------------------------------
// Operations.

enum class Kind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kGather,
  kScatter,
  kPointToPoint
};

struct Transfer {
  bool send = false;
  int peer = 0;
  size_t bytes = 0;
  std::byte* host = nullptr;
};

struct Op {
  Kind kind = Kind::kAllReduce;
  std::shared_ptr<CommImpl> comm;
  void* stream = nullptr;
  const std::byte* send = nullptr;  // host views of the device buffers
  std::byte* recv = nullptr;
  size_t count = 0;
  int type = 0;
  int op = 0;
  uint64_t scalar = 0;  // kPreMulSum: this rank's scalar, the type's bytes
  int root = 0;
  std::vector<Transfer> transfers;  // kPointToPoint
  std::string name;
  std::vector<fake_profiler::Task> tasks;  // NCCL's tasks of it, for the profiler
};

// Before this rank rewrites its slot: every message in it has been taken.
int AwaitSlotFree(CommImpl& c) {
  SegmentHeader* h = c.clique->header();
  for (const int d : c.unread) {
    const int rc = WaitFor(c, [&] {
      return h->taken[c.rank][d].load(std::memory_order_acquire) >=
             h->posted[c.rank][d].load(std::memory_order_relaxed);
    });
    if (rc != kSuccess) return rc;
  }
  c.unread.clear();
  return kSuccess;
}

// The message number `want` (from 1) that rank `from` has posted for rank `to`, in its slot:
// its slot holds its last group's sends, the last `posted` of them to `to` numbered up to
// `posted`. Null when the slot does not hold it.
const Transfer* FindMessage(const Clique& q, int from, int to, uint32_t want, uint32_t posted,
                            Transfer* out) {
  const std::byte* slot = q.data(from);
  uint64_t sends = 0;
  std::memcpy(&sends, slot, sizeof sends);
  std::vector<uint64_t> list(2 * sends);
  std::memcpy(list.data(), slot + sizeof(uint64_t), list.size() * sizeof(uint64_t));
  uint32_t to_me = 0;
  for (uint64_t k = 0; k < sends; ++k) to_me += list[2 * k] == static_cast<uint64_t>(to) ? 1 : 0;
  if (want + to_me <= posted) return nullptr;
  uint32_t skip = want - 1 - (posted - to_me);
  size_t data_at = (1 + list.size()) * sizeof(uint64_t);
  for (uint64_t k = 0; k < sends; ++k) {
    if (list[2 * k] == static_cast<uint64_t>(to) && skip-- == 0) {
      out->bytes = list[2 * k + 1];
      out->host = const_cast<std::byte*>(slot + data_at);
      return out;
    }
    data_at += list[2 * k + 1];
  }
  return nullptr;
}

// A group's sends and receives on one communicator: the sends go into this rank's slot
// ([sends][peer, bytes] x sends, then the data of each send, in order), then each receive
// waits for its sender to have posted it and takes it. Only the two ranks of a transfer
// take part.
int ExecutePointToPoint(const Op& o) {
  CommImpl& c = *o.comm;
  const Clique& q = *c.clique;
  SegmentHeader* h = q.header();
  const int r = c.rank;
  if (int rc = AwaitSlotFree(c); rc != kSuccess) return rc;
  std::vector<uint64_t> header{0};
  std::map<int, uint32_t> sends_to;
  for (const Transfer& t : o.transfers) {
    if (!t.send) continue;
    ++header[0];
    header.push_back(static_cast<uint64_t>(t.peer));
    header.push_back(t.bytes);
    ++sends_to[t.peer];
  }
  const auto* head = reinterpret_cast<const std::byte*>(header.data());
  std::vector<std::byte> packed(head, head + header.size() * sizeof(uint64_t));
  for (const Transfer& t : o.transfers) {
    if (t.send) packed.insert(packed.end(), t.host, t.host + t.bytes);
  }
  if (packed.size() > q.slot_bytes()) {
    c.SetError(
        "fake nccl: " + o.name + " needs " + std::to_string(packed.size()) +
        " bytes of staging, more than FAKE_NCCL_SLOT_BYTES=" + std::to_string(q.slot_bytes()));
    c.async_error.store(kInvalidUsage);
    return kInvalidUsage;
  }
  if (!sends_to.empty()) {
    q.slot(r)->bytes = packed.size();
    std::memcpy(q.data(r), packed.data(), packed.size());
  }
  // Each peer's count at once: a receiver finds the whole group's messages for it.
  for (const auto& [peer, n] : sends_to) {
    c.unread.push_back(peer);
    h->posted[r][peer].fetch_add(n, std::memory_order_release);
  }
  for (const Transfer& t : o.transfers) {
    if (t.send) continue;
    const uint32_t want = c.received[static_cast<size_t>(t.peer)] + 1;
    const int rc =
        WaitFor(c, [&] { return h->posted[t.peer][r].load(std::memory_order_acquire) >= want; });
    if (rc != kSuccess) return rc;
    Transfer message;
    if (FindMessage(q, t.peer, r, want, h->posted[t.peer][r].load(), &message) == nullptr) {
      c.SetError("fake nccl: rank " + std::to_string(r) + " receives from " +
                 std::to_string(t.peer) + ", whose message is not in its slot");
      c.async_error.store(kInvalidUsage);
      return kInvalidUsage;
    }
    if (message.bytes != t.bytes) {
      c.SetError("fake nccl: rank " + std::to_string(r) + " receives " + std::to_string(t.bytes) +
                 " bytes from " + std::to_string(t.peer) + ", which sends " +
                 std::to_string(message.bytes));
      c.async_error.store(kInvalidUsage);
    } else if (t.bytes > 0) {
      std::memcpy(t.host, message.host, t.bytes);
    }
    c.received[static_cast<size_t>(t.peer)] = want;
    h->taken[t.peer][r].store(want, std::memory_order_release);
  }
  return kSuccess;
}

// What a rank publishes in its slot for a collective: its data and how many bytes.
std::pair<const std::byte*, size_t> Contribution(const Op& o, size_t chunk) {
  const int n = o.comm->nranks;
  const int r = o.comm->rank;
  const std::byte* contribution = nullptr;
  size_t bytes = 0;
  switch (o.kind) {
    case Kind::kAllReduce:
    case Kind::kReduce:
    case Kind::kAllGather:
    case Kind::kGather:
      contribution = o.send;
      bytes = chunk;
      break;
    case Kind::kReduceScatter:
    case Kind::kAlltoAll:
      contribution = o.send;
      bytes = chunk * static_cast<size_t>(n);
      break;
    case Kind::kBroadcast:
      if (r == o.root) contribution = o.send, bytes = chunk;
      break;
    case Kind::kScatter:
      if (r == o.root) contribution = o.send, bytes = chunk * static_cast<size_t>(n);
      break;
    case Kind::kPointToPoint:
      break;  // ExecutePointToPoint
  }
  return {contribution, bytes};
}

// This rank's part of one operation; runs on the stream.
int Execute(const Op& o) {
  CommImpl& c = *o.comm;
  const Clique& q = *c.clique;
  const int n = c.nranks;
  const int r = c.rank;
  const size_t e = kTypeSize[o.type];
  const size_t chunk = o.count * e;
  const uint64_t index = c.ops.fetch_add(1) + 1;
  if (index == static_cast<uint64_t>(c.hang_at) || index == static_cast<uint64_t>(c.fail_at)) {
    if (index == static_cast<uint64_t>(c.fail_at)) {
      c.SetError("fake nccl: injected failure (FAKE_NCCL_ASYNC_ERROR): peer unreachable");
      c.async_error.store(kRemoteError);
    }
    fake_gpu::Trace("stuck rank=" + std::to_string(r) + " op=" + std::to_string(index) + " " +
                    o.name);
    // A kernel that never finishes: only ncclCommAbort ends it.
    while (!c.aborted.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return kInvalidUsage;
  }

  if (o.kind == Kind::kPointToPoint) return ExecutePointToPoint(o);

  // What this rank publishes.
  const auto [contribution, bytes] = Contribution(o, chunk);
  if (int rc = AwaitSlotFree(c); rc != kSuccess) return rc;
  if (bytes > q.slot_bytes()) {
    c.SetError(
        "fake nccl: " + o.name + " needs " + std::to_string(bytes) +
        " bytes of staging, more than FAKE_NCCL_SLOT_BYTES=" + std::to_string(q.slot_bytes()));
    c.async_error.store(kInvalidUsage);
    return kInvalidUsage;
  }
  q.slot(r)->bytes = bytes;
  if (bytes > 0) std::memcpy(q.data(r), contribution, bytes);
  // Each rank's input is multiplied by its own scalar before the sum (ncclDevPreMulSum).
  if (o.op == kPreMulSum) Premultiply(o.type, q.data(r), bytes / e, o.scalar);
  if (int rc = Barrier(c); rc != kSuccess) return rc;

  switch (o.kind) {
    case Kind::kAllReduce:
    case Kind::kReduce:
    case Kind::kReduceScatter: {
      if (o.kind == Kind::kReduce && r != o.root) break;
      const size_t offset = o.kind == Kind::kReduceScatter ? chunk * static_cast<size_t>(r) : 0;
      std::vector<std::byte> acc(q.data(0) + offset, q.data(0) + offset + chunk);
      const int combine = o.op == kPreMulSum ? 0 : o.op;  // then summed
      for (int p = 1; p < n; ++p)
        ReduceInto(o.type, combine, acc.data(), q.data(p) + offset, o.count);
      if (o.op == 4) DivideBy(o.type, acc.data(), o.count, n);
      if (chunk > 0) std::memcpy(o.recv, acc.data(), chunk);
      break;
    }
    case Kind::kAllGather:
    case Kind::kGather:
      if (o.kind == Kind::kGather && r != o.root) break;
      for (int p = 0; p < n; ++p) {
        if (chunk > 0) std::memcpy(o.recv + chunk * static_cast<size_t>(p), q.data(p), chunk);
      }
      break;
    case Kind::kBroadcast:
      if (chunk > 0) std::memmove(o.recv, q.data(o.root), chunk);
      break;
    case Kind::kScatter:
      if (chunk > 0) std::memmove(o.recv, q.data(o.root) + chunk * static_cast<size_t>(r), chunk);
      break;
    case Kind::kAlltoAll:
      for (int p = 0; p < n; ++p) {
        if (chunk > 0) {
          std::memcpy(o.recv + chunk * static_cast<size_t>(p),
                      q.data(p) + chunk * static_cast<size_t>(r), chunk);
        }
      }
      break;
    case Kind::kPointToPoint:
      break;
  }
  return Barrier(c);
}

// ---------------------------------------------------------------------------------------
// Groups: calls between ncclGroupStart and the outermost ncclGroupEnd are deferred, then
// launched together, as NCCL does.

struct GroupState {
  int depth = 0;
  std::vector<std::shared_ptr<CommImpl>> inits;
  std::vector<std::function<int()>> collective_host_calls;  // symmetric registrations
  std::vector<Op> ops;
  int error = kSuccess;
};
thread_local GroupState group;
// Outside groups: the communicator each clique was last driven through by this thread.
thread_local std::map<std::string, const CommImpl*> ungrouped_driver;

bool Grouped() { return group.depth > 0; }

// A communicator that failed or was aborted runs no more kernels.
bool Failed(const CommImpl& c) { return c.async_error.load() != kSuccess || c.aborted.load(); }

// The kernel's run on the stream: KernelCh events around the work, ProxyOps finished after.
void RunKernel(const Op& op, const std::shared_ptr<fake_profiler::Flight>& flight) {
  CommImpl& c = *op.comm;
  fake_profiler::KernelBegin(flight);
  const int rc = Execute(op);
  fake_profiler::KernelEnd(flight);
  if (rc != kSuccess && !c.aborted.load() && c.async_error.load() == kSuccess) {
    c.SetError("fake nccl: " + op.name + ": a peer aborted");
    c.async_error.store(rc);
  }
}

// NVIDIA/nccl v2.30.7-1 (73cf112295c33aee2b895f329f592f2a9b4b0f97), src/group.cc doLaunches:
// per plan ncclLaunchKernel, then ncclLaunchKernelAfter_NoCuda (src/enqueue.cc), which calls
// hostStreamPlanTask (the Group and Coll events, the proxy ops) directly on the launching
// thread unless ncclLaunchPrepare set plan->isHostCbEnq: only for a persistent plan (a graph
// being captured), CUDA_LAUNCH_BLOCKING, or a persistent plan still running, does it run as
// a host callback on the stream (hostStreamPlanCallback), once per replay. So a rank whose
// host calls late starts its Coll late even when its stream is busy, as on a GPU.
void Launch(Op op) {
  fake_profiler::KernelLaunch(op.comm->profiler, op.tasks);
  CommImpl& c = *op.comm;
  // A captured plan's host half runs on the stream, once per replay; any other's here, before
  // the kernel has done anything (the fake queues the kernel after it so that the stream
  // thread sees the plan's proxy ops: the plugin sees the same order of events either way).
  const bool captured = fake_gpu::Capturing(op.stream, c.device);
  std::shared_ptr<fake_profiler::Flight> flight;
  if (!captured && !Failed(c)) flight = fake_profiler::PlanStart(c.profiler, c.rank, op.tasks);
  auto task = std::make_shared<const fake_gpu::Task>([op, captured, flight] {
    CommImpl& cc = *op.comm;
    if (Failed(cc)) return;  // a failed comm stops
    RunKernel(op, captured ? fake_profiler::PlanStart(cc.profiler, cc.rank, op.tasks) : flight);
  });
  fake_gpu::Enqueue(op.stream, c.device, std::move(task));
}

// An operation, checked as NCCL checks its arguments, then launched or deferred.
int Submit(Op op) {
  CommImpl& c = *op.comm;
  if (c.aborted.load()) return Fail(kInvalidUsage, op.name + " on an aborted communicator", &c);
  fake_gpu::Trace(op.name + " rank=" + std::to_string(c.rank) +
                  " count=" + std::to_string(op.count) + " type=" + std::to_string(op.type) +
                  " grouped=" + (Grouped() ? "1" : "0"));
  if (Grouped()) {
    group.ops.push_back(std::move(op));
    return kSuccess;
  }
  // One thread driving two ranks of a communicator without a group deadlocks on real NCCL.
  auto& driver = ungrouped_driver[c.clique->name()];
  if (driver != nullptr && driver != &c) {
    return Fail(kInvalidUsage,
                "one thread drives ranks of one communicator without ncclGroupStart/End (" +
                    op.name + " on rank " + std::to_string(c.rank) + "): real NCCL can hang here",
                &c);
  }
  driver = &c;
  Launch(std::move(op));
  return kSuccess;
}

// NVIDIA/nccl v2.30.7-1 src/enqueue.cc, ncclEnqueueCheck: the call's implicit
// ncclGroupStartInternal, its tasks appended (taskAppend, where the GroupApi and CollApi or
// P2pApi events are made, at NCCL's group depth: the user's groups and this implicit one), then
// ncclGroupEndInternal (src/group.cc): GroupEndApiStart before the launch, which happens here
// when the call is not inside a user's group, and the GroupApi's stop after it.
int Enqueue(Op o) {
  CommImpl& c = *o.comm;
  fake_profiler::EnqueueBegin();
  for (fake_profiler::Task& t : o.tasks) {
    fake_profiler::Append(c.profiler, c.rank, &t, group.depth + 1);
  }
  fake_profiler::GroupEndBegin();
  const int rc = Submit(std::move(o));
  fake_profiler::GroupEndExit();
  return rc;
}

int FlushGroup() {
  GroupState g = std::move(group);
  group = GroupState{};
  if (g.error != kSuccess) return g.error;
  for (const auto& c : g.inits) {
    if (int rc = Join(*c); rc != kSuccess) return rc;
  }
  for (const auto& c : g.inits) {
    if (int rc = AwaitPeers(*c); rc != kSuccess) return rc;
  }
  // Collective host calls of several ranks must progress together: one thread each.
  if (!g.collective_host_calls.empty()) {
    std::vector<int> results(g.collective_host_calls.size(), kSuccess);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < g.collective_host_calls.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = g.collective_host_calls[i](); });
    }
    for (auto& t : threads) t.join();
    for (int rc : results) {
      if (rc != kSuccess) return rc;
    }
  }
  // A group's sends and receives on one communicator are one exchange, at the place of the
  // first of them.
  std::vector<Op> merged;
  for (Op& op : g.ops) {
    if (op.kind == Kind::kPointToPoint) {
      auto it = std::find_if(merged.begin(), merged.end(), [&](const Op& m) {
        return m.kind == Kind::kPointToPoint && m.comm == op.comm;
      });
      if (it != merged.end()) {
        it->transfers.insert(it->transfers.end(), op.transfers.begin(), op.transfers.end());
        it->tasks.insert(it->tasks.end(), op.tasks.begin(), op.tasks.end());
        continue;
      }
    }
    merged.push_back(std::move(op));
  }
  for (Op& op : merged) Launch(std::move(op));
  return kSuccess;
}

// The fakes' view of a device buffer of the communicator's device, or an error.
int View(CommImpl& c, const void* ptr, size_t bytes, const char* what, const std::string& call,
         std::byte** out) {
  *out = nullptr;
  if (bytes == 0) return kSuccess;
  int device = -1;
  void* host = fake_gpu::HostView(ptr, bytes, &device);
  if (host == nullptr) {
    char text[128];
    std::snprintf(text, sizeof text, "%p", ptr);
    return Fail(kInvalidArgument,
                call + ": " + what + " " + text + " (" + std::to_string(bytes) +
                    " bytes) is not device memory",
                &c);
  }
  if (device != c.device) {
    return Fail(kInvalidArgument,
                call + ": " + what + " is on device " + std::to_string(device) +
                    ", the communicator of rank " + std::to_string(c.rank) + " on device " +
                    std::to_string(c.device),
                &c);
  }
  *out = static_cast<std::byte*>(host);
  return kSuccess;
}

CommImpl* Usable(ncclComm* comm) {
  if (comm == nullptr || !comm->impl || !comm->impl->joined) return nullptr;
  return comm->impl.get();
}

// ncclFuncToString's names.
const char* NcclFuncName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce:
      return "AllReduce";
    case Kind::kAllGather:
      return "AllGather";
    case Kind::kReduceScatter:
      return "ReduceScatter";
    case Kind::kBroadcast:
      return "Broadcast";
    case Kind::kReduce:
      return "Reduce";
    case Kind::kAlltoAll:
      return "AlltoAll";
    case Kind::kGather:
      return "Gather";
    case Kind::kScatter:
      return "Scatter";
    default:
      return "SendRecv";
  }
}

// The tasks NCCL 2.30 makes of a collective call (src/enqueue.cc): collTaskAppend gives
// AllGather and Broadcast their count in bytes as ncclInt8, and Broadcast (under the default
// NCCL_ALLGATHERV_ENABLE=1) becomes an AllGatherV task without a Coll event; ncclEnqueueCheck
// turns AlltoAll, Gather and Scatter into Send and Recv P2p tasks (p2pTaskAppend).
std::vector<fake_profiler::Task> TasksOf(Kind kind, const CommImpl& c, const void* send, void* recv,
                                         size_t count, int type, int root) {
  std::vector<fake_profiler::Task> tasks;
  fake_profiler::Task t;
  t.func = NcclFuncName(kind);
  t.send = send;
  t.recv = recv;
  t.count = count;
  t.root = root;
  t.datatype = fake_profiler::DatatypeName(type);
  if (kind == Kind::kAllGather || kind == Kind::kBroadcast) {
    t.count = count * kTypeSize[type];
    t.datatype = "ncclInt8";
  }
  t.coll_event = kind != Kind::kBroadcast;
  const bool p2p = kind == Kind::kAlltoAll || kind == Kind::kGather || kind == Kind::kScatter;
  if (!p2p) {
    tasks.push_back(t);
    return tasks;
  }
  for (int r = 0; r < c.nranks; ++r) {
    const bool sends = kind == Kind::kAlltoAll || (kind == Kind::kGather) ||
                       (kind == Kind::kScatter && c.rank == root);
    const bool receives = kind == Kind::kAlltoAll || (kind == Kind::kScatter) ||
                          (kind == Kind::kGather && c.rank == root);
    fake_profiler::Task p = t;
    p.p2p = true;
    p.channels = 1;
    p.root = r;
    if (sends && (kind != Kind::kGather || r == root)) {
      p.func = "Send";
      tasks.push_back(p);
    }
    if (receives && (kind != Kind::kScatter || r == root)) {
      p.func = "Recv";
      tasks.push_back(p);
    }
  }
  return tasks;
}

// A created op's handle, as NCCL scrambles it with the communicator's address so that
// handles of two communicators do not collide (ncclUserRedOpMangle, src/include/comm.h:895-905
// at v2.30.7-1); its own inverse.
int MangleUserOp(const void* comm, int op) {
  if (op < kNumOps) return op;
  uint64_t h = reinterpret_cast<uint64_t>(comm);
  h ^= h >> 32;
  h *= 0x9e3779b97f4a7c13u;
  h >>= 32;
  h &= 0x7fffffffu;  // ncclMaxRedOp
  const int op1 = static_cast<int>(h) ^ op;
  return op1 < kNumOps ? op : op1;
}

// The op a collective reduces with: a built-in one, or a premultiplied sum this communicator
// created for this type (hostToDevRedOp, src/enqueue.cc:2479-2582 at v2.30.7-1).
int ResolveOp(CommImpl& c, int op, int type, int* resolved, uint64_t* scalar) {
  if (op >= 0 && op < kNumOps) {
    *resolved = op;
    return kSuccess;
  }
  const int ix = MangleUserOp(&c, op) - kNumOps;
  const std::lock_guard lock(c.user_ops_mutex);
  if (ix < 0 || static_cast<size_t>(ix) >= c.user_ops.size() || !c.user_ops[ix].allocated) {
    return Fail(kInvalidArgument, "bad reduction op", &c);
  }
  if (c.user_ops[ix].type != type) {
    return Fail(kInvalidArgument,
                "Data type supplied to user-created ncclRedOp_t does not match type given to "
                "reduction operation",
                &c);
  }
  *resolved = kPreMulSum;
  *scalar = c.user_ops[ix].scalar;
  return kSuccess;
}

// Common checks and buffer views of a collective.
int Collective(Kind kind, const char* name, const void* send, void* recv, size_t count, int type,
               int op, int root, ncclComm* comm, void* stream) {
  CommImpl* c = Usable(comm);
  if (c == nullptr) return Fail(kInvalidArgument, std::string(name) + ": invalid communicator");
  if (type < 0 || type >= kNumTypes) return Fail(kInvalidArgument, "bad datatype", c);
  uint64_t scalar = 0;
  if (int rc = ResolveOp(*c, op, type, &op, &scalar); rc != kSuccess) return rc;
  if (root < 0 || root >= c->nranks) return Fail(kInvalidArgument, "bad root", c);
  const size_t chunk = count * kTypeSize[type];
  const size_t all = chunk * static_cast<size_t>(c->nranks);
  const bool is_root = c->rank == root;
  size_t send_bytes = chunk;
  size_t recv_bytes = chunk;
  switch (kind) {
    case Kind::kAllGather:
      recv_bytes = all;
      break;
    case Kind::kReduceScatter:
      send_bytes = all;
      break;
    case Kind::kAlltoAll:
      send_bytes = recv_bytes = all;
      break;
    case Kind::kBroadcast:
      send_bytes = is_root ? chunk : 0;
      break;
    case Kind::kReduce:
      recv_bytes = is_root ? chunk : 0;
      break;
    case Kind::kGather:
      recv_bytes = is_root ? all : 0;
      break;
    case Kind::kScatter:
      send_bytes = is_root ? all : 0;
      break;
    default:
      break;
  }
  Op o;
  o.kind = kind;
  o.comm = comm->impl;
  o.stream = stream;
  o.count = count;
  o.type = type;
  o.op = op;
  o.scalar = scalar;
  o.root = root;
  o.name = name;
  std::byte* s = nullptr;
  if (int rc = View(*c, send, send_bytes, "sendbuff", name, &s); rc != kSuccess) return rc;
  o.send = s;
  if (int rc = View(*c, recv, recv_bytes, "recvbuff", name, &o.recv); rc != kSuccess) return rc;
  if (c->slow_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(c->slow_us));
  o.tasks = TasksOf(kind, *c, send, recv, count, type, root);
  return Enqueue(std::move(o));
}

int PointToPoint(bool is_send, const char* name, const void* buffer, size_t count, int type,
                 int peer, ncclComm* comm, void* stream) {
  CommImpl* c = Usable(comm);
  if (c == nullptr) return Fail(kInvalidArgument, std::string(name) + ": invalid communicator");
  if (type < 0 || type >= kNumTypes) return Fail(kInvalidArgument, "bad datatype", c);
  if (peer < 0 || peer >= c->nranks) return Fail(kInvalidArgument, "bad peer", c);
  Transfer t;
  t.send = is_send;
  t.peer = peer;
  t.bytes = count * kTypeSize[type];
  if (int rc = View(*c, buffer, t.bytes, is_send ? "sendbuff" : "recvbuff", name, &t.host);
      rc != kSuccess) {
    return rc;
  }
  Op o;
  o.kind = Kind::kPointToPoint;
  o.comm = comm->impl;
  o.stream = stream;
  o.count = count;
  o.type = type;
  o.name = name;
  o.transfers.push_back(t);
  // src/enqueue.cc, p2pTaskAppend: one P2p task towards the peer.
  fake_profiler::Task task;
  task.func = is_send ? "Send" : "Recv";
  task.p2p = true;
  task.root = peer;
  task.count = count;
  task.datatype = fake_profiler::DatatypeName(type);
  task.channels = 1;
  if (is_send) {
    task.send = buffer;
  } else {
    task.recv = const_cast<void*>(buffer);
  }
  o.tasks.push_back(task);
  return Enqueue(std::move(o));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The API.

FAKE_EXPORT int ncclGetVersion(int* version) {
  *version = FAKE_NCCL_VERSION;
  return kSuccess;
}

#if FAKE_NCCL_VERSION >= 21100
// As ncclRedOpCreatePreMulSum and ncclRedOpDestroy (src/enqueue.cc:3174-3246 at v2.30.7-1):
// the scalar is copied at creation from host memory (ncclScalarHostImmediate) in the op's
// type; the handle is ncclNumOps + index, mangled; destroying a built-in, garbage or unknown
// op is ncclInvalidArgument with NCCL's WARN text. A scalar in device memory
// (ncclScalarDevice) is not modelled: the fake refuses it.
FAKE_EXPORT int ncclRedOpCreatePreMulSum(int* op, void* scalar, int datatype, int residence,
                                         ncclComm* comm) {
  CommImpl* c = Usable(comm);
  if (c == nullptr) return Fail(kInvalidArgument, "ncclRedOpCreatePreMulSum: invalid communicator");
  if (datatype < 0 || datatype >= kNumTypes) return Fail(kInternalError, "bad datatype", c);
  if (residence != 1) {
    return Fail(kInvalidArgument, "fake nccl: only ncclScalarHostImmediate scalars are modelled",
                c);
  }
  CommImpl::UserOp user;
  user.type = datatype;
  user.allocated = true;
  std::memcpy(&user.scalar, scalar, kTypeSize[datatype]);
  const std::lock_guard lock(c->user_ops_mutex);
  size_t ix = 0;
  while (ix < c->user_ops.size() && c->user_ops[ix].allocated) ++ix;
  if (ix == c->user_ops.size()) c->user_ops.emplace_back();
  c->user_ops[ix] = user;
  *op = MangleUserOp(c, kNumOps + static_cast<int>(ix));
  fake_gpu::Trace("ncclRedOpCreatePreMulSum rank=" + std::to_string(c->rank) +
                  " type=" + std::to_string(datatype));
  return kSuccess;
}

FAKE_EXPORT int ncclRedOpDestroy(int op, ncclComm* comm) {
  if (op >= 0 && op < kNumOps) {
    return Fail(kInvalidArgument, "ncclRedOpDestroy : operator is a NCCL builtin.");
  }
  if (op < 0) return Fail(kInvalidArgument, "ncclRedOpDestroy :  operator is garbage.");
  CommImpl* c = Usable(comm);
  if (c == nullptr)
    return Fail(kInvalidArgument, "ncclRedOpDestroy : invalid communicator passed.");
  const int ix = MangleUserOp(c, op) - kNumOps;
  const std::lock_guard lock(c->user_ops_mutex);
  if (ix < 0 || static_cast<size_t>(ix) >= c->user_ops.size() || !c->user_ops[ix].allocated) {
    return Fail(kInvalidArgument, "ncclRedOpDestroy : operator unknown to this communicator.", c);
  }
  c->user_ops[ix].allocated = false;
  fake_gpu::Trace("ncclRedOpDestroy rank=" + std::to_string(c->rank));
  return kSuccess;
}
#endif

FAKE_EXPORT const char* ncclGetErrorString(int result) {
  switch (result) {
    case 0:
      return "no error";
    case 1:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case 2:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case 3:
      return "internal error - please report this issue to the NCCL developers";
    case 4:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case 5:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case 6:
      return "remote process exited or there was a network error";
    case 7:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

FAKE_EXPORT const char* ncclGetLastError(ncclComm* comm) {
  if (comm != nullptr && comm->impl) {
    const std::lock_guard lock(comm->impl->error_mutex);
    thread_local std::string copy;
    copy = comm->impl->last_error;
    return copy.c_str();
  }
  return thread_last_error.c_str();
}

FAKE_EXPORT int ncclGetUniqueId(UniqueId* id) {
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, kIdMagic, sizeof kIdMagic);
  std::random_device random;
  const uint64_t token =
      (static_cast<uint64_t>(random()) << 32) ^ random() ^ static_cast<uint64_t>(::getpid());
  std::memcpy(id->internal + 8, &token, sizeof token);
  fake_gpu::Trace("ncclGetUniqueId");
  return kSuccess;
}

namespace {

// FAKE_NCCL_INIT_LOG: one line per ncclCommInitRank, appended (one write: lines of
// concurrent ranks do not mix).
void LogInit(const UniqueId& id, int rank, int nranks) {
  const char* file = std::getenv("FAKE_NCCL_INIT_LOG");
  if (file == nullptr || file[0] == '\0') return;
  uint64_t token = 0;
  std::memcpy(&token, id.internal + 8, sizeof token);
  char line[96];
  const int n = std::snprintf(line, sizeof line, "%016llx %d %d\n",
                              static_cast<unsigned long long>(token), rank, nranks);
  const int fd = ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t w = ::write(fd, line, static_cast<size_t>(n));
  ::close(fd);
}

}  // namespace

FAKE_EXPORT int ncclCommInitRank(ncclComm** out, int nranks, UniqueId id, int rank) {
  if (std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0) {
    return Fail(kInvalidArgument, "ncclCommInitRank: not a unique id from ncclGetUniqueId");
  }
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    return Fail(kInvalidArgument,
                "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  }
  auto c = std::make_shared<CommImpl>();
  c->rank = rank;
  c->nranks = nranks;
  c->device = fake_gpu::CurrentDevice();
  c->id = id;
  c->hang_at = InjectionFor("FAKE_NCCL_HANG", rank);
  c->fail_at = InjectionFor("FAKE_NCCL_ASYNC_ERROR", rank);
  c->slow_us = InjectionFor("FAKE_NCCL_SLOW", rank);
  c->received.assign(static_cast<size_t>(nranks), 0);
  LogInit(id, rank, nranks);
  uint64_t comm_id = 0;
  std::memcpy(&comm_id, id.internal + 8, sizeof comm_id);
  c->profiler = fake_profiler::Init(comm_id, 1, nranks, rank);
  fake_gpu::Trace("ncclCommInitRank rank=" + std::to_string(rank) +
                  " nranks=" + std::to_string(nranks) + " device=" + std::to_string(c->device) +
                  " grouped=" + (Grouped() ? "1" : "0"));
  *out = new ncclComm{c};
  if (Grouped()) {
    group.inits.push_back(c);
    return kSuccess;
  }
  if (int rc = Join(*c); rc != kSuccess) return rc;
  return AwaitPeers(*c);
}

// The single-process clique: a group of ncclCommInitRank on the given devices.
FAKE_EXPORT int ncclCommInitAll(ncclComm** comms, int ndev, const int* devices) {
  UniqueId id;
  ncclGetUniqueId(&id);
  const int previous = fake_gpu::CurrentDevice();
  fake_gpu::Trace("ncclCommInitAll ndev=" + std::to_string(ndev));
  ncclGroupStart();
  int first = kSuccess;
  for (int r = 0; r < ndev; ++r) {
    cudaSetDevice(devices != nullptr ? devices[r] : r);
    const int rc = ncclCommInitRank(&comms[r], ndev, id, r);
    if (first == kSuccess) first = rc;
  }
  const int end = ncclGroupEnd();
  cudaSetDevice(previous);
  return first != kSuccess ? first : end;
}

FAKE_EXPORT int ncclCommDestroy(ncclComm* comm) {
  if (comm == nullptr) return kInvalidArgument;
  if (comm->impl) fake_gpu::Trace("ncclCommDestroy rank=" + std::to_string(comm->impl->rank));
  delete comm;  // running tasks keep their share of it
  return kSuccess;
}

FAKE_EXPORT int ncclCommAbort(ncclComm* comm) {
  if (comm == nullptr) return kInvalidArgument;
  if (comm->impl) {
    CommImpl& c = *comm->impl;
    fake_gpu::Trace("ncclCommAbort rank=" + std::to_string(c.rank));
    c.aborted.store(true);
    // The peers' next wait fails, as a dead peer makes NCCL fail on the other side.
    if (c.clique) c.clique->header()->aborted.store(1);
  }
  delete comm;
  return kSuccess;
}

FAKE_EXPORT int ncclCommGetAsyncError(ncclComm* comm, int* error) {
  if (comm == nullptr || !comm->impl) return kInvalidArgument;
  *error = comm->impl->async_error.load();
  return kSuccess;
}

FAKE_EXPORT int ncclGroupStart() {
  ++group.depth;
  return kSuccess;
}

FAKE_EXPORT int ncclGroupEnd() {
  if (group.depth == 0) return Fail(kInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  fake_profiler::GroupEndBegin();  // src/group.cc, ncclGroupEndInternal: before the launch
  if (--group.depth > 0) {
    fake_profiler::GroupEndExit();
    return kSuccess;
  }
  const size_t ops = group.ops.size();
  const int rc = FlushGroup();
  fake_profiler::GroupEndExit();  // and at its exit, after it
  fake_gpu::Trace("ncclGroupEnd ops=" + std::to_string(ops) + " result=" + std::to_string(rc));
  return rc;
}

FAKE_EXPORT int ncclAllReduce(const void* send, void* recv, size_t count, int type, int op,
                              ncclComm* comm, void* stream) {
  return Collective(Kind::kAllReduce, "ncclAllReduce", send, recv, count, type, op, 0, comm,
                    stream);
}

FAKE_EXPORT int ncclAllGather(const void* send, void* recv, size_t count, int type, ncclComm* comm,
                              void* stream) {
  return Collective(Kind::kAllGather, "ncclAllGather", send, recv, count, type, 0, 0, comm, stream);
}

FAKE_EXPORT int ncclReduceScatter(const void* send, void* recv, size_t count, int type, int op,
                                  ncclComm* comm, void* stream) {
  return Collective(Kind::kReduceScatter, "ncclReduceScatter", send, recv, count, type, op, 0, comm,
                    stream);
}

FAKE_EXPORT int ncclBroadcast(const void* send, void* recv, size_t count, int type, int root,
                              ncclComm* comm, void* stream) {
  return Collective(Kind::kBroadcast, "ncclBroadcast", send, recv, count, type, 0, root, comm,
                    stream);
}

FAKE_EXPORT int ncclReduce(const void* send, void* recv, size_t count, int type, int op, int root,
                           ncclComm* comm, void* stream) {
  return Collective(Kind::kReduce, "ncclReduce", send, recv, count, type, op, root, comm, stream);
}

FAKE_EXPORT int ncclSend(const void* send, size_t count, int type, int peer, ncclComm* comm,
                         void* stream) {
  return PointToPoint(true, "ncclSend", send, count, type, peer, comm, stream);
}

FAKE_EXPORT int ncclRecv(void* recv, size_t count, int type, int peer, ncclComm* comm,
                         void* stream) {
  return PointToPoint(false, "ncclRecv", recv, count, type, peer, comm, stream);
}

#if FAKE_NCCL_VERSION >= 22800

FAKE_EXPORT int ncclAlltoAll(const void* send, void* recv, size_t count, int type, ncclComm* comm,
                             void* stream) {
  return Collective(Kind::kAlltoAll, "ncclAlltoAll", send, recv, count, type, 0, 0, comm, stream);
}

FAKE_EXPORT int ncclGather(const void* send, void* recv, size_t count, int type, int root,
                           ncclComm* comm, void* stream) {
  return Collective(Kind::kGather, "ncclGather", send, recv, count, type, 0, root, comm, stream);
}

FAKE_EXPORT int ncclScatter(const void* send, void* recv, size_t count, int type, int root,
                            ncclComm* comm, void* stream) {
  return Collective(Kind::kScatter, "ncclScatter", send, recv, count, type, 0, root, comm, stream);
}

FAKE_EXPORT int ncclMemAlloc(void** ptr, size_t bytes) {
  *ptr = fake_gpu::AllocateDevice(bytes, fake_gpu::CurrentDevice());
  fake_gpu::Trace("ncclMemAlloc device=" + std::to_string(fake_gpu::CurrentDevice()) +
                  " bytes=" + std::to_string(bytes));
  return *ptr != nullptr || bytes == 0 ? kSuccess : kSystemError;
}

FAKE_EXPORT int ncclMemFree(void* ptr) {
  fake_gpu::FreeDevice(ptr);
  return kSuccess;
}

// A registration: NCCL may then use the buffer without staging copies.
struct FakeRegistration {
  const void* buffer;
  size_t bytes;
};

FAKE_EXPORT int ncclCommRegister(ncclComm* comm, void* buffer, size_t bytes, void** handle) {
  CommImpl* c = Usable(comm);
  if (c == nullptr) return Fail(kInvalidArgument, "ncclCommRegister: invalid communicator");
  std::byte* view = nullptr;
  if (int rc = View(*c, buffer, bytes, "buffer", "ncclCommRegister", &view); rc != kSuccess) {
    return rc;
  }
  *handle = new FakeRegistration{buffer, bytes};
  fake_gpu::Trace("ncclCommRegister rank=" + std::to_string(c->rank) +
                  " bytes=" + std::to_string(bytes));
  return kSuccess;
}

FAKE_EXPORT int ncclCommDeregister(ncclComm* comm, void* handle) {
  CommImpl* c = Usable(comm);
  if (c == nullptr || handle == nullptr) return kInvalidArgument;
  delete static_cast<FakeRegistration*>(handle);
  fake_gpu::Trace("ncclCommDeregister rank=" + std::to_string(c->rank));
  return kSuccess;
}

struct ncclWindow {
  const void* buffer;
  size_t bytes;
};

// Collective: every rank registers its window before any returns.
FAKE_EXPORT int ncclCommWindowRegister(ncclComm* comm, void* buffer, size_t bytes,
                                       ncclWindow** window, int flags) {
  CommImpl* c = Usable(comm);
  if (c == nullptr) return Fail(kInvalidArgument, "ncclCommWindowRegister: invalid communicator");
  std::byte* view = nullptr;
  if (int rc = View(*c, buffer, bytes, "buffer", "ncclCommWindowRegister", &view); rc != kSuccess) {
    return rc;
  }
  *window = new ncclWindow{buffer, bytes};
  fake_gpu::Trace("ncclCommWindowRegister rank=" + std::to_string(c->rank) +
                  " bytes=" + std::to_string(bytes) + " flags=" + std::to_string(flags) +
                  " grouped=" + (Grouped() ? "1" : "0"));
  auto impl = comm->impl;
  auto rendezvous = [impl] {
    const auto deadline =
        Clock::now() + std::chrono::seconds(fake_gpu::EnvInt("FAKE_NCCL_INIT_TIMEOUT_S", 30));
    SegmentHeader* h = impl->clique->header();
    const uint32_t generation = h->host_generation.load();
    if (h->host_count.fetch_add(1) + 1 == static_cast<uint32_t>(impl->nranks)) {
      h->host_count.store(0);
      h->host_generation.fetch_add(1);
      return kSuccess;
    }
    const int rc = WaitFor(
        *impl, [&] { return h->host_generation.load() != generation; }, deadline);
    if (rc != kSuccess) {
      return Fail(rc,
                  "ncclCommWindowRegister: rank " + std::to_string(impl->rank) +
                      ": the other ranks did not register (a thread that drives several ranks "
                      "must group the calls)",
                  impl.get());
    }
    return kSuccess;
  };
  if (Grouped()) {
    group.collective_host_calls.push_back(rendezvous);
    return kSuccess;
  }
  return rendezvous();
}

FAKE_EXPORT int ncclCommWindowDeregister(ncclComm* comm, ncclWindow* window) {
  CommImpl* c = Usable(comm);
  if (c == nullptr || window == nullptr) return kInvalidArgument;
  delete window;
  fake_gpu::Trace("ncclCommWindowDeregister rank=" + std::to_string(c->rank));
  return kSuccess;
}

#endif  // FAKE_NCCL_VERSION >= 22800
