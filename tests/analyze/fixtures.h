// Synthetic nccl-tests / rccl-tests logs in every layout the readers must know, written from
// known values with the C format strings each version prints, then wrapped in launcher
// prefixes and interleaved with NCCL's own lines.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "fabricscope/report.h"

namespace fabricscope::fixtures {

// What the layouts differ in.
struct Layout {
  std::string name;
  bool version_line = true;   // "# nccl-tests version 2.19.6 ..." (2.17.3+)
  bool starting_line = true;  // "# Collective test starting: all_reduce_perf"
  bool group = true;          // "Group N" in the device lines
  bool device_lines = true;   // "# Using devices" and its lines
  bool root_column = true;    // 2.13+
  bool redop_column = true;
  bool error_column = false;    // before 2.13: max deviation "1e-07" instead of #wrong
  bool legacy_numbers = false;  // 2.13 to 2.17.2: %7.0f/%7.1f/%7.2f and %6.2f, %5g
  bool per_iter = false;        // -I
  bool timestamps = false;      // -S
  bool in_place_only = false;   // rccl-tests -O 0: one half
  bool rccl_extras = false;     // "rccl-tests: Version", asterisk note, -A columns
  bool hash_lost = false;       // dstack's web log drops the leading '#'
  bool title_line = true;       // "#   out-of-place   in-place"
  bool names_line = true;       // "#  size  count  type ..."
  bool units_line = true;       // "#  (B)  (elements) ..."
  bool trailer = true;
  bool check = true;  // -c 1: #wrong counted; else N/A
};

// gtest prints parameters by these (instead of their bytes).
inline void PrintTo(const Layout& layout, std::ostream* out) { *out << layout.name; }

inline std::vector<Layout> AllLayouts() {
  std::vector<Layout> layouts;
  Layout current{"nccl_tests_2_19"};
  layouts.push_back(current);
  Layout legacy{"nccl_tests_2_13"};
  legacy.version_line = legacy.starting_line = false;
  legacy.legacy_numbers = true;
  layouts.push_back(legacy);
  Layout old{"pre_2_13_error_column"};
  old.version_line = old.starting_line = old.group = old.root_column = false;
  old.error_column = old.legacy_numbers = true;
  layouts.push_back(old);
  Layout per_iter{"per_iteration_I"};
  per_iter.per_iter = true;
  layouts.push_back(per_iter);
  Layout stamps{"timestamps_S"};
  stamps.timestamps = true;
  layouts.push_back(stamps);
  Layout both{"per_iteration_and_timestamps"};
  both.per_iter = both.timestamps = true;
  layouts.push_back(both);
  Layout rccl{"rccl_tests"};
  rccl.version_line = rccl.starting_line = rccl.group = false;
  rccl.legacy_numbers = rccl.rccl_extras = true;
  layouts.push_back(rccl);
  Layout single{"rccl_tests_in_place_only"};
  single.version_line = single.starting_line = single.group = false;
  single.legacy_numbers = single.in_place_only = true;
  layouts.push_back(single);
  Layout lost{"dstack_lost_hash"};
  lost.hash_lost = true;
  layouts.push_back(lost);
  Layout headerless{"table_header_missing"};
  headerless.title_line = headerless.names_line = headerless.units_line = false;
  layouts.push_back(headerless);
  Layout no_names{"column_names_line_missing"};
  no_names.names_line = false;
  layouts.push_back(no_names);
  Layout names_only{"title_and_units_lines_missing"};
  names_only.title_line = names_only.units_line = false;
  layouts.push_back(names_only);
  Layout no_devices{"device_lines_missing"};
  no_devices.device_lines = false;
  layouts.push_back(no_devices);
  Layout unchecked{"no_check_c0"};
  unchecked.check = false;
  layouts.push_back(unchecked);
  return layouts;
}

// What launchers put before each line.
struct Prefix {
  std::string name;
  std::string text;
};

inline void PrintTo(const Prefix& prefix, std::ostream* out) { *out << prefix.name; }

inline std::vector<Prefix> AllPrefixes() {
  return {
      {"none", ""},
      {"mpirun", "[1,0]<stdout>:"},
      {"skypilot", "(head, rank=0, pid=3808) [1,0]<stdout>:"},
      {"skypilot_colour", "\x1b[36m(head, rank=0, pid=3808)\x1b[0m "},
      {"ray_worker", "(worker1, rank=1, pid=2769, ip=10.100.10.12) "},
      {"srun_label", " 0: "},
      {"kubectl_timestamps", "2024-05-01T12:34:56.123456789Z "},
      {"slurm_bracketed_time", "[2024-05-01 12:34:56] "},
      {"logging_time", "2024-05-01 12:34:56,123 "},
      {"ts_time", "May 01 12:34:56 "},
      {"kubectl_prefix", "[pod/nccl-test-0/nccl] "},
      {"docker_compose", "worker-1  | "},
      {"pdsh", "node01: "},
      {"kubectl_and_mpirun", "2024-05-01T12:34:56Z [1,0]<stderr>:"},
  };
}

// One row as known values; the log holds them as printed, so tests compare with what the
// printed text reads back as.
struct FixtureRow {
  long size;
  long count;
  double time_out, algbw_out, busbw_out;
  double time_in, algbw_in, busbw_in;
  long wrong_out, wrong_in;
};

// all_reduce float sum on 4 ranks (2 hosts): busbw = 1.5 x algbw.
inline std::vector<FixtureRow> FixtureRows() {
  std::vector<FixtureRow> rows;
  const double times[] = {12.34,  13.5,  15.25,   22.75,   48.5,
                          150.25, 612.5, 2450.75, 12345.5, 45678.25};
  long size = 8;
  for (double t : times) {
    const double algbw = static_cast<double>(size) / 1e3 / t;
    const double t_in = t * 1.01;
    const double algbw_in = static_cast<double>(size) / 1e3 / t_in;
    rows.push_back({size, size / 4, t, algbw, algbw * 1.5, t_in, algbw_in, algbw_in * 1.5, 0, 0});
    size *= 16;
  }
  rows[3].wrong_in = 3;  // one wrong half: Out of bounds values 1
  return rows;
}

inline std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));
inline std::string Format(const char* format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return buffer;
}

// The time cell as this layout prints it.
inline std::string TimeCell(const Layout& layout, double us) {
  if (!layout.legacy_numbers) return FormatNumber(us, 7);
  if (us >= 10000) return Format("%7.0f", us);
  if (us >= 100) return Format("%7.1f", us);
  return Format("%7.2f", us);
}

inline std::string BwCell(const Layout& layout, double gbps) {
  return layout.legacy_numbers ? Format("%6.2f", gbps) : FormatNumber(gbps, 6);
}

inline std::string Half(const Layout& layout, double time, double algbw, double busbw, long wrong) {
  std::string text =
      "  " + TimeCell(layout, time) + "  " + BwCell(layout, algbw) + "  " + BwCell(layout, busbw);
  if (layout.error_column) {
    text += Format("  %5.0e", wrong > 0 ? 2e-3 : 0.0);
  } else if (!layout.check) {
    text += "    N/A";
  } else if (layout.legacy_numbers) {
    text += Format("  %5g", static_cast<double>(wrong));
  } else {
    text += Format("  %6g", static_cast<double>(wrong));
  }
  if (layout.per_iter) {
    text += "  " + FormatNumber(time * 0.9, 7) + "  " + FormatNumber(time * 1.3, 7) + "  " +
            FormatNumber(time * 1.2, 7) + "  " + FormatNumber(2.5, 7);
  }
  return text;
}

// The log of one run, line by line, without prefixes.
inline std::vector<std::string> FixtureLines(const Layout& layout) {
  std::vector<std::string> lines;
  const std::string h = layout.hash_lost ? "" : "#";
  if (layout.version_line) {
    lines.push_back(h + " nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809");
  }
  if (layout.starting_line) lines.push_back(h + " Collective test starting: all_reduce_perf");
  if (layout.rccl_extras) {
    // rccl-tests before its 2.17 merge: "key: value" and "warmupIters".
    lines.push_back(h +
                    " nThread: 1 nGpus: 1 minBytes: 8 maxBytes: 549755813888 step: "
                    "16(factor) warmupIters: 5 iters: 20 validation: " +
                    std::string(layout.check ? "1" : "0"));
  } else {
    lines.push_back(h +
                    " nThread 1 nGpus 1 minBytes 8 maxBytes 549755813888 step: 16(factor) "
                    "warmup iters: 5 iters: 20 agg iters: 1 validation: " +
                    std::string(layout.check ? "1" : "0") + " graph: 0" +
                    (layout.version_line ? " unalign: 0" : ""));
  }
  lines.push_back(h);
  if (layout.rccl_extras) lines.push_back("rccl-tests: Version develop:3b4f9c2");
  if (layout.device_lines) {
    lines.push_back(h + " Using devices");
    for (int r = 0; r < 4; ++r) {
      const char* host = r < 2 ? "node-a" : "node-b";
      if (layout.group) {
        lines.push_back(h + Format("  Rank %2d Group %2d Pid %6d on %10s device %2d [0000:%02x:00] "
                                   "NVIDIA H100 80GB HBM3",
                                   r, 0, 1000 + r, host, r % 2, 0x18 + r));
      } else {
        lines.push_back(h + Format("   Rank %2d Pid %6d on %10s device %2d [0000:%02x:00.0] AMD "
                                   "Instinct MI300X",
                                   r, 1000 + r, host, r % 2, 0x18 + r));
      }
    }
  }
  lines.push_back(
      "node-a:1000:1000 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>");
  lines.push_back("NCCL version 2.28.9+cuda12.8");
  if (layout.title_line || layout.names_line || layout.units_line) {
    lines.push_back(h);
    const std::string lead = layout.root_column
                                 ? Format("# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "")
                                 : Format("# %10s  %12s  %8s  %6s", "", "", "", "");
    std::string title = lead;
    if (layout.in_place_only) {
      title += "           in-place          ";
    } else if (layout.per_iter) {
      title +=
          "              out-of-place (+ per-iteration)                                in-place (+ "
          "per-iteration)";
    } else {
      title += "           out-of-place                       in-place          ";
    }
    std::string names =
        layout.root_column
            ? Format("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root")
            : Format("# %10s  %12s  %8s  %6s", "size", "count", "type", "redop");
    std::string units = layout.root_column
                            ? Format("# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "")
                            : Format("# %10s  %12s  %8s  %6s", "(B)", "(elements)", "", "");
    const int halves = layout.in_place_only ? 1 : 2;
    for (int i = 0; i < halves; ++i) {
      names += Format("  %7s  %6s  %6s  %6s", "time", "algbw", "busbw",
                      layout.error_column ? "error" : "#wrong");
      units += Format("  %7s  %6s  %6s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
      if (layout.per_iter) {
        names += Format("  %7s  %7s  %7s  %7s", "i_min", "i_max", "i_p99", "i_cv%");
        units += Format("  %7s  %7s  %7s  %7s", "(us)", "(us)", "(us)", "(%)");
      }
    }
    names += Format(" %*s", layout.timestamps ? 19 : 0, layout.timestamps ? "timestamp" : "");
    units +=
        Format(" %*s", layout.timestamps ? 19 : 0, layout.timestamps ? "%Y-%m-%d %H:%M:%S" : "");
    const bool wanted[] = {layout.title_line, layout.names_line, layout.units_line};
    int i = 0;
    for (std::string* line : {&title, &names, &units}) {
      if (layout.hash_lost) line->erase(0, 1);
      if (wanted[i++]) lines.push_back(*line);
    }
  }
  const std::vector<FixtureRow> rows = FixtureRows();
  for (size_t i = 0; i < rows.size(); ++i) {
    const FixtureRow& r = rows[i];
    std::string line = Format("%12li  %12li  %8s  %6s", r.size, r.count, "float", "sum");
    if (!layout.redop_column) line = Format("%12li  %12li  %8s", r.size, r.count, "float");
    if (layout.root_column) line += Format("  %6i", -1);
    if (!layout.in_place_only)
      line += Half(layout, r.time_out, r.algbw_out, r.busbw_out, r.wrong_out);
    line += Half(layout, r.time_in, r.algbw_in, r.busbw_in, r.wrong_in);
    if (layout.timestamps) line += Format("%21s", "2024-05-01 12:35:07");
    if (layout.rccl_extras) line += Format("%8s  %8s  %10d", "RING", "SIMPLE", 16);
    lines.push_back(line);
    if (i == 4) {
      lines.push_back(
          "node-b:1002:1100 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0/GDRDMA");
      lines.push_back("node-a:1000:1101 [0] NCCL WARN NET/IB : Got async event : port error");
    }
  }
  if (layout.trailer) {
    if (layout.rccl_extras)
      lines.push_back(
          h + " Errors with asterisks indicate errors that have exceeded the maximum threshold.");
    lines.push_back(h + " Out of bounds values : 1 FAILED");
    lines.push_back(h + " Avg bus bandwidth    : 123.456 ");
    lines.push_back(h);
    if (layout.starting_line) lines.push_back(h + " Collective test concluded: all_reduce_perf");
  }
  return lines;
}

inline std::string WithPrefix(const std::vector<std::string>& lines, const std::string& prefix) {
  std::string text;
  for (const std::string& line : lines) text += prefix + line + "\n";
  return text;
}

// What a printed cell reads back as.
inline double Printed(const std::string& cell) { return std::stod(cell); }

}  // namespace fabricscope::fixtures
