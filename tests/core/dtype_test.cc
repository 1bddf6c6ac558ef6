#include "fabricscope/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

TEST(DtypeTest, HalfRoundTripsExactValuesAndRoundsToNearestEven) {
  for (float v : {0.0f, 1.0f, -2.5f, 2048.0f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f}) {
    EXPECT_EQ(ToFloat(ToHalf(v)), v) << v;
  }
  EXPECT_EQ(ToHalf(1.0f).bits, 0x3c00);
  EXPECT_EQ(ToHalf(65504.0f).bits, 0x7bff);
  EXPECT_EQ(ToHalf(65520.0f).bits, 0x7c00);      // rounds up to infinity
  EXPECT_EQ(ToFloat(ToHalf(2049.0f)), 2048.0f);  // tie goes to even
  EXPECT_EQ(ToFloat(ToHalf(2051.0f)), 2052.0f);
  EXPECT_TRUE(std::isnan(ToFloat(ToHalf(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DtypeTest, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(ToBfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(ToFloat(ToBfloat16(256.0f)), 256.0f);
  EXPECT_EQ(ToFloat(ToBfloat16(257.0f)), 256.0f);  // tie to even
  EXPECT_EQ(ToFloat(ToBfloat16(259.0f)), 260.0f);
}

// Every FP8 code converts back to itself; the ends of both formats, and saturation, are
// CUDA's (cuda_fp8.hpp; checked code by code against it in nccl_backend_test where the
// headers are installed).
TEST(DtypeTest, Fp8CodesRoundTripAndSaturateAsCuda) {
  for (unsigned code = 0; code < 256; ++code) {
    const auto bits = static_cast<uint8_t>(code);
    const float e4m3 = ToFloat(Fp8E4M3{bits});
    const float e5m2 = ToFloat(Fp8E5M2{bits});
    if (!std::isnan(e4m3)) {
      EXPECT_EQ(ToFp8E4M3(e4m3).bits, bits) << code;
    }
    if (std::isfinite(e5m2)) {
      EXPECT_EQ(ToFp8E5M2(e5m2).bits, bits) << code;
    }
  }
  EXPECT_EQ(ToFloat(Fp8E4M3{0x7e}), 448.0f);
  EXPECT_TRUE(std::isnan(ToFloat(Fp8E4M3{0x7f})));
  EXPECT_EQ(ToFloat(Fp8E5M2{0x7b}), 57344.0f);
  EXPECT_TRUE(std::isinf(ToFloat(Fp8E5M2{0x7c})));
  EXPECT_EQ(ToFp8E4M3(17.0f).bits, 0x58);  // 16 and 18 are codes: the tie goes to even
  EXPECT_EQ(ToFp8E4M3(449.0f).bits, 0x7e);
  EXPECT_EQ(ToFp8E4M3(std::numeric_limits<float>::infinity()).bits, 0x7e);
  EXPECT_EQ(ToFp8E4M3(-1e9f).bits, 0xfe);
  EXPECT_EQ(ToFp8E5M2(1e9f).bits, 0x7b);
  EXPECT_EQ(ToFp8E4M3(std::numeric_limits<float>::quiet_NaN()).bits, 0x7f);
  EXPECT_EQ(ToFloat(Fp8E4M3{0x01}), std::ldexp(1.0f, -9));  // the smallest subnormal
}

TEST(DtypeTest, NamesParseBothWaysAndAllExpands) {
  for (DataType t : AllDataTypes()) EXPECT_EQ(ParseDataType(NameOf(t)), t);
  for (ReduceOp op : AllReduceOps()) EXPECT_EQ(ParseReduceOp(NameOf(op)), op);
  // nccl-tests' lists at 2.19.6 with NCCL 2.24+: ten types and two FP8, five ops and mulsum
  // (src/common.cu:1141-1160); a backend narrows "all" to what it has (SupportedOf).
  EXPECT_EQ(ParseDataTypes("all").size(), 12u);
  EXPECT_EQ(ParseReduceOps("all").size(), 6u);
  EXPECT_EQ(ParseDataType("f8e4m3"), DataType::kFloat8e4m3);
  EXPECT_EQ(ParseDataType("fp8_e5m2"), DataType::kFloat8e5m2);
  EXPECT_EQ(ParseReduceOp("mulsum"), ReduceOp::kMulSum);
  EXPECT_EQ(SizeOf(DataType::kFloat8e4m3), 1u);
  EXPECT_EQ(SizeOf(DataType::kBfloat16), 2u);
  EXPECT_EQ(SizeOf(DataType::kUint64), 8u);
}

TEST(DtypeTest, UnknownNamesListTheValidOnes) {
  try {
    ParseDataType("float128");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("-d"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ParseReduceOp("xor"), UsageError);
}

TEST(DtypeTest, IntegerReductionsWrapLikeTheHardware) {
  int8_t a[2] = {100, -128};
  const int8_t b[2] = {100, -1};
  ReduceInto(DataType::kInt8, ReduceOp::kSum, a, b, 2);
  EXPECT_EQ(a[0], static_cast<int8_t>(-56));
  EXPECT_EQ(a[1], static_cast<int8_t>(127));
  uint32_t m[1] = {7};
  const uint32_t n[1] = {9};
  ReduceInto(DataType::kUint32, ReduceOp::kMax, m, n, 1);
  EXPECT_EQ(m[0], 9u);
  ReduceInto(DataType::kUint32, ReduceOp::kMin, m, n, 1);
  EXPECT_EQ(m[0], 9u);
}

TEST(DtypeTest, AverageDividesTheSumOnce) {
  float f[2] = {3.0f, 10.0f};
  FinishAverage(DataType::kFloat, f, 2, 4);
  EXPECT_FLOAT_EQ(f[0], 0.75f);
  EXPECT_FLOAT_EQ(f[1], 2.5f);
  int32_t i[1] = {10};
  FinishAverage(DataType::kInt32, i, 1, 4);
  EXPECT_EQ(i[0], 2);
  Half h[1] = {ToHalf(6.0f)};
  FinishAverage(DataType::kHalf, h, 1, 4);
  EXPECT_EQ(ToFloat(h[0]), 1.5f);
}

TEST(DtypeTest, HalfAndBfloat16ReduceThroughFloat) {
  Bfloat16 x[1] = {ToBfloat16(3.0f)};
  const Bfloat16 y[1] = {ToBfloat16(5.0f)};
  ReduceInto(DataType::kBfloat16, ReduceOp::kProd, x, y, 1);
  EXPECT_EQ(ElementAsDouble(DataType::kBfloat16, x, 0), 15.0);
  double d[1];
  StoreElement(DataType::kDouble, d, 0, 42.0);
  EXPECT_EQ(d[0], 42.0);
}

}  // namespace
}  // namespace fabricscope
