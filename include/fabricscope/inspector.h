// NCCL Inspector's per-collective JSONL (plugins/profiler/inspector in NVIDIA/nccl), as
// Inspector writes it (self-contained records up to v4.2, dump_stats markers with their
// records since v4.3) and as libnccl-profiler-fabricscope.so writes it (the same fields, plus
// a "fabricscope" object). `analyze` reads it into the results record; `watch` reads the
// records themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabricscope/parse.h"

namespace fabricscope {

// One collective of one rank.
struct InspectorRecord {
  std::string source;  // "file:line"
  std::string hostname;
  int pid = 0;
  std::string comm;  // header.id
  int rank = 0;
  int nranks = 0;
  int nnodes = 0;
  std::string comm_name;   // header.comm_name (Inspector 2.30, ours): "unknown" when unnamed
  std::string collective;  // Inspector's name: "AllReduce"; p2p: "Send", "Recv"
  uint64_t seq = 0;
  // The size as nccl-tests counts it (the gathered buffer for AllGather and ReduceScatter);
  // `msg_bytes` is coll_msg_size_bytes as written: count x type size of NCCL's descriptor,
  // one rank's part for AllGather and ReduceScatter (Inspector 2.30's convention).
  uint64_t bytes = 0;
  uint64_t msg_bytes = 0;
  bool p2p = false;  // a p2p_perf record
  int peer = -1;     // p2p_peer
  // coll_timing_source: "kernel_gpu", "kernel_cpu", "collective_cpu" (an enqueue time under
  // NCCL 2.30, which watch does not judge), empty when the writer gave none.
  std::string timing_source;
  double exec_us = 0;
  double algbw_gbs = 0;
  double busbw_gbs = 0;
  std::string algo;
  std::string proto;
  std::string datatype;             // only in fabricscope's records ("ncclFloat32")
  std::optional<int64_t> start_us;  // event_trace_ts.coll_start_ts (verbose Inspector, ours)
  std::optional<int64_t> stop_us;
  // metadata.dump_timestamp_us: when the writer wrote the record, on every record of
  // Inspector's default (non-verbose) output; watch's time when there is no event trace.
  std::optional<int64_t> dump_us;
  std::string job;  // only in fabricscope's records
};

// One rank's ProxyOp times towards one peer over one drain of the profiler (its
// "fabricscope_link" records): the network half of its collectives on that link.
struct InspectorLink {
  std::string source;
  std::string hostname;
  std::string comm;
  int rank = 0;
  int nranks = 0;
  int peer = 0;
  bool send = true;
  uint64_t ops = 0;
  double median_us = 0;
  int64_t start_us = 0;
};

// Records and problems of one input.
struct InspectorRead {
  std::vector<InspectorRecord> records;
  std::vector<InspectorLink> links;
  std::vector<Diagnostic> diagnostics;
  uint64_t dropped = 0;  // records the writer reported lost (dump_stats)
  // Keys of the records that are neither read nor named as ignored (InspectorKeys()), as
  // paths ("coll_perf.coll_new_field"), each with the "file:line" where it was first met:
  // what a newer writer added, which the judgement goes on without.
  std::vector<std::pair<std::string, std::string>> unknown_keys;
};

// Every key of NCCL Inspector's format v4.0 (NVIDIA/nccl v2.30.7-1
// plugins/profiler/inspector/inspector_json.cc) and of the profiler's records, as a path
// ("coll_perf.event_trace_ts.kernel_events[].kernel_start_ts"), with what the reader does
// with it: "read: ..." or "ignored: why".
struct InspectorKey {
  std::string_view path;
  std::string_view use;
};
std::span<const InspectorKey> InspectorKeys();

// The warning for keys no reader knows, naming each and where it was first met.
Diagnostic UnknownKeysDiagnostic(const std::vector<std::pair<std::string, std::string>>& keys,
                                 const std::string& source);

// Whether `text` starts like Inspector JSONL (its first object has coll_perf, p2p_perf,
// dump_stats, or the profiler's fabricscope_link).
bool LooksLikeInspectorJsonl(std::string_view text);

// Every collective and p2p record of `text`, and the profiler's link records; each bad line
// is a diagnostic naming it, and reading goes on. Proxy traces are skipped. `first_line` numbers
// the first line of `text` (a live tail reads a file piece by piece).
InspectorRead ReadInspectorJsonl(std::string_view text, const std::string& source,
                                 size_t first_line = 1);

// NCCL Inspector's Prometheus mode (NCCL_INSPECTOR_PROM_DUMP=1): one snapshot of a
// nccl_inspector_metrics_<GPU UUID>.prom file, written at `dump_us` (its modification time).
// Each bucket (collective or p2p operation, size range, algorithm and protocol, communicator
// name, per GPU) is one record: busbw the interval's geometric mean, exec_us its mean time,
// the size the bucket's lower bound, the rank the GPU's index, the communicator its name and
// size. Metrics it does not know go to unknown_keys ("metric NAME").
bool LooksLikeInspectorProm(std::string_view text);
InspectorRead ReadInspectorProm(std::string_view text, const std::string& source, int64_t dump_us);

// fabricscope's collective name of an Inspector one ("AllReduce" -> "all_reduce"), empty if
// unknown.
std::string CollectiveOfInspector(std::string_view name);

}  // namespace fabricscope
