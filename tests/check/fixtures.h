// Results for the check tests, written as nccl-tests logs (the layout of nccl-tests 2.x, as
// in the published runs of seed 000) from busbw figures: the published GPUDirect-TCPX table
// and synthetic degraded runs derived from the published a3-ultragpu-8g run.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <vector>

#include "model/published_runs.h"

namespace fabricscope::check_testing {

// One row of a log: the size and the two placements' busbw and time.
struct LogRow {
  size_t size = 0;
  double oop_time_us = 0, oop_busbw = 0;
  double ip_time_us = 0, ip_busbw = 0;
};

// What the log shows besides its rows.
struct LogSpec {
  std::string collective = "all_reduce";
  int nodes = 2;
  int gpus_per_node = 8;
  std::string gpu = "NVIDIA H100 80GB HBM3";
  std::vector<std::string> hosts;      // one per node; empty: node0, node1, ...
  std::vector<std::string> nccl_info;  // NCCL INFO messages, printed before the table
  std::vector<LogRow> rows;
};

// busbw / algbw of the collective on `ranks` ranks (nccl-tests' factors).
inline double BusFactor(const std::string& collective, int ranks) {
  const double n = ranks;
  if (collective == "all_reduce") return 2 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter") return (n - 1) / n;
  return 1;
}

// The log nccl-tests would print for `spec`: header, device lines on hosts node0..nodeN-1,
// NCCL's INFO lines, the table and the trailer. algbw is busbw over the bus factor.
inline std::string NcclTestsLog(const LogSpec& spec) {
  const int ranks = spec.nodes * spec.gpus_per_node;
  const double factor = BusFactor(spec.collective, ranks);
  const bool reduces = spec.collective == "all_reduce" || spec.collective == "reduce_scatter";
  std::string out = "# nccl-tests version 2.13.10 nccl-headers=22105 nccl-library=22105\n";
  out += "# Collective test starting: " + spec.collective + "_perf\n";
  out +=
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 2147483648 step: 2(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  for (int r = 0; r < ranks; ++r) {
    out += fmt::format("#  Rank {:2} Group  0 Pid {:6} on {:>10} device {:2} [0000:{:02x}:00] {}\n",
                       r, 1000 + r,
                       spec.hosts.empty() ? "node" + std::to_string(r / spec.gpus_per_node)
                                          : spec.hosts[static_cast<size_t>(r / spec.gpus_per_node)],
                       r % spec.gpus_per_node, 0x10 + r % spec.gpus_per_node, spec.gpu);
  }
  for (const std::string& info : spec.nccl_info) {
    out += "node0:1000:1000 [0] NCCL INFO " + info + "\n";
  }
  out += "NCCL version 2.21.5+cuda12.4\n#\n";
  out +=
      "#                                                              out-of-place          "
      "             in-place\n";
  out +=
      "#       size         count      type   redop    root     time   algbw   busbw #wrong  "
      "   time   algbw   busbw #wrong\n";
  out +=
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
      "   (us)  (GB/s)  (GB/s)\n";
  double sum = 0;
  for (const LogRow& row : spec.rows) {
    out += fmt::format(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7.2f}  {:>6.2f}  {:>6.2f}  {:>6}  {:>7.2f}  "
        "{:>6.2f}  {:>6.2f}  {:>6}\n",
        row.size, row.size / 4, "float", reduces ? "sum" : "none", -1, row.oop_time_us,
        row.oop_busbw / factor, row.oop_busbw, 0, row.ip_time_us, row.ip_busbw / factor,
        row.ip_busbw, 0);
    sum += row.oop_busbw + row.ip_busbw;
  }
  out += "# Out of bounds values : 0 OK\n";
  out += fmt::format("# Avg bus bandwidth    : {:g} \n#\n",
                     spec.rows.empty() ? 0.0 : sum / (2.0 * static_cast<double>(spec.rows.size())));
  return out;
}

// Rows from a busbw-only table (one figure for both placements), with the time nccl-tests
// would have printed for it: size / algbw. Rows whose busbw printed as 0 are left out: their
// time cannot be told from the table (the real one was a few hundred microseconds).
template <size_t N>
std::vector<LogRow> RowsFromBusbw(const testing::BusbwRow (&table)[N], double factor) {
  std::vector<LogRow> rows;
  for (const auto& r : table) {
    if (!(r.busbw > 0)) continue;
    const double time_us = static_cast<double>(r.size) / (r.busbw / factor * 1e3);
    rows.push_back({r.size, time_us, r.busbw, time_us, r.busbw});
  }
  return rows;
}

// Rows of a published nccl-tests table with every busbw (and algbw) multiplied by `scale`
// and the times divided by it: the same run on a fabric `scale` times as fast.
template <size_t N>
std::vector<LogRow> ScaledRows(const testing::PublishedRow (&table)[N], double scale) {
  std::vector<LogRow> rows;
  for (const auto& r : table) {
    rows.push_back({r.size, r.oop_time_us / scale, r.oop_busbw * scale, r.ip_time_us / scale,
                    r.ip_busbw * scale});
  }
  return rows;
}

// A sweep from 8 B to `max_size` (x2) of a collective that takes latency_us + size / bandwidth:
// busbw approaches `peak_busbw` at large sizes, as a measured curve does.
inline std::vector<LogRow> CurveRows(const std::string& collective, int ranks, double peak_busbw,
                                     double latency_us, size_t max_size) {
  std::vector<LogRow> rows;
  const double factor = BusFactor(collective, ranks);
  for (size_t size = 8; size <= max_size; size *= 2) {
    const double time_us = latency_us + static_cast<double>(size) / (peak_busbw / factor * 1e3);
    const double busbw = static_cast<double>(size) / (time_us * 1e3) * factor;
    rows.push_back({size, time_us, busbw, time_us, busbw});
  }
  return rows;
}

// seed 000_6daea02de48545cc.txt: 2 x a3-highgpu-8g, all_reduce, the column "busbw
// Non-GPUDirect-TCPX (GB/s)" of the GPUDirect-TCPX comparison table, digit for digit. (The
// with-TCPX column is testing::kTcpxAllReduce.)
inline constexpr testing::BusbwRow kNoTcpxAllReduce[] = {
    {8, 0},
    {16, 0},
    {32, 0},
    {64, 0},
    {128, 0},
    {256, 0},
    {512, 0},
    {1024, 0.01},
    {2048, 0.01},
    {4096, 0.02},
    {8192, 0.04},
    {16384, 0.09},
    {32768, 0.12},
    {65536, 0.17},
    {131072, 0.15},
    {262144, 0.23},
    {524288, 0.47},
    {1048576, 0.95},
    {2097152, 1.87},
    {4194304, 3.64},
    {8388608, 7.1},
    {16777216, 8.83},
    {33554432, 12.07},
    {67108864, 12.48},
    {134217728, 16.27},
    {268435456, 20.93},
    {536870912, 19.93},
    {1073741824, 20.09},
    {2147483648, 19.39},
};

// The TCPX comparison table as logs of 2 x 8 H100: with and without GPUDirect-TCPX.
inline std::string TcpxLog(bool with_tcpx, const std::vector<std::string>& nccl_info = {}) {
  LogSpec spec;
  spec.collective = "all_reduce";
  spec.nccl_info = nccl_info;
  const double factor = BusFactor("all_reduce", 16);
  spec.rows = with_tcpx ? RowsFromBusbw(testing::kTcpxAllReduce, factor)
                        : RowsFromBusbw(kNoTcpxAllReduce, factor);
  return NcclTestsLog(spec);
}

// The published SkyPilot a3-ultragpu-8g all_gather run (2 x 8 H200) at `scale` of its speed,
// with NCCL's `nccl_info` lines.
inline std::string UltraLog(double scale, const std::vector<std::string>& nccl_info = {}) {
  LogSpec spec;
  spec.collective = "all_gather";
  spec.gpu = "NVIDIA H200";
  spec.nccl_info = nccl_info;
  spec.rows = ScaledRows(testing::kSkyPilotH200AllGather, scale);
  return NcclTestsLog(spec);
}

}  // namespace fabricscope::check_testing
