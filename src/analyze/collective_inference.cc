#include "analyze/collective_inference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/parse.h"
#include "fabricscope/statistics.h"

namespace fabricscope {

size_t ElementSizeOf(std::string_view type) {
  // nccl-tests' names, its pre-2.0 names (char, int) and rccl-tests' FP8 spellings.
  static constexpr std::array<std::pair<std::string_view, size_t>, 20> kSizes = {{
      {"int8", 1},   {"uint8", 1},   {"char", 1},     {"int32", 4},    {"int", 4},
      {"uint32", 4}, {"int64", 8},   {"uint64", 8},   {"half", 2},     {"float16", 2},
      {"float", 4},  {"float32", 4}, {"double", 8},   {"float64", 8},  {"bfloat16", 2},
      {"f8e4m3", 1}, {"f8e5m2", 1},  {"fp8_e4m3", 1}, {"fp8_e5m2", 1}, {"bf16", 2},
  }};
  for (const auto& [name, size] : kSizes) {
    if (name == type) return size;
  }
  return 0;
}

namespace analyze {

// nccl-tests' and rccl-tests' names, without case and underscores, and the canonical one.
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kNames = {{
    {"allreduce", "all_reduce"},
    {"allgather", "all_gather"},
    {"reducescatter", "reduce_scatter"},
    {"broadcast", "broadcast"},
    {"reduce", "reduce"},
    {"alltoall", "alltoall"},
    {"alltoallv", "alltoallv"},
    {"sendrecv", "sendrecv"},
    {"gather", "gather"},
    {"scatter", "scatter"},
    {"hypercube", "hypercube"},
    {"allreducebias", "all_reduce_bias"},
}};

std::string CanonicalCollective(std::string_view name) {
  const size_t slash = name.find_last_of('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (name.size() > 5 && name.substr(name.size() - 5) == "_perf") name.remove_suffix(5);
  // Compare without case and underscores, so rccl-tests' "AllReduce" and "AlltoAll" match.
  std::string key;
  std::string lower;
  for (char c : name) {
    const char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    lower += l;
    if (l != '_') key += l;
  }
  for (const auto& [k, canonical] : kNames) {
    if (k == key) return std::string(canonical);
  }
  return lower;
}

bool IsKnownCollective(std::string_view canonical) {
  return std::any_of(kNames.begin(), kNames.end(),
                     [&](const auto& entry) { return entry.second == canonical; });
}

namespace {

bool Near(double a, double b, double tolerance) { return std::fabs(a - b) <= tolerance; }

// What the rows of one test say about its collective.
struct RowEvidence {
  size_t with_op = 0;
  size_t without_op = 0;
  bool rooted = false;
  // size / (count x element size), from the largest row that has a count (small sizes round
  // their per-rank counts down to 0).
  double ratio = 0;
  size_t ratio_size = 0;
  std::vector<double> factors;        // busbw / algbw where algbw gives it precisely
  std::vector<double> rough_factors;  // the same where algbw is below 1 GB/s
};

RowEvidence GatherEvidence(const ResultRow* rows, size_t n) {
  RowEvidence e;
  for (size_t i = 0; i < n; ++i) {
    const ResultRow& row = rows[i];
    if (row.redop == "none" || row.redop.empty()) {
      ++e.without_op;
    } else {
      ++e.with_op;
    }
    if (row.root >= 0) e.rooted = true;
    const size_t elem = ElementSizeOf(row.type);
    if (row.count > 0 && elem > 0 && row.size >= e.ratio_size) {
      e.ratio_size = row.size;
      e.ratio = static_cast<double>(row.size) / static_cast<double>(row.count * elem);
    }
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (!half->has_value() || !((*half)->algbw > 0) || !std::isfinite((*half)->busbw)) continue;
      const double f = (*half)->busbw / (*half)->algbw;
      // Printed with two decimals, only bandwidths of a few GB/s give the factor precisely.
      if ((*half)->algbw >= 1.0) {
        e.factors.push_back(f);
      } else {
        e.rough_factors.push_back(f);
      }
    }
  }
  return e;
}

// The shape the evidence gives: the bus factor and whether sizes are per-rank chunks.
struct Shape {
  bool rooted = false;
  bool chunked = false;
  bool have_factor = false;
  double factor = 0;
};

// From the factor alone: 2(n-1)/n gives n = 2 / (2 - f), (n-1)/n gives n = 1 / (1 - f).
int RanksFromFactor(const Shape& shape, bool all_reduce) {
  if (!shape.have_factor) return 0;
  const double denominator = all_reduce ? 2.0 - shape.factor : 1.0 - shape.factor;
  if (denominator <= 0.01) return 0;
  const long value = std::lround((all_reduce ? 2.0 : 1.0) / denominator);
  return value >= 1 && value <= 1 << 20 ? static_cast<int>(value) : 0;
}

// The collective of rows that carry a reduction op.
void NameReduction(const Shape& shape, Inference* out) {
  if (shape.rooted) {
    out->collective = "reduce";
  } else if (shape.chunked) {
    out->collective = "reduce_scatter";
  } else if (shape.have_factor && Near(shape.factor, 1.0, 0.02)) {
    // all_reduce on 2 ranks has the factor 1 too.
    out->collective = out->nranks == 2 ? "all_reduce" : "sendrecv";
    out->alternative = out->nranks == 2 ? "sendrecv" : "";
    if (out->nranks == 0) {
      out->collective = "all_reduce";
      out->alternative = "sendrecv";
    }
  } else {
    out->collective = "all_reduce";
    if (out->nranks == 0) out->nranks = RanksFromFactor(shape, true);
  }
}

// The collective of rows without a reduction op (data movement); none when nothing tells.
void NameMovement(const Shape& shape, Inference* out) {
  if (shape.rooted) {
    if (shape.chunked) {
      out->collective = "gather";
      out->alternative = "scatter";
    } else {
      out->collective = "broadcast";
    }
  } else if (shape.chunked) {
    out->collective = "all_gather";
    out->alternative = "alltoall";
  } else if (shape.have_factor && Near(shape.factor, 1.0, 0.02)) {
    out->collective = "broadcast";
  } else if (shape.have_factor) {
    out->collective = "all_gather";
    out->alternative = "alltoall";
    if (out->nranks == 0) out->nranks = RanksFromFactor(shape, false);
  }
}

}  // namespace

Inference InferCollective(const ResultRow* rows, size_t n, int nranks) {
  Inference out;
  out.nranks = nranks;
  if (n == 0) return out;
  const RowEvidence e = GatherEvidence(rows, n);
  Shape shape;
  shape.rooted = e.rooted;
  shape.factor = Median(e.factors.empty() ? e.rough_factors : e.factors);
  shape.have_factor = !e.factors.empty() || !e.rough_factors.empty();
  const long whole_ratio = std::lround(e.ratio);
  shape.chunked =
      e.ratio_size > 0 && whole_ratio > 1 && Near(e.ratio, static_cast<double>(whole_ratio), 0.01);
  if (shape.chunked && out.nranks == 0) out.nranks = static_cast<int>(whole_ratio);
  if (e.with_op > e.without_op) {
    NameReduction(shape, &out);
  } else {
    NameMovement(shape, &out);
  }
  return out;
}

int RanksFromColumns(const ResultRow* rows, size_t n, std::string_view collective) {
  const CollectiveSpec* spec = nullptr;
  for (const CollectiveSpec& candidate : Collectives()) {
    if (candidate.name == collective) spec = &candidate;
  }
  if (spec == nullptr || n == 0) return 0;
  double ratio = 0;
  size_t ratio_size = 0;
  std::vector<double> factors;
  for (size_t i = 0; i < n; ++i) {
    const ResultRow& row = rows[i];
    const size_t elem = ElementSizeOf(row.type);
    if (row.count > 0 && elem > 0 && row.size >= ratio_size) {
      ratio_size = row.size;
      ratio = static_cast<double>(row.size) / static_cast<double>(row.count * elem);
    }
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (half->has_value() && (*half)->algbw >= 1.0 && std::isfinite((*half)->busbw)) {
        factors.push_back((*half)->busbw / (*half)->algbw);
      }
    }
  }
  if (spec->alg_bytes(1, 1, 2) == 2 && ratio_size > 0) {
    const long whole = std::lround(ratio);
    if (whole > 1 && Near(ratio, static_cast<double>(whole), 0.01)) return static_cast<int>(whole);
  }
  if (factors.empty() || spec->bus_factor(2) == spec->bus_factor(3)) return 0;
  const double factor = Median(factors);
  int best = 0;
  double best_error = 0.01;
  for (int ranks = 2; ranks <= 65536; ranks *= 2) {
    // Powers of two first (the usual case), then every count near the best one.
    const double error = std::fabs(spec->bus_factor(ranks) - factor);
    if (error < best_error) {
      best_error = error;
      best = ranks;
    }
  }
  for (int ranks = 2; ranks <= 4096; ++ranks) {
    const double error = std::fabs(spec->bus_factor(ranks) - factor);
    if (error < best_error - 1e-9) {
      best_error = error;
      best = ranks;
    }
  }
  return best;
}

}  // namespace analyze
}  // namespace fabricscope
