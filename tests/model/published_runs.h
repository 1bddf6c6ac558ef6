// Published nccl-tests runs from ../shared/reference, as the shared results record: the
// tables are copied digit for digit from the source named above each one.
#pragma once

#include <cstddef>
#include <string>

#include "fabricscope/platform.h"
#include "fabricscope/result.h"

namespace fabricscope::testing {

// The built-in catalog, built once: Catalog::Builtin() returns a value, so a reference
// into a temporary one would dangle.
inline const Catalog& BuiltinCatalog() {
  static const Catalog catalog = Catalog::Builtin();
  return catalog;
}

// One row of an nccl-tests table: size, then time (us), algbw, busbw out-of-place and
// in-place.
struct PublishedRow {
  size_t size;
  double oop_time_us, oop_algbw, oop_busbw;
  double ip_time_us, ip_algbw, ip_busbw;
};

// A row of a table that gives busbw only.
struct BusbwRow {
  size_t size;
  double busbw;
};

// seed 000_6daea02de48545cc.txt (SkyPilot GCP GPUDirect guide), all_gather_perf on 2 x
// a3-ultragpu-8g (16 H200, 8 x 400 Gb/s RoCE), -b 1K -e 8G -f 2, NCCL 2.26.6: first the
// SkyPilot run, then "raw NCCL test pods from GCP documentation".
inline constexpr PublishedRow kSkyPilotH200AllGather[] = {
    {1024, 28.39, 0.04, 0.03, 28.07, 0.04, 0.03},
    {2048, 28.29, 0.07, 0.07, 28.24, 0.07, 0.07},
    {4096, 28.85, 0.14, 0.13, 28.64, 0.14, 0.13},
    {8192, 34.12, 0.24, 0.23, 32.47, 0.25, 0.24},
    {16384, 33.28, 0.49, 0.46, 33.29, 0.49, 0.46},
    {32768, 34.80, 0.94, 0.88, 34.86, 0.94, 0.88},
    {65536, 40.62, 1.61, 1.51, 41.22, 1.59, 1.49},
    {131072, 36.17, 3.62, 3.40, 40.87, 3.21, 3.01},
    {262144, 41.81, 6.27, 5.88, 37.99, 6.90, 6.47},
    {524288, 43.98, 11.92, 11.18, 45.96, 11.41, 10.69},
    {1048576, 58.46, 17.94, 16.82, 54.81, 19.13, 17.93},
    {2097152, 68.40, 30.66, 28.74, 70.87, 29.59, 27.74},
    {4194304, 76.56, 54.78, 51.36, 76.13, 55.09, 51.65},
    {8388608, 86.92, 96.51, 90.47, 85.77, 97.81, 91.70},
    {16777216, 116.2, 144.43, 135.41, 114.9, 146.00, 136.87},
    {33554432, 174.4, 192.45, 180.42, 172.4, 194.66, 182.49},
    {67108864, 278.1, 241.27, 226.19, 270.5, 248.10, 232.59},
    {134217728, 499.6, 268.67, 251.88, 483.8, 277.44, 260.10},
    {268435456, 885.5, 303.16, 284.21, 870.7, 308.30, 289.03},
    {536870912, 1575.6, 340.75, 319.45, 1568.7, 342.24, 320.85},
    {1073741824, 3123.9, 343.72, 322.23, 3079.7, 348.65, 326.86},
    {2147483648, 6229.6, 344.72, 323.18, 6107.6, 351.61, 329.63},
    {4294967296, 12416, 345.92, 324.30, 12133, 354.00, 331.87},
    {8589934592, 24724, 347.44, 325.72, 24214, 354.75, 332.58},
};
inline constexpr PublishedRow kGcpH200AllGather[] = {
    {1024, 28.70, 0.04, 0.03, 27.82, 0.04, 0.03},
    {2048, 28.05, 0.07, 0.07, 28.03, 0.07, 0.07},
    {4096, 28.39, 0.14, 0.14, 28.35, 0.14, 0.14},
    {8192, 31.44, 0.26, 0.24, 31.23, 0.26, 0.25},
    {16384, 31.61, 0.52, 0.49, 31.70, 0.52, 0.48},
    {32768, 32.81, 1.00, 0.94, 32.76, 1.00, 0.94},
    {65536, 34.77, 1.88, 1.77, 34.58, 1.90, 1.78},
    {131072, 34.65, 3.78, 3.55, 37.37, 3.51, 3.29},
    {262144, 39.47, 6.64, 6.23, 37.89, 6.92, 6.49},
    {524288, 42.75, 12.26, 11.50, 40.59, 12.92, 12.11},
    {1048576, 54.70, 19.17, 17.97, 53.14, 19.73, 18.50},
    {2097152, 69.52, 30.16, 28.28, 66.52, 31.52, 29.55},
    {4194304, 77.41, 54.18, 50.79, 71.70, 58.50, 54.84},
    {8388608, 87.98, 95.35, 89.39, 86.18, 97.34, 91.25},
    {16777216, 117.6, 142.68, 133.76, 123.6, 135.69, 127.21},
    {33554432, 177.2, 189.36, 177.53, 176.9, 189.66, 177.81},
    {67108864, 277.8, 241.56, 226.47, 271.8, 246.94, 231.50},
    {134217728, 493.7, 271.86, 254.87, 486.3, 276.01, 258.76},
    {268435456, 876.1, 306.38, 287.23, 870.5, 308.38, 289.11},
    {536870912, 1580.2, 339.74, 318.51, 1568.3, 342.32, 320.93},
    {1073741824, 3126.8, 343.40, 321.93, 3084.1, 348.16, 326.40},
    {2147483648, 6218.0, 345.36, 323.78, 6097.1, 352.22, 330.20},
    {4294967296, 12400, 346.38, 324.73, 12135, 353.94, 331.82},
    {8589934592, 24739, 347.22, 325.52, 24244, 354.31, 332.16},
};

// seed 000_6daea02de48545cc.txt: 2 x a3-highgpu-8g (16 H100, 4 x 200 Gb/s GPUDirect-TCPX),
// all_reduce, "busbw GPUDirect-TCPX (GB/s)" column. Two decimals only: small sizes are
// quantized (0.01 GB/s is anything from 0.005 to 0.015).
inline constexpr BusbwRow kTcpxAllReduce[] = {
    {8, 0},
    {16, 0},
    {32, 0},
    {64, 0},
    {128, 0},
    {256, 0},
    {512, 0},
    {1024, 0.01},
    {2048, 0.01},
    {4096, 0.01},
    {8192, 0.02},
    {16384, 0.04},
    {32768, 0.09},
    {65536, 0.11},
    {131072, 0.19},
    {262144, 0.35},
    {524288, 0.65},
    {1048576, 1.33},
    {2097152, 2.43},
    {4194304, 4.8},
    {8388608, 9.21},
    {16777216, 17.16},
    {33554432, 30.08},
    {67108864, 45.31},
    {134217728, 61.58},
    {268435456, 67.82},
    {536870912, 67.09},
    {1073741824, 66.2},
    {2147483648, 65.72},
};

// A run of nodes x gpus ranks on hosts node0, node1, ... with the given rows.
template <size_t N>
RunResult PublishedRun(const std::string& collective, const PublishedRow (&rows)[N], int nodes,
                       int gpus) {
  RunResult run;
  run.tool = "nccl-tests";
  run.nranks = nodes * gpus;
  for (int r = 0; r < run.nranks; ++r) {
    RankInfo info;
    info.rank = r;
    info.hostname = "node" + std::to_string(r / gpus);
    info.device = r % gpus;
    run.ranks.push_back(info);
  }
  for (const auto& p : rows) {
    ResultRow row;
    row.collective = collective;
    row.size = p.size;
    row.type = "float";
    row.out_of_place = PlacementResult{p.oop_time_us, p.oop_algbw, p.oop_busbw, 0, {}, {}};
    row.in_place = PlacementResult{p.ip_time_us, p.ip_algbw, p.ip_busbw, 0, {}, {}};
    run.rows.push_back(row);
  }
  return run;
}

// A run built from busbw figures alone (a published summary, not a table): the time is what
// nccl-tests would have printed for that busbw. Rows below min_busbw are left out.
template <size_t N>
RunResult BusbwRun(const std::string& collective, const BusbwRow (&rows)[N], int nodes, int gpus,
                   double bus_factor, double min_busbw) {
  PublishedRow converted[N] = {};
  size_t used = 0;
  for (const auto& r : rows) {
    if (r.busbw < min_busbw) continue;
    const double algbw = r.busbw / bus_factor;
    const double time_us = static_cast<double>(r.size) / (algbw * 1e3);
    converted[used++] = {r.size, time_us, algbw, r.busbw, time_us, algbw, r.busbw};
  }
  RunResult run = PublishedRun(collective, converted, nodes, gpus);
  run.rows.resize(used);
  return run;
}

}  // namespace fabricscope::testing
