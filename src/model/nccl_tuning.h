// The constants behind the analytic model, as data: NCCL's own tuning table and the few
// platform-derived factors fabricscope adds where NCCL's inputs are topology measurements.
#pragma once

namespace fabricscope::model {

// NCCL's index orders (src/include/nccl_common.h, src/graph/tuning.cc).
inline constexpr int kNumAlgorithms = 7;   // Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT
inline constexpr int kNumProtocols = 3;    // LL LL128 Simple
inline constexpr int kNumHardware = 3;     // NVLink PCI Net
inline constexpr int kNumArchs = 4;        // Volta Ampere Hopper Blackwell
inline constexpr int kNumNodeBuckets = 3;  // 1 node, 2 nodes, more
inline constexpr int kTreeCorrectionSizes = 23;  // powers of two from 64 B

inline constexpr int kHwNvlink = 0;
inline constexpr int kHwPci = 1;
inline constexpr int kHwNet = 2;

// NCCL's tuning model: latencies in microseconds, bandwidths in GB/s, as ncclTopoTuneModel
// and ncclTopoGetAlgoTime use them.
struct NcclTuningConstants {
  const char* version;  // "2.25.1"
  const char* source;   // repository, file and commit the figures were read from

  float base_latency_us[kNumAlgorithms][kNumProtocols];
  float hw_latency_us[kNumHardware][kNumAlgorithms][kNumProtocols];

  // LL protocol cap for the whole communicator: row by GPU arch on one node, by CPU vendor
  // across nodes (row 0 Intel, row 1 AMD); column by node bucket.
  double ll_max_bw[kNumArchs][kNumNodeBuckets];
  // Per-channel caps by GPU arch and node bucket.
  double ring_ll128_max_bw_per_channel[kNumArchs][kNumNodeBuckets];
  double tree_ll128_max_bw_per_channel[kNumArchs][kNumNodeBuckets];
  double tree_max_bw_per_channel[kNumArchs][kNumNodeBuckets];
  // Tree all_reduce bandwidth correction by protocol and log2(size / 64 B).
  float tree_correction[kNumProtocols][kTreeCorrectionSizes];

  // Scalar refinements of ncclTopoTuneModel.
  double ring_ll_factor;                // Ring/LL busbw x 0.5
  double ring_ll128_factor;             // Ring/LL128 busbw x 0.92 (120/128 payload)
  double tree_factor;                   // Tree all_reduce busbw x 0.92
  double tree_ll_factor;                // Tree/LL busbw / 3.8
  double tree_ll128_factor_1node;       // 7/9 on one node
  double tree_ll128_factor;             // 120/128 across nodes
  double pat_factor;                    // PAT busbw x 0.75
  double collnet_direct_hopper_factor;  // CollNetDirect x 0.85 on sm90+
  double tree_ratio;                    // busbw -> algbw for Tree and CollNet: 0.5
  double nvls_ratio;                    // busbw -> algbw for NVLS and NVLSTree: 5/6
  double net_overhead_intel_us;         // per ring step across nodes, x3 for Simple
  double net_overhead_amd_us;
  double net_overhead_simple_factor;
  double ring_plateau_factor;        // Ring/Simple all_reduce latency x 1.4 (sm80+) ...
  double ring_plateau_factor_volta;  // ... x 1.9 before
  double ring_plateau_min_bytes;     // ... when bytes / (channels x ranks) >= 64
  double collnet_arity_latency_us;   // CollNetDirect: 0.4 us per local rank
  double pat_base_latency_us;        // PAT: 8 + log2(nodes) x interLat / 3.5 + ranks x 2.8
  double pat_log_divisor;
  double pat_per_rank_latency_us;
};

// The table read from NCCL 2.25.1 (see source).
const NcclTuningConstants& NcclTuning();

// What NCCL's formulas take as measured topology (graph bandwidths, link types, network
// latency) fabricscope derives from platform facts; these factors say how, with sources.
struct PlatformFactors {
  // NVLS all_reduce busbw over the single-node ring busbw, by GPU arch (0 = no NVLS).
  double nvls_gain[kNumArchs];
  // Fraction of NIC line rate a healthy ring carries, by transport, when the catalog has
  // no published multi-node ring figure for the platform.
  struct Transport {
    const char* name;
    double net_efficiency;
    bool ll128_over_net;  // NCCL enables LL128 across nodes only on GPUDirect paths
    const char* source;
  };
  Transport transports[7];
  double default_net_efficiency;  // an unknown transport
  int max_channels;               // NCCL_MAX_CHANNELS-like ceiling on derived channel counts
  int single_node_channels;       // channels of a single-node NVLink ring
  double floor_probe_bytes;       // size at which a catalog latency floor is matched
};

const PlatformFactors& Factors();

}  // namespace fabricscope::model
