// Private: the host type behind each DataType, for code that loops over typed elements.
#pragma once

#include <cstdint>

#include "fabricscope/dtype.h"

namespace fabricscope {

// The host type behind each DataType, and how it does arithmetic.
template <typename T>
struct Arith {
  using Wide = T;
  static Wide Load(T v) { return v; }
  static T Store(Wide v) { return v; }
};
// The 16- and 8-bit floats compute in float and round to their own format on the way back.
template <typename T, T (*kStore)(float)>
struct NarrowArith {
  using Wide = float;
  static float Load(T v) { return ToFloat(v); }
  static T Store(float v) { return kStore(v); }
};
template <>
struct Arith<Half> : NarrowArith<Half, ToHalf> {};
template <>
struct Arith<Bfloat16> : NarrowArith<Bfloat16, ToBfloat16> {};
template <>
struct Arith<Fp8E4M3> : NarrowArith<Fp8E4M3, ToFp8E4M3> {};
template <>
struct Arith<Fp8E5M2> : NarrowArith<Fp8E5M2, ToFp8E5M2> {};

// Calls f.template operator()<T>() with the host type of `type`.
template <typename F>
decltype(auto) Dispatch(DataType type, F&& f) {
  switch (type) {
    case DataType::kInt8:
      return f.template operator()<int8_t>();
    case DataType::kUint8:
      return f.template operator()<uint8_t>();
    case DataType::kInt32:
      return f.template operator()<int32_t>();
    case DataType::kUint32:
      return f.template operator()<uint32_t>();
    case DataType::kInt64:
      return f.template operator()<int64_t>();
    case DataType::kUint64:
      return f.template operator()<uint64_t>();
    case DataType::kHalf:
      return f.template operator()<Half>();
    case DataType::kFloat:
      return f.template operator()<float>();
    case DataType::kDouble:
      return f.template operator()<double>();
    case DataType::kBfloat16:
      return f.template operator()<Bfloat16>();
    case DataType::kFloat8e4m3:
      return f.template operator()<Fp8E4M3>();
    case DataType::kFloat8e5m2:
      return f.template operator()<Fp8E5M2>();
  }
  return f.template operator()<float>();
}

}  // namespace fabricscope
