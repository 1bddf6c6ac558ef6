#include "model/nccl_tuning.h"

namespace fabricscope::model {

// NCCL 2.25.1, src/graph/tuning.cc, NVIDIA/nccl commit
// 80f6bda4378b99d99e82b4d76a633791cc45fef0 (makefiles/version.mk there: 2.25.1-1): the
// arrays baseLat, hwLat, llMaxBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws,
// perChMaxTreeBws and treeCorrectionFactor, and the literals of ncclTopoTuneModel and
// ncclTopoGetAlgoTime. Rows and columns keep NCCL's order. docs/model.md explains each use.
const NcclTuningConstants& NcclTuning() {
  static const NcclTuningConstants table = {
      .version = "2.25.1",
      .source = "NVIDIA/nccl src/graph/tuning.cc @ 80f6bda4378b99d99e82b4d76a633791cc45fef0",
      .base_latency_us =
          {
              {6.8f, 14.0f, 8.4f},  // Tree
              {6.6f, 14.0f, 8.4f},  // Ring
              {0, 0, 0},            // CollNetDirect
              {0, 0, 0},            // CollNetChain
              {0, 0, 0},            // NVLS
              {0, 0, 0},            // NVLSTree
              {0, 0, 0},            // PAT (its latency is a formula of its own)
          },
      .hw_latency_us =
          {
              {
                  // NVLink
                  {0.6f, 1.25f, 4.0f},  // Tree
                  {0.6f, 1.9f, 3.4f},   // Ring
                  {0, 0, 3.7f},         // CollNetDirect
                  {0, 0, 2.8f},         // CollNetChain
                  {0, 0, 25.0f},        // NVLS
                  {0, 0, 25.0f},        // NVLSTree
                  {0, 0, 0},            // PAT
              },
              {
                  // PCI
                  {1.0f, 1.9f, 4.0f},
                  {1.0f, 2.5f, 5.7f},
                  {0, 0, 3.7f},
                  {0, 0, 2.8f},
                  {0, 0, 0},
                  {0, 0, 0},
                  {0, 0, 0},
              },
              {
                  // Net
                  {5.0f, 8.5f, 14.0f},
                  {2.7f, 4.0f, 14.0f},
                  {0, 0, 31.0f},
                  {0, 0, 30.0f},
                  {0, 0, 18.0f},
                  {0, 0, 14.0f},
                  {0, 0, 0},
              },
          },
      .ll_max_bw =
          {
              {39.0, 39.0, 20.4},   // Volta on 1 node; Intel CPUs across nodes
              {87.7, 22.5, 19.0},   // Ampere on 1 node; AMD CPUs across nodes
              {141.0, 45.0, 35.0},  // Hopper
              {282.0, 90.0, 70.0},  // Blackwell (NCCL writes 2 x Hopper)
          },
      .ring_ll128_max_bw_per_channel =
          {
              {20.0, 20.0, 20.0},
              {20.0, 20.0, 20.0},
              {36.7, 36.7, 36.7},
              {73.4, 73.4, 73.4},
          },
      .tree_ll128_max_bw_per_channel =
          {
              {20.0, 20.0, 20.0},
              {20.0, 20.0, 20.0},
              {36.7, 36.7, 29.0},
              {73.4, 73.4, 58.0},
          },
      .tree_max_bw_per_channel =
          {
              {26.5, 18.5, 10.0},
              {24.0, 23.6, 17.8},
              {38.7, 41.4, 36.0},
              {77.4, 82.8, 72.0},
          },
      .tree_correction =
          {
              {1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .7f, .7f,  .7f,  .7f,  .6f, .5f,
               .4f,  .4f,  .5f,  .6f,  .7f, .8f, .9f, 1.0f, 1.0f, 1.0f, 1.0f},
              {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .8f, .8f, .7f,  .6f, .6f,
               .6f,  .6f,  .6f,  .6f,  .8f,  .9f, .9f, .9f, .9f, 1.0f, 1.0f},
              {.9f, .9f, .9f, .9f, .9f, .9f, .9f, .8f, .7f, .6f, .6f, .5f,
               .5f, .5f, .5f, .6f, .7f, .8f, .7f, .7f, .8f, .9f, .9f},
          },
      .ring_ll_factor = 0.5,
      .ring_ll128_factor = 0.92,
      .tree_factor = 0.92,
      .tree_ll_factor = 1.0 / 3.8,
      .tree_ll128_factor_1node = 7.0 / 9.0,
      .tree_ll128_factor = 120.0 / 128.0,
      .pat_factor = 0.75,
      .collnet_direct_hopper_factor = 0.85,
      .tree_ratio = 0.5,
      .nvls_ratio = 5.0 / 6.0,
      .net_overhead_intel_us = 1.0,
      .net_overhead_amd_us = 2.0,
      .net_overhead_simple_factor = 3.0,
      .ring_plateau_factor = 1.4,
      .ring_plateau_factor_volta = 1.9,
      .ring_plateau_min_bytes = 64,
      .collnet_arity_latency_us = 0.4,
      .pat_base_latency_us = 8.0,
      .pat_log_divisor = 3.5,
      .pat_per_rank_latency_us = 2.8,
  };
  return table;
}

// fabricscope's own factors: NCCL measures these from the machine it runs on; a model of a
// machine we do not have takes them from published results (shared/reference/platforms.md).
const PlatformFactors& Factors() {
  static const PlatformFactors factors = {
      // Hopper: 1-node NVLS all_reduce 480 GB/s against a 370 GB/s ring (nccl-tests #212;
      // Azure ND H100 v5 478.9). Blackwell: p6-b200 1-node 845.7 against 720 (stas00).
      .nvls_gain = {0.0, 0.0, 1.3, 1.17},
      .transports =
          {
              {"IB", 0.96, true, "nccl-tests #119: 24 GB/s busbw per 200 Gb/s NIC, 96%"},
              {"RoCE", 0.90, true, "docs/catalog.md: derived bands use 0.9 off InfiniBand"},
              {"gIB", 0.90, true, "Google's gIB NCCL plugin over the same RoCE NICs as RoCE"},
              {"EFA", 0.90, true, "docs/catalog.md: derived bands use 0.9 off InfiniBand"},
              {"TCPX", 0.68, false, "seed 000: 2-node a3-highgpu all_reduce 67.8 of 100 GB/s"},
              {"TCPXO", 0.94, false, "dstack a3mega: 2-node all_gather 188 of 200 GB/s"},
              {"TCP", 0.20, false, "seed 000: without GPUDirect-TCPX, 20 of 100 GB/s"},
          },
      .default_net_efficiency = 0.9,
      .max_channels = 32,
      .single_node_channels = 16,
      .floor_probe_bytes = 1024,
  };
  return factors;
}

}  // namespace fabricscope::model
