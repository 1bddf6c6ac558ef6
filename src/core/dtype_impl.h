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
template <>
struct Arith<Half> {
  using Wide = float;
  static float Load(Half v) { return ToFloat(v); }
  static Half Store(float v) { return ToHalf(v); }
};
template <>
struct Arith<Bfloat16> {
  using Wide = float;
  static float Load(Bfloat16 v) { return ToFloat(v); }
  static Bfloat16 Store(float v) { return ToBfloat16(v); }
};

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
  }
  return f.template operator()<float>();
}

}  // namespace fabricscope
