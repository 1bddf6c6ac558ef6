// Element types and reduction ops as nccl-tests names them, with host arithmetic for both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope {

// The element types of nccl-tests' -d flag that have a host representation.
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
  kBfloat16
};

// The reduction ops of nccl-tests' -o flag.
enum class ReduceOp { kSum, kProd, kMax, kMin, kAvg };

// The op a host backend reduces with: an average is summed on the wire and divided once at
// the end, as NCCL's ncclAvg does.
constexpr ReduceOp CombiningOp(ReduceOp op) { return op == ReduceOp::kAvg ? ReduceOp::kSum : op; }

// IEEE binary16, stored as bits; arithmetic goes through float with round-to-nearest-even.
struct Half {
  uint16_t bits = 0;
};
// bfloat16 (the top half of a float), stored as bits; arithmetic as for Half.
struct Bfloat16 {
  uint16_t bits = 0;
};

float ToFloat(Half h);
Half ToHalf(float f);
float ToFloat(Bfloat16 b);
Bfloat16 ToBfloat16(float f);

// Bytes per element.
size_t SizeOf(DataType type);
// The nccl-tests name: "int8", "float", "bfloat16", ...
std::string_view NameOf(DataType type);
std::string_view NameOf(ReduceOp op);
bool IsFloatingPoint(DataType type);

// Every type / op, in nccl-tests' order (what "all" expands to).
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

// Value of element i of a buffer as a double (for messages and tests).
double ElementAsDouble(DataType type, const void* data, size_t i);
// Stores v (a small integer in every case this is used for) into element i.
void StoreElement(DataType type, void* data, size_t i, double v);

}  // namespace fabricscope
