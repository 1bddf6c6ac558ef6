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

struct TypeName {
  DataType type;
  std::string_view name;
};
constexpr TypeName kTypeNames[] = {
    {DataType::kInt8, "int8"},         {DataType::kUint8, "uint8"}, {DataType::kInt32, "int32"},
    {DataType::kUint32, "uint32"},     {DataType::kInt64, "int64"}, {DataType::kUint64, "uint64"},
    {DataType::kHalf, "half"},         {DataType::kFloat, "float"}, {DataType::kDouble, "double"},
    {DataType::kBfloat16, "bfloat16"},
};
struct OpName {
  ReduceOp op;
  std::string_view name;
};
constexpr OpName kOpNames[] = {
    {ReduceOp::kSum, "sum"}, {ReduceOp::kProd, "prod"}, {ReduceOp::kMax, "max"},
    {ReduceOp::kMin, "min"}, {ReduceOp::kAvg, "avg"},
};

}  // namespace

float ToFloat(Half h) { return HalfBitsToFloat(h.bits); }
Half ToHalf(float f) { return Half{FloatToHalfBits(f)}; }
float ToFloat(Bfloat16 b) { return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16); }
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

bool IsFloatingPoint(DataType type) {
  return type == DataType::kHalf || type == DataType::kFloat || type == DataType::kDouble ||
         type == DataType::kBfloat16;
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
  if (name == "f8e4m3" || name == "f8e5m2" || name == "fp8_e4m3" || name == "fp8_e5m2") {
    throw UnsupportedError("data type '" + std::string(name) +
                           "' (FP8) exists only on GPUs; the host backends support " +
                           NamesOf(kTypeNames));
  }
  throw UsageError("unknown data type '" + std::string(name) + "' for -d/--datatype: choose " +
                   NamesOf(kTypeNames) + ", or all");
}

ReduceOp ParseReduceOp(std::string_view name) {
  for (const auto& entry : kOpNames) {
    if (entry.name == name) return entry.op;
  }
  if (name == "mulsum") {
    throw UnsupportedError(
        "op 'mulsum' (NCCL's premultiplied sum) is not available on the host backends; choose " +
        NamesOf(kOpNames));
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
