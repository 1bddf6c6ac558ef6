#include "fabricscope/collective.h"

#include <string>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

// Per-rank counts are rounded down to a multiple of 16 bytes, as nccl-tests does, so
// that every rank's chunk stays aligned; tiny sizes therefore give a count of 0.
size_t PerRank(size_t count, size_t elem_size, int nranks) {
  const size_t per_rank = count / static_cast<size_t>(nranks);
  const size_t align = elem_size >= 16 ? 1 : 16 / elem_size;
  return per_rank - per_rank % align;
}

CollectiveCounts WholeBuffer(size_t bytes, size_t elem_size, int /*nranks*/) {
  const size_t count = bytes / elem_size;
  return {count, count, count, 0, 0};
}

// all_gather, gather: each rank contributes a chunk; the receive buffer holds them all.
CollectiveCounts GatherShape(size_t bytes, size_t elem_size, int nranks) {
  const size_t base = PerRank(bytes / elem_size, elem_size, nranks);
  const size_t n = static_cast<size_t>(nranks);
  return {base, base * n, base, base, 0};
}

// reduce_scatter, scatter: the send buffer holds every chunk; each rank receives one.
CollectiveCounts ScatterShape(size_t bytes, size_t elem_size, int nranks) {
  const size_t base = PerRank(bytes / elem_size, elem_size, nranks);
  const size_t n = static_cast<size_t>(nranks);
  return {base * n, base, base, 0, base};
}

CollectiveCounts AlltoAllShape(size_t bytes, size_t elem_size, int nranks) {
  const size_t base = PerRank(bytes / elem_size, elem_size, nranks);
  const size_t n = static_cast<size_t>(nranks);
  return {base * n, base * n, base, 0, 0};
}

double RingAllReduceFactor(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0.0; }
double RingFactor(int n) { return n > 0 ? static_cast<double>(n - 1) / n : 0.0; }
double One(int /*n*/) { return 1.0; }

size_t CountBytes(size_t count, size_t elem_size, int /*n*/) { return count * elem_size; }
size_t TotalBytes(size_t count, size_t elem_size, int n) {
  return count * elem_size * static_cast<size_t>(n);
}

const std::vector<CollectiveSpec> kCollectives = {
    {Collective::kAllReduce, "all_reduce", "all_reduce_perf",
     "every rank ends with the reduction of all ranks' buffers", true, false, WholeBuffer,
     RingAllReduceFactor, CountBytes},
    {Collective::kAllGather, "all_gather", "all_gather_perf",
     "every rank ends with every rank's chunk", false, false, GatherShape, RingFactor, TotalBytes},
    {Collective::kReduceScatter, "reduce_scatter", "reduce_scatter_perf",
     "rank r ends with chunk r of the reduction", true, false, ScatterShape, RingFactor,
     TotalBytes},
    {Collective::kBroadcast, "broadcast", "broadcast_perf", "the root's buffer reaches every rank",
     false, true, WholeBuffer, One, CountBytes},
    {Collective::kReduce, "reduce", "reduce_perf", "the root ends with the reduction", true, true,
     WholeBuffer, One, CountBytes},
    {Collective::kAlltoAll, "alltoall", "alltoall_perf",
     "rank r sends its chunk p to rank p and receives chunk r of every rank", false, false,
     AlltoAllShape, RingFactor, TotalBytes},
    {Collective::kSendRecv, "sendrecv", "sendrecv_perf",
     "every rank sends to rank+1 and receives from rank-1", true, false, WholeBuffer, One,
     CountBytes},
    {Collective::kGather, "gather", "gather_perf", "the root ends with every rank's chunk", false,
     true, GatherShape, RingFactor, TotalBytes},
    {Collective::kScatter, "scatter", "scatter_perf", "the root sends chunk r to rank r", false,
     true, ScatterShape, RingFactor, TotalBytes},
};

std::string Names() {
  std::string out;
  for (const auto& spec : kCollectives) {
    if (!out.empty()) out += ", ";
    out += spec.name;
  }
  return out;
}

}  // namespace

const std::vector<CollectiveSpec>& Collectives() { return kCollectives; }

const CollectiveSpec& FindCollective(std::string_view name) {
  for (const auto& spec : kCollectives) {
    if (spec.name == name || spec.perf_binary == name) return spec;
  }
  throw UsageError("unknown collective '" + std::string(name) + "': choose " + Names() +
                   ", a comma-separated list of them, or all");
}

const CollectiveSpec& SpecOf(Collective id) {
  for (const auto& spec : kCollectives) {
    if (spec.id == id) return spec;
  }
  throw UsageError("unknown collective id");
}

std::vector<Collective> ParseCollectives(std::string_view value) {
  std::vector<Collective> out;
  if (value == "all") {
    for (const auto& spec : kCollectives) out.push_back(spec.id);
    return out;
  }
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = value.find(',', start);
    const std::string_view item = value.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) {
      throw UsageError("empty name in --collective '" + std::string(value) + "': choose " +
                       Names() + ", a comma-separated list of them, or all");
    }
    out.push_back(FindCollective(item).id);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace fabricscope
