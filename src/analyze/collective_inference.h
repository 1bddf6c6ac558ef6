// Naming the collective of a test: from what the log says, or from its columns.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "fabricscope/result.h"

namespace fabricscope::analyze {

// "all_reduce_perf", "./build/all_reduce_perf", "AllReduce" (rccl-tests' reports) and
// "all_reduce" all become "all_reduce"; a name it does not know is kept, lower-cased.
std::string CanonicalCollective(std::string_view name);
// Whether `canonical` (CanonicalCollective's result) is a collective it knows.
bool IsKnownCollective(std::string_view canonical);

// What the columns of a test say about it.
struct Inference {
  std::string collective;   // empty when the rows do not allow a guess
  std::string alternative;  // a second collective the columns fit equally well
  int nranks = 0;           // from the columns, when they tell it; 0 otherwise
};

// Infers from rows[0..n): the redop column (reductions print an op, the rest "none"), the
// root column (rooted collectives print a rank), size / (count x element size) (n for the
// collectives whose size column is the total of n chunks) and busbw / algbw (nccl-tests'
// factor: 2(n-1)/n, (n-1)/n or 1). `nranks` is the device-line count, or 0.
Inference InferCollective(const ResultRow* rows, size_t n, int nranks);

// The rank count the columns of a known collective imply: size / (count x element size) for
// the collectives whose size is n chunks, else the n whose busbw factor busbw / algbw is;
// 0 when they do not tell (broadcast's factor is 1 for any n).
int RanksFromColumns(const ResultRow* rows, size_t n, std::string_view collective);

}  // namespace fabricscope::analyze
