// Element types and reduction ops as nccl-tests names them, with host arithmetic for both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope {

// The element types of nccl-tests' -d flag, in its order (src/common.cu:37-45 at v2.19.6).
// The two FP8 types exist on the nccl backend from NCCL 2.24 (nccl.h's ncclFloat8e4m3 = 10,
// ncclFloat8e5m2 = 11); the host backends do not offer them.
enum class DataType {
  kInt8,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kHalf,
  kFloat,
  kDouble,
  kBfloat16,
  kFloat8e4m3,
  kFloat8e5m2
};

// The reduction ops of nccl-tests' -o flag (src/common.cu:57-65). kMulSum is NCCL's
// premultiplied sum (ncclRedOpCreatePreMulSum, NCCL 2.11+): each rank's input is multiplied
// by its own scalar, PremulScalar(rank), before the sum; only the nccl backend offers it.
enum class ReduceOp { kSum, kProd, kMax, kMin, kAvg, kMulSum };

// The op elements combine with: an average is summed and divided once at the end, and a
// premultiplied sum is summed once each input is multiplied.
constexpr ReduceOp CombiningOp(ReduceOp op) {
  return op == ReduceOp::kAvg || op == ReduceOp::kMulSum ? ReduceOp::kSum : op;
}

// The scalar nccl-tests gives rank `rank` for mulsum: 1 on even ranks, 2 on odd ones
// (ncclVerifiablePremulScalar, verifiable/verifiable.h:31-34 at v2.19.6).
constexpr double PremulScalar(int rank) { return rank % 2 == 0 ? 1.0 : 2.0; }

// IEEE binary16, stored as bits; arithmetic goes through float with round-to-nearest-even.
struct Half {
  uint16_t bits = 0;
};
// bfloat16 (the top half of a float), stored as bits; arithmetic as for Half.
struct Bfloat16 {
  uint16_t bits = 0;
};

// The two FP8 formats of NVIDIA's cuda_fp8.h, stored as bits: E4M3 (bias 7, no infinity,
// largest 448) and E5M2 (bias 15, IEEE's infinities, largest finite 57344). A float becomes
// FP8 as CUDA's __nv_fp8_e4m3(float) and __nv_fp8_e5m2(float) make it: round to nearest
// even, out-of-range values and infinities saturate to the largest finite (__NV_SATFINITE),
// NaN becomes 0x7f (with its sign).
struct Fp8E4M3 {
  uint8_t bits = 0;
};
struct Fp8E5M2 {
  uint8_t bits = 0;
};

float ToFloat(Half h);
Half ToHalf(float f);
float ToFloat(Bfloat16 b);
Bfloat16 ToBfloat16(float f);
float ToFloat(Fp8E4M3 v);
Fp8E4M3 ToFp8E4M3(float f);
float ToFloat(Fp8E5M2 v);
Fp8E5M2 ToFp8E5M2(float f);

// Bytes per element.
size_t SizeOf(DataType type);
// The nccl-tests name: "int8", "float", "bfloat16", ...
std::string_view NameOf(DataType type);
std::string_view NameOf(ReduceOp op);
bool IsFloatingPoint(DataType type);
// f8e4m3 or f8e5m2: NCCL's own types (2.24+), which the host backends do not offer.
bool IsFp8(DataType type);

// Every type / op, in nccl-tests' order; "all" is the ones of these a backend supports.
const std::vector<DataType>& AllDataTypes();
const std::vector<ReduceOp>& AllReduceOps();

// Parse one name; throws UsageError listing the valid names.
DataType ParseDataType(std::string_view name);
ReduceOp ParseReduceOp(std::string_view name);
// Parse a -d / -o value: one name or "all".
std::vector<DataType> ParseDataTypes(std::string_view value);
std::vector<ReduceOp> ParseReduceOps(std::string_view value);

// inout[i] = inout[i] (op) in[i] for n elements. kAvg accumulates as kSum; finish with
// FinishAverage once every contribution is in.
void ReduceInto(DataType type, ReduceOp op, void* inout, const void* in, size_t n);
// out[i] = a[i] (op) b[i]; out may alias a or b (the shape Gloo's reduce callback has).
void Reduce3(DataType type, ReduceOp op, void* out, const void* a, const void* b, size_t n);
// Divides n summed elements by nranks, as NCCL's ncclAvg does after its sum.
void FinishAverage(DataType type, void* data, size_t n, int nranks);
// out[i] = in[i] * scalar in the type's arithmetic (mulsum's premultiplication).
void Premultiply(DataType type, void* out, const void* in, size_t n, double scalar);

// Value of element i of a buffer as a double (for messages and tests).
double ElementAsDouble(DataType type, const void* data, size_t i);
// Stores v (a small integer in every case this is used for) into element i.
void StoreElement(DataType type, void* data, size_t i, double v);

}  // namespace fabricscope
