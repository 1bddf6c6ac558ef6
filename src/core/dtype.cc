#include "fabricscope/dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/dtype_impl.h"
#include "fabricscope/error.h"
#include "fabricscope/joined.h"

namespace fabricscope {
namespace {

// Converts float to binary16 with round-to-nearest-even, handling subnormals, inf and NaN.
uint16_t FloatToHalfBits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // * 2^24, exact
    // nearbyint rounds to nearest even in the default rounding mode.
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  uint32_t mant = abs + 0xc8000000u;      // rebias exponent 127 -> 15 (subtract 112 << 23)
  mant += 0x0fffu + ((mant >> 13) & 1u);  // round to nearest even at bit 13
  return static_cast<uint16_t>(sign | (mant >> 13));
}

float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) / 16777216.0f;  // mant * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

// An FP8 format of cuda_fp8.h: `kExp` exponent bits, `kMant` mantissa bits; E4M3 has no
// infinity and spends only S.1111.111 on NaN, E5M2 is laid out as IEEE's binary formats.
template <int kExp, int kMant, bool kIeee>
struct Fp8Format {
  static constexpr int kBias = (1 << (kExp - 1)) - 1;
  static constexpr int kExpMax = (1 << kExp) - 1;
  static constexpr uint32_t kMantMask = (1u << kMant) - 1;
  // The largest finite code: E5M2's 0x7b, E4M3's 0x7e (0x7f is its NaN).
  static constexpr uint32_t kMaxCode =
      kIeee ? ((static_cast<uint32_t>(kExpMax - 1) << kMant) | kMantMask)
            : ((static_cast<uint32_t>(kExpMax) << kMant) | (kMantMask - 1));
  static constexpr uint8_t kNan = 0x7f;

  static double Magnitude(uint32_t code) {
    const int exp = static_cast<int>(code >> kMant);
    const double mant = static_cast<double>(code & kMantMask);
    if (exp == 0) return std::ldexp(mant, 1 - kBias - kMant);
    return std::ldexp(1.0 + mant / (1u << kMant), exp - kBias);
  }

  static float Decode(uint8_t bits) {
    const uint32_t code = bits & 0x7fu;
    const bool negative = (bits & 0x80u) != 0;
    const int exp = static_cast<int>(code >> kMant);
    if (kIeee && exp == kExpMax) {
      const float special = (code & kMantMask) == 0 ? HUGE_VALF : std::nanf("");
      return negative ? -special : special;
    }
    if (!kIeee && code == 0x7fu) return std::nanf("");
    const auto v = static_cast<float>(Magnitude(code));
    return negative ? -v : v;
  }

  // Round to nearest even; beyond the largest finite (infinities too) saturate to it.
  static uint8_t Encode(float f) {
    if (std::isnan(f)) return kNan;
    const auto sign = static_cast<uint8_t>(std::signbit(f) ? 0x80u : 0u);
    const double a = std::fabs(static_cast<double>(f));
    if (a >= Magnitude(kMaxCode)) return static_cast<uint8_t>(sign | kMaxCode);
    uint32_t code = 0;
    if (a < std::ldexp(1.0, 1 - kBias)) {  // subnormal: units of the smallest step
      code = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, kBias - 1 + kMant)));
    } else {
      int k = 0;
      const double m = std::frexp(a, &k);  // a = m * 2^k, m in [0.5, 1)
      // The significand scaled to [2^kMant, 2^(kMant+1)), rounded; a carry moves into the
      // exponent field by itself.
      const auto q = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, kMant + 1)));
      code = (static_cast<uint32_t>(k - 1 + kBias) << kMant) + (q - (1u << kMant));
    }
    return static_cast<uint8_t>(sign | std::min(code, kMaxCode));
  }
};
using E4M3 = Fp8Format<4, 3, false>;
using E5M2 = Fp8Format<5, 2, true>;

// One tight loop per op, with the op chosen outside the loop, so the compiler vectorizes
// it: this runs inside the backends' timed collectives.
template <typename T, typename F>
void Elementwise(T* out, const T* a, const T* b, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

template <typename T>
void Reduce3Typed(ReduceOp op, void* out, const void* a, const void* b, size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  if constexpr (std::is_integral_v<T>) {
    // Signed overflow is undefined in C++: sums and products wrap through the unsigned type
    // of the same width, as the hardware does.
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
      case ReduceOp::kMulSum:
        return Elementwise(o, x, y, n, [](T p, T q) {
          return static_cast<T>(static_cast<U>(static_cast<U>(p) + static_cast<U>(q)));
        });
      case ReduceOp::kProd:
        return Elementwise(o, x, y, n, [](T p, T q) {
          return static_cast<T>(static_cast<U>(static_cast<U>(p) * static_cast<U>(q)));
        });
      case ReduceOp::kMax:
        return Elementwise(o, x, y, n, [](T p, T q) { return p < q ? q : p; });
      case ReduceOp::kMin:
        return Elementwise(o, x, y, n, [](T p, T q) { return q < p ? q : p; });
    }
  } else {
    using A = Arith<T>;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
      case ReduceOp::kMulSum:
        return Elementwise(o, x, y, n, [](T p, T q) { return A::Store(A::Load(p) + A::Load(q)); });
      case ReduceOp::kProd:
        return Elementwise(o, x, y, n, [](T p, T q) { return A::Store(A::Load(p) * A::Load(q)); });
      case ReduceOp::kMax:
        return Elementwise(o, x, y, n,
                           [](T p, T q) { return A::Store(std::max(A::Load(p), A::Load(q))); });
      case ReduceOp::kMin:
        return Elementwise(o, x, y, n,
                           [](T p, T q) { return A::Store(std::min(A::Load(p), A::Load(q))); });
    }
  }
}

template <typename T>
void FinishAverageTyped(void* data, size_t n, int nranks) {
  using A = Arith<T>;
  T* d = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) {
    d[i] = A::Store(
        static_cast<typename A::Wide>(A::Load(d[i]) / static_cast<typename A::Wide>(nranks)));
  }
}

template <typename T>
void PremultiplyTyped(void* out, const void* in, size_t n, double scalar) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(in);
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    const auto k = static_cast<U>(static_cast<int64_t>(scalar));
    for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<U>(static_cast<U>(x[i]) * k));
  } else {
    using A = Arith<T>;
    const auto k = static_cast<typename A::Wide>(scalar);
    for (size_t i = 0; i < n; ++i) o[i] = A::Store(A::Load(x[i]) * k);
  }
}

struct TypeName {
  DataType type;
  std::string_view name;
};
constexpr TypeName kTypeNames[] = {
    {DataType::kInt8, "int8"},         {DataType::kUint8, "uint8"},
    {DataType::kInt32, "int32"},       {DataType::kUint32, "uint32"},
    {DataType::kInt64, "int64"},       {DataType::kUint64, "uint64"},
    {DataType::kHalf, "half"},         {DataType::kFloat, "float"},
    {DataType::kDouble, "double"},     {DataType::kBfloat16, "bfloat16"},
    {DataType::kFloat8e4m3, "f8e4m3"}, {DataType::kFloat8e5m2, "f8e5m2"},
};
struct OpName {
  ReduceOp op;
  std::string_view name;
};
constexpr OpName kOpNames[] = {
    {ReduceOp::kSum, "sum"}, {ReduceOp::kProd, "prod"}, {ReduceOp::kMax, "max"},
    {ReduceOp::kMin, "min"}, {ReduceOp::kAvg, "avg"},   {ReduceOp::kMulSum, "mulsum"},
};

}  // namespace

float ToFloat(Half h) { return HalfBitsToFloat(h.bits); }
Half ToHalf(float f) { return Half{FloatToHalfBits(f)}; }
float ToFloat(Bfloat16 b) { return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16); }
float ToFloat(Fp8E4M3 v) { return E4M3::Decode(v.bits); }
Fp8E4M3 ToFp8E4M3(float f) { return Fp8E4M3{E4M3::Encode(f)}; }
float ToFloat(Fp8E5M2 v) { return E5M2::Decode(v.bits); }
Fp8E5M2 ToFp8E5M2(float f) { return Fp8E5M2{E5M2::Encode(f)}; }
Bfloat16 ToBfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return Bfloat16{static_cast<uint16_t>((x >> 16) | 0x40u)};
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return Bfloat16{static_cast<uint16_t>(x >> 16)};
}

size_t SizeOf(DataType type) {
  return Dispatch(type, []<typename T>() { return sizeof(T); });
}

std::string_view NameOf(DataType type) {
  for (const auto& entry : kTypeNames) {
    if (entry.type == type) return entry.name;
  }
  return "unknown";
}

std::string_view NameOf(ReduceOp op) {
  for (const auto& entry : kOpNames) {
    if (entry.op == op) return entry.name;
  }
  return "unknown";
}

bool IsFp8(DataType type) { return type == DataType::kFloat8e4m3 || type == DataType::kFloat8e5m2; }

bool IsFloatingPoint(DataType type) {
  return type == DataType::kHalf || type == DataType::kFloat || type == DataType::kDouble ||
         type == DataType::kBfloat16 || IsFp8(type);
}

const std::vector<DataType>& AllDataTypes() {
  static const std::vector<DataType> kAll = [] {
    std::vector<DataType> all;
    for (const auto& entry : kTypeNames) all.push_back(entry.type);
    return all;
  }();
  return kAll;
}

const std::vector<ReduceOp>& AllReduceOps() {
  static const std::vector<ReduceOp> kAll = [] {
    std::vector<ReduceOp> all;
    for (const auto& entry : kOpNames) all.push_back(entry.op);
    return all;
  }();
  return kAll;
}

DataType ParseDataType(std::string_view name) {
  for (const auto& entry : kTypeNames) {
    if (entry.name == name) return entry.type;
  }
  // nccl-tests' aliases.
  if (name == "fp16" || name == "float16") return DataType::kHalf;
  if (name == "fp32" || name == "float32") return DataType::kFloat;
  if (name == "fp64" || name == "float64") return DataType::kDouble;
  if (name == "bf16") return DataType::kBfloat16;
  if (name == "fp8_e4m3") return DataType::kFloat8e4m3;
  if (name == "fp8_e5m2") return DataType::kFloat8e5m2;
  throw UsageError("unknown data type '" + std::string(name) + "' for -d/--datatype: choose " +
                   NamesOf(kTypeNames) + ", or all");
}

ReduceOp ParseReduceOp(std::string_view name) {
  for (const auto& entry : kOpNames) {
    if (entry.name == name) return entry.op;
  }
  throw UsageError("unknown op '" + std::string(name) + "' for -o/--op: choose " +
                   NamesOf(kOpNames) + ", or all");
}

std::vector<DataType> ParseDataTypes(std::string_view value) {
  if (value == "all") return AllDataTypes();
  return {ParseDataType(value)};
}

std::vector<ReduceOp> ParseReduceOps(std::string_view value) {
  if (value == "all") return AllReduceOps();
  return {ParseReduceOp(value)};
}

void ReduceInto(DataType type, ReduceOp op, void* inout, const void* in, size_t n) {
  Reduce3(type, op, inout, inout, in, n);
}

void Reduce3(DataType type, ReduceOp op, void* out, const void* a, const void* b, size_t n) {
  Dispatch(type, [&]<typename T>() { Reduce3Typed<T>(op, out, a, b, n); });
}

void FinishAverage(DataType type, void* data, size_t n, int nranks) {
  Dispatch(type, [&]<typename T>() { FinishAverageTyped<T>(data, n, nranks); });
}

void Premultiply(DataType type, void* out, const void* in, size_t n, double scalar) {
  Dispatch(type, [&]<typename T>() { PremultiplyTyped<T>(out, in, n, scalar); });
}

double ElementAsDouble(DataType type, const void* data, size_t i) {
  return Dispatch(type, [&]<typename T>() {
    return static_cast<double>(Arith<T>::Load(static_cast<const T*>(data)[i]));
  });
}

void StoreElement(DataType type, void* data, size_t i, double v) {
  Dispatch(type, [&]<typename T>() {
    static_cast<T*>(data)[i] = Arith<T>::Store(static_cast<typename Arith<T>::Wide>(v));
  });
}

}  // namespace fabricscope
