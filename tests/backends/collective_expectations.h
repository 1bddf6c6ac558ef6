// Shared by the backend tests: element access, inputs and expected results of every
// collective, written from first principles so that a bug in dtype.cc or collective.cc
// cannot hide a bug in a backend. Each backend's test runs the calls its own way (threads
// for Gloo, processes for MPI) and checks every rank with CheckRank.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"

namespace fabricscope::expect {

// ---------------------------------------------------------------------------------------
// Element access.

inline double HalfToDouble(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double sign = (h & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
}

// Exact for the small positive integers the tests store.
inline uint16_t HalfFromSmallInteger(double v) {
  if (v == 0) return 0;
  int exponent = 0;
  const double fraction = std::frexp(v, &exponent);  // v = fraction * 2^exponent, [0.5, 1)
  const auto mantissa = static_cast<uint16_t>(std::lround((fraction * 2 - 1) * 1024));
  return static_cast<uint16_t>(((exponent - 1 + 15) << 10) | mantissa);
}

double Bfloat16ToDouble(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t Bfloat16FromSmallInteger(double v) {
  const auto f = static_cast<float>(v);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

// FP8 as cuda_fp8.h lays it out: E4M3 (bias 7, S.1111.111 the only NaN), E5M2 (bias 15,
// IEEE's specials).
inline double Fp8ToDouble(uint8_t b, int exp_bits) {
  const int mant_bits = 7 - exp_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int exponent = (b >> mant_bits) & ((1 << exp_bits) - 1);
  const int mantissa = b & ((1 << mant_bits) - 1);
  const double sign = (b & 0x80) != 0 ? -1.0 : 1.0;
  if (exp_bits == 5 && exponent == 31) return mantissa == 0 ? sign * INFINITY : NAN;
  if (exp_bits == 4 && (b & 0x7f) == 0x7f) return NAN;
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - bias - mant_bits);
  return sign * std::ldexp(1.0 + mantissa / static_cast<double>(1 << mant_bits), exponent - bias);
}

// Exact for the small positive integers the tests store (at most 16 in E4M3, 8 in E5M2, and
// the even ones up to 32 / 16).
inline uint8_t Fp8FromSmallInteger(double v, int exp_bits) {
  const int mant_bits = 7 - exp_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  if (v == 0) return 0;
  int exponent = 0;
  const double fraction = std::frexp(v, &exponent);
  const auto mantissa = static_cast<int>(std::lround((fraction * 2 - 1) * (1 << mant_bits)));
  return static_cast<uint8_t>(((exponent - 1 + bias) << mant_bits) | mantissa);
}

inline size_t TestSizeOf(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2:
      return 1;
    case DataType::kHalf:
    case DataType::kBfloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat:
      return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kDouble:
      return 8;
  }
  return 0;
}

inline bool TestIsFloat(DataType t) {
  return t == DataType::kHalf || t == DataType::kBfloat16 || t == DataType::kFloat ||
         t == DataType::kDouble || t == DataType::kFloat8e4m3 || t == DataType::kFloat8e5m2;
}

template <typename T>
T At(const void* data, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void Put(void* data, size_t i, T v) {
  std::memcpy(static_cast<char*>(data) + i * sizeof(T), &v, sizeof(T));
}

inline double Load(DataType t, const void* data, size_t i) {
  switch (t) {
    case DataType::kInt8:
      return At<int8_t>(data, i);
    case DataType::kUint8:
      return At<uint8_t>(data, i);
    case DataType::kInt32:
      return At<int32_t>(data, i);
    case DataType::kUint32:
      return At<uint32_t>(data, i);
    case DataType::kInt64:
      return static_cast<double>(At<int64_t>(data, i));
    case DataType::kUint64:
      return static_cast<double>(At<uint64_t>(data, i));
    case DataType::kHalf:
      return HalfToDouble(At<uint16_t>(data, i));
    case DataType::kBfloat16:
      return Bfloat16ToDouble(At<uint16_t>(data, i));
    case DataType::kFloat:
      return At<float>(data, i);
    case DataType::kDouble:
      return At<double>(data, i);
    case DataType::kFloat8e4m3:
      return Fp8ToDouble(At<uint8_t>(data, i), 4);
    case DataType::kFloat8e5m2:
      return Fp8ToDouble(At<uint8_t>(data, i), 5);
  }
  return NAN;
}

// v is a small non-negative integer: exact in every type.
inline void Store(DataType t, void* data, size_t i, double v) {
  switch (t) {
    case DataType::kInt8:
      return Put(data, i, static_cast<int8_t>(v));
    case DataType::kUint8:
      return Put(data, i, static_cast<uint8_t>(v));
    case DataType::kInt32:
      return Put(data, i, static_cast<int32_t>(v));
    case DataType::kUint32:
      return Put(data, i, static_cast<uint32_t>(v));
    case DataType::kInt64:
      return Put(data, i, static_cast<int64_t>(v));
    case DataType::kUint64:
      return Put(data, i, static_cast<uint64_t>(v));
    case DataType::kHalf:
      return Put(data, i, HalfFromSmallInteger(v));
    case DataType::kBfloat16:
      return Put(data, i, Bfloat16FromSmallInteger(v));
    case DataType::kFloat:
      return Put(data, i, static_cast<float>(v));
    case DataType::kDouble:
      return Put(data, i, v);
    case DataType::kFloat8e4m3:
      return Put(data, i, Fp8FromSmallInteger(v, 4));
    case DataType::kFloat8e5m2:
      return Put(data, i, Fp8FromSmallInteger(v, 5));
  }
}

// ---------------------------------------------------------------------------------------
// What each collective should produce, from first principles.

inline bool IsReduction(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}

inline bool IsRooted(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}

// Buffer lengths in elements for per-rank count c with n ranks (nccl-tests' geometry).
struct Geometry {
  size_t send = 0;
  size_t recv = 0;
};

inline Geometry GeometryOf(Collective coll, size_t c, int n) {
  const size_t nc = c * static_cast<size_t>(n);
  switch (coll) {
    case Collective::kAllGather:
    case Collective::kGather:
      return {c, nc};
    case Collective::kReduceScatter:
    case Collective::kScatter:
      return {nc, c};
    case Collective::kAlltoAll:
      return {nc, nc};
    default:
      return {c, c};
  }
}

// Element i of rank r's send buffer. Small integers: exact in every type; with 8 ranks sums
// stay <= 40 and products <= 4 (int8 and bfloat16 hold them exactly, in any order).
inline double Input(const Collective coll, ReduceOp op, int r, size_t i) {
  if (!IsReduction(coll)) {
    return 1.0 + static_cast<double>((static_cast<size_t>(r) * 37 + i * 3) % 97);
  }
  if (op == ReduceOp::kProd) return (i + static_cast<size_t>(r)) % 4 == 0 ? 2.0 : 1.0;
  return 1.0 + static_cast<double>((i + 2 * static_cast<size_t>(r)) % 5);
}

// The reduction over all ranks of element i, as NCCL defines it for the type.
inline double Reduced(const Collective coll, DataType t, ReduceOp op, int n, size_t i) {
  // mulsum: NCCL multiplies rank r's input by its scalar, which nccl-tests makes 1 on even
  // ranks and 2 on odd ones, before the sum.
  const auto premul = [op](int r) { return op == ReduceOp::kMulSum && r % 2 == 1 ? 2.0 : 1.0; };
  double acc = Input(coll, op, 0, i);
  for (int r = 1; r < n; ++r) {
    const double v = Input(coll, op, r, i) * premul(r);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
      case ReduceOp::kMulSum:
        acc += v;
        break;
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
    }
  }
  if (op == ReduceOp::kAvg) {
    // Integers divide with truncation, as NCCL's ncclAvg does for them.
    acc = TestIsFloat(t) ? acc / n : std::floor(acc / n);
  }
  return acc;
}

// Relative tolerance: exact except for a floating-point average (one rounding of the type).
inline double Tolerance(DataType t, ReduceOp op) {
  if (op != ReduceOp::kAvg) return 0;
  switch (t) {
    case DataType::kHalf:
      return 1e-3;
    case DataType::kBfloat16:
      return 8e-3;
    case DataType::kFloat:
      return 1e-6;
    case DataType::kDouble:
      return 1e-12;
    default:
      return 0;
  }
}

struct Case {
  Collective collective;
  DataType type;
  ReduceOp op;
  bool in_place;
  int nranks;
  size_t count;  // per-rank count argument
  int root;
};

inline std::string Describe(const Case& c) {
  std::ostringstream name;
  name << SpecOf(c.collective).name << " " << NameOf(c.type);
  if (IsReduction(c.collective)) name << " " << NameOf(c.op);
  name << (c.in_place ? " in-place" : " out-of-place") << ", " << c.nranks << " ranks, count "
       << c.count;
  if (IsRooted(c.collective)) name << ", root " << c.root;
  return name.str();
}

// Every collective, in the order of collective.h.
inline constexpr Collective kCollectives[] = {
    Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
    Collective::kBroadcast, Collective::kReduce,    Collective::kAlltoAll,
    Collective::kSendRecv,  Collective::kGather,    Collective::kScatter};

// One rank's buffers for one call, laid out as nccl-tests lays them out.
struct RankBuffers {
  std::vector<uint64_t> send_storage;  // uint64_t: aligned for every element type
  std::vector<uint64_t> recv_storage;
  const void* send = nullptr;
  void* recv = nullptr;
};

inline RankBuffers MakeBuffers(const Case& c, size_t count, int r) {
  const size_t e = TestSizeOf(c.type);
  const Geometry g = GeometryOf(c.collective, count, c.nranks);
  const auto words = [e](size_t elems) { return (elems * e + 7) / 8 + 1; };
  RankBuffers b;
  // Zero is never a valid result (inputs are >= 1), so an unwritten element shows.
  b.recv_storage.assign(words(std::max(g.send, g.recv)), 0);
  char* base = reinterpret_cast<char*>(b.recv_storage.data());
  const size_t offset = static_cast<size_t>(r) * count * e;
  char* send = nullptr;
  if (!c.in_place) {
    b.send_storage.assign(words(g.send), 0);
    send = reinterpret_cast<char*>(b.send_storage.data());
    b.recv = base;
  } else if (c.collective == Collective::kAllGather || c.collective == Collective::kGather) {
    send = base + offset;  // send = recv + rank * count
    b.recv = base;
  } else if (c.collective == Collective::kReduceScatter || c.collective == Collective::kScatter) {
    send = base;
    b.recv = base + offset;  // recv = send + rank * count
  } else {
    send = base;
    b.recv = base;
  }
  for (size_t i = 0; i < g.send; ++i) Store(c.type, send, i, Input(c.collective, c.op, r, i));
  b.send = send;
  return b;
}

// The expected value of recv element i on rank r, or nothing when it is not defined there.
inline std::optional<double> Expected(const Case& c, size_t count, int root, int r, size_t i) {
  const int n = c.nranks;
  switch (c.collective) {
    case Collective::kAllReduce:
      return Reduced(c.collective, c.type, c.op, n, i);
    case Collective::kAllGather:
      return Input(c.collective, c.op, static_cast<int>(i / count), i % count);
    case Collective::kReduceScatter:
      return Reduced(c.collective, c.type, c.op, n, static_cast<size_t>(r) * count + i);
    case Collective::kBroadcast:
      return Input(c.collective, c.op, root, i);
    case Collective::kReduce:
      if (r != root) return std::nullopt;
      return Reduced(c.collective, c.type, c.op, n, i);
    case Collective::kAlltoAll:
      return Input(c.collective, c.op, static_cast<int>(i / count),
                   static_cast<size_t>(r) * count + i % count);
    case Collective::kSendRecv:
      return Input(c.collective, c.op, (r + n - 1) % n, i);
    case Collective::kGather:
      if (r != root) return std::nullopt;
      return Input(c.collective, c.op, static_cast<int>(i / count), i % count);
    case Collective::kScatter:
      return Input(c.collective, c.op, root, static_cast<size_t>(r) * count + i);
  }
  return std::nullopt;
}

// Compares rank r's receive buffer with what it should hold; returns the number of wrong
// elements and describes the first `max_lines` of them on `errors`.
inline int CheckRank(const Case& c, int r, const void* recv, std::ostream& errors, int max_lines) {
  const size_t recv_elems = GeometryOf(c.collective, c.count, c.nranks).recv;
  int wrong = 0;
  for (size_t i = 0; i < recv_elems; ++i) {
    const std::optional<double> want = Expected(c, c.count, c.root, r, i);
    if (!want) continue;
    const double got = Load(c.type, recv, i);
    const double tolerance = Tolerance(c.type, c.op) * std::abs(*want);
    if (std::abs(got - *want) > tolerance || std::isnan(got)) {
      if (++wrong <= max_lines) {
        errors << "rank " << r << " element " << i << ": got " << got << ", want " << *want << "\n";
      }
    }
  }
  return wrong;
}

}  // namespace fabricscope::expect
