// The collectives: how each one sizes its buffers, places in-place data and counts bandwidth.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope {

// Every collective fabricscope can time.
enum class Collective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kSendRecv,
  kGather,
  kScatter,
};

// Buffer geometry of one call, in elements, as nccl-tests' getCollByteCount computes it.
struct CollectiveCounts {
  size_t send_count = 0;           // elements in each rank's send buffer
  size_t recv_count = 0;           // elements in each rank's receive buffer
  size_t param_count = 0;          // the count argument of the call (the table's count column)
  size_t send_inplace_offset = 0;  // in-place: send buffer = recv buffer + this (elements)
  size_t recv_inplace_offset = 0;  // in-place: recv buffer = send buffer + this (elements)
};

// Static description of a collective: the registry entry the engine, CLI and reporters share.
struct CollectiveSpec {
  Collective id;
  std::string_view name;         // "all_reduce"
  std::string_view perf_binary;  // "all_reduce_perf"
  std::string_view description;
  bool has_op;    // prints a redop and takes -o
  bool has_root;  // rooted: prints the root and takes -r
  // Element counts for a size in bytes with nranks ranks.
  CollectiveCounts (*counts)(size_t bytes, size_t elem_size, int nranks);
  // busbw / algbw.
  double (*bus_factor)(int nranks);
  // Bytes that algbw divides by time (nccl-tests' getBw numerator).
  size_t (*alg_bytes)(size_t param_count, size_t elem_size, int nranks);
};

// All collectives in the order `--collective all` runs them.
const std::vector<CollectiveSpec>& Collectives();
// Lookup by name ("all_reduce") or perf binary ("all_reduce_perf"); throws UsageError.
const CollectiveSpec& FindCollective(std::string_view name);
const CollectiveSpec& SpecOf(Collective id);
// Parses a --collective value: a name, a comma-separated list, or "all".
std::vector<Collective> ParseCollectives(std::string_view value);

}  // namespace fabricscope
