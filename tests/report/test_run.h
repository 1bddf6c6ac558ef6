// A hand-built run shared by the reporter tests, and a driver that replays it the way the
// engine does (header, then rows one by one, then trailers).
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/report.h"
#include "fabricscope/result.h"

namespace fabricscope::testing {

inline PlacementResult Half(double time_us, double algbw, double busbw,
                            std::optional<int64_t> wrong) {
  PlacementResult half;
  half.time_us = time_us;
  half.algbw = algbw;
  half.busbw = busbw;
  half.wrong = wrong;
  return half;
}

inline ResultRow MakeRow(size_t size, size_t count, std::optional<PlacementResult> out_of_place,
                         std::optional<PlacementResult> in_place,
                         const std::string& collective = "all_reduce") {
  ResultRow row;
  row.collective = collective;
  row.size = size;
  row.count = count;
  row.type = "float";
  row.redop = "sum";
  row.root = -1;
  row.out_of_place = std::move(out_of_place);
  row.in_place = std::move(in_place);
  row.iterations = 20;
  return row;
}

// Two ranks on one host, two all_reduce rows; busbw 1.5, 2.25, 3, 4.5 (mean 2.8125), and
// one out-of-place half with 2 wrong elements.
inline RunResult MakeRun() {
  RunResult run;
  run.version = "0.1.0";
  run.backend = "gloo";
  run.backend_version = "0.5.0";
  run.start_time = "2025-01-02T03:04:05Z";
  run.args = {"all_reduce_perf", "-b", "1K", "-e", "2K", "-f", "2", "-t", "2"};
  run.env = {"NCCL_TESTS_MIN_BW="};
  run.config.nthreads = 2;
  run.config.ngpus = 1;
  run.config.min_bytes = 1024;
  run.config.max_bytes = 2048;
  run.config.step_bytes = 1048576;
  run.config.step_factor = 2;
  run.config.warmup_iters = 1;
  run.config.iters = 20;
  run.config.agg_iters = 1;
  run.config.check = 1;
  run.nranks = 2;
  run.ranks = {{0, 0, 12345, "node1", 0, "", "host memory (Xeon)"},
               {1, 0, 12345, "node1", 1, "", "host memory (Xeon)"}};
  PlacementResult first = Half(28.391, 0.0361, 1.5, 0);
  first.ranks = {27.5, 28.391, 29.25, 1, 0, {29.25, 27.5}};
  run.rows.push_back(MakeRow(1024, 256, first, Half(116.2, 0.00881, 2.25, 0)));
  run.rows.push_back(
      MakeRow(2048, 512, Half(12416.4, 0.166, 3.0, 2), Half(1234567.8, 1000.56, 4.5, 0)));
  return run;
}

// Replays `full` into `reporter`: the record grows row by row, as the engine fills it.
inline void Drive(Reporter& reporter, const RunResult& full) {
  RunResult live = full;
  live.rows.clear();
  live.errors.clear();
  live.end_time.clear();
  reporter.Begin(live);
  size_t i = 0;
  while (i < full.rows.size()) {
    const std::string collective = full.rows[i].collective;
    reporter.BeginTest(live, collective);
    for (; i < full.rows.size() && full.rows[i].collective == collective; ++i) {
      live.rows.push_back(full.rows[i]);
      reporter.Row(live, live.rows.back());
    }
    reporter.EndTest(live, SummarizeCollective(live, collective));
  }
  live.errors = full.errors;
  live.end_time = full.end_time.empty() ? "2025-01-02T03:05:00Z" : full.end_time;
  reporter.End(live);
}

// The output split at '\n'; the piece after the final newline is dropped.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace fabricscope::testing
