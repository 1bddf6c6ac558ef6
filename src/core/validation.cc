#include "fabricscope/validation.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/dtype_impl.h"

namespace fabricscope {
namespace {

// Inputs are small integers so that sums, products of powers of two, minima and maxima are
// exact in every type whatever order a backend reduces in. The ranges keep sums of up to
// 256 ranks exact in bfloat16 (8-bit mantissa) and of about 600 ranks in half (half that
// under mulsum, whose odd ranks count twice).
//
// FP8 holds every integer only up to 16 (E4M3) or 8 (E5M2): there a sum's element gets a 1
// from at most half that many ranks (every `stride`-th one), and 0 from the others; the
// pattern repeats every 16 elements, as the others do (kReducedPeriod).
double Fp8SumValue(DataType type, ReduceOp op, int rank, int nranks, size_t i, uint32_t seed) {
  const uint64_t exact =
      (type == DataType::kFloat8e4m3 ? 16 : 8) / (op == ReduceOp::kMulSum ? 2 : 1);
  const uint64_t n = static_cast<uint64_t>(std::max(nranks, 1));
  const uint64_t stride = 2 * ((n + exact - 1) / exact);
  return (static_cast<uint64_t>(rank) + i % 16 + seed) % stride == 0 ? 1.0 : 0.0;
}

double PatternValue(const ValidationCase& c, int rank, size_t i) {
  const uint64_t r = static_cast<uint64_t>(rank);
  const uint64_t s = c.seed;
  if (!c.spec->has_op) return static_cast<double>((i % 97 * 7 + r * 31 + s) % 97);
  switch (c.op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
    case ReduceOp::kMulSum: {
      if (IsFp8(c.type)) return Fp8SumValue(c.type, c.op, rank, c.nranks, i, c.seed);
      const uint64_t range = c.type == DataType::kBfloat16 ? 2 : c.type == DataType::kHalf ? 4 : 8;
      return static_cast<double>((i % range * 7 + r * 3 + s) % range);
    }
    case ReduceOp::kProd:
      return (i + r + s) % 16 == 0 ? 2.0 : 1.0;
    case ReduceOp::kMax:
    case ReduceOp::kMin:
      return static_cast<double>((i % 16 * 7 + r * 13 + s) % 16);
  }
  return 0;
}

template <typename T>
T Value(const ValidationCase& c, int rank, size_t i) {
  using A = Arith<T>;
  return A::Store(static_cast<typename A::Wide>(PatternValue(c, rank, i)));
}

// Rank r's input element as it enters the reduction: multiplied by the rank's scalar
// under mulsum, as NCCL's premultiplied sum does.
template <typename T>
T Contribution(const ValidationCase& c, int rank, size_t i) {
  T v = Value<T>(c, rank, i);
  if (c.op == ReduceOp::kMulSum) Premultiply(c.type, &v, &v, 1, PremulScalar(rank));
  return v;
}

// The expected element: either one rank's input element, or the reduction over all ranks
// of element `i` of their inputs, computed with the same typed arithmetic as the backends.
template <typename T>
T Reduced(const ValidationCase& c, size_t i) {
  T acc = Contribution<T>(c, 0, i);
  for (int r = 1; r < c.nranks; ++r) {
    const T v = Contribution<T>(c, r, i);
    Reduce3(c.type, CombiningOp(c.op), &acc, &acc, &v, 1);
  }
  if (c.op == ReduceOp::kAvg) FinishAverage(c.type, &acc, 1, c.nranks);
  return acc;
}

// Every reduction pattern repeats with this period in the element index, so the reduced
// values are computed once per period instead of once per element.
constexpr size_t kReducedPeriod = 16;

template <typename T>
T Expected(const ValidationCase& c, const T* reduced, size_t j) {
  const size_t base = c.counts.param_count;
  const int n = c.nranks;
  switch (c.spec->id) {
    case Collective::kAllReduce:
    case Collective::kReduce:
      return reduced[j % kReducedPeriod];
    case Collective::kReduceScatter:
      return reduced[(static_cast<size_t>(c.rank) * base + j) % kReducedPeriod];
    case Collective::kAllGather:
    case Collective::kGather:
      return Value<T>(c, static_cast<int>(j / base), j % base);
    case Collective::kBroadcast:
      return Value<T>(c, c.root, j);
    case Collective::kAlltoAll:
      return Value<T>(c, static_cast<int>(j / base), static_cast<size_t>(c.rank) * base + j % base);
    case Collective::kSendRecv:
      return Value<T>(c, (c.rank - 1 + n) % n, j);
    case Collective::kScatter:
      return Value<T>(c, c.root, static_cast<size_t>(c.rank) * base + j);
  }
  return T{};
}

// Results must be exact, so elements compare by their bits: a received -0.0 where 0 was sent,
// or a NaN of any payload, is wrong. The floating types go through the same-sized integer,
// so the comparison never depends on padding or on IEEE equality.
template <typename T>
bool SameBits(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, Bfloat16> ||
                std::is_same_v<T, Fp8E4M3> || std::is_same_v<T, Fp8E5M2>) {
    return a.bits == b.bits;
  } else if constexpr (std::is_floating_point_v<T>) {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    static_assert(sizeof(Bits) == sizeof(T));
    return std::bit_cast<Bits>(a) == std::bit_cast<Bits>(b);
  } else {
    return a == b;
  }
}

}  // namespace

bool RankHasResult(const ValidationCase& c) {
  const bool root_only = c.spec->id == Collective::kReduce || c.spec->id == Collective::kGather;
  return !root_only || c.rank == c.root;
}

void FillInput(const ValidationCase& c, void* send) {
  Dispatch(c.type, [&]<typename T>() {
    T* out = static_cast<T*>(send);
    for (size_t i = 0; i < c.counts.send_count; ++i) out[i] = Value<T>(c, c.rank, i);
  });
}

int64_t CountWrong(const ValidationCase& c, const void* recv) {
  if (!RankHasResult(c)) return 0;
  return Dispatch(c.type, [&]<typename T>() {
    const T* got = static_cast<const T*>(recv);
    T reduced[kReducedPeriod];
    if (c.spec->has_op) {
      for (size_t k = 0; k < kReducedPeriod; ++k) reduced[k] = Reduced<T>(c, k);
    }
    int64_t wrong = 0;
    for (size_t j = 0; j < c.counts.recv_count; ++j) {
      const T want = Expected<T>(c, reduced, j);
      if (!SameBits(want, got[j])) ++wrong;
    }
    return wrong;
  });
}

}  // namespace fabricscope
