// The results record: one schema for the engine, every reporter and every analyzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabricscope {

// One rank of the run, as nccl-tests' "Using devices" lines show it.
struct RankInfo {
  int rank = 0;
  int group = 0;
  int pid = 0;
  std::string hostname;
  int device = 0;             // device index on the host (the thread index for host backends)
  std::string device_bus_id;  // "0000:8f:00"; empty for host memory
  std::string device_name;    // "NVIDIA H200", or "host memory (<cpu>)"
  // How the library reaches its peers from this rank, as NCCL logs it with NCCL_DEBUG=INFO
  // ("P2P/CUMEM/read, NET/IB/0/GDRDMA"); empty when it did not say. (The initializer lets
  // aggregate initializations that predate the field leave it out.)
  std::string transport{};
};

// How one placement's time varied across ranks.
struct RankTimes {
  double min_us = 0;
  double avg_us = 0;
  double max_us = 0;
  int min_rank = 0;
  int max_rank = 0;
  std::vector<double> per_rank_us;  // index = rank
};

// Per-iteration times of one placement (-I), as nccl-tests 2.19.6 reports them
// (src/common.cu:862-886, src/util.cu:532-605): each iteration's time per op is the slowest
// process's; the statistics leave out the first -K of them, the series keeps them all.
struct IterationStats {
  double min_us = 0;
  double max_us = 0;
  double p99_us = 0;
  double cv_percent = 0;
  int skipped_iterations = 0;  // -K
  double avg_us = 0;
  double p50_us = 0;
  double p95_us = 0;
  double stdev_us = 0;             // population standard deviation
  std::vector<double> times_us{};  // every iteration, skipped ones included
  // One row per process (when more than one), each the slowest of its ranks per iteration.
  std::vector<std::vector<double>> per_process_max_times_us{};
};

// One half of a row: out-of-place or in-place.
struct PlacementResult {
  double time_us = 0;            // mean time per op, combined across ranks by -a
  double algbw = 0;              // GB/s (decimal)
  double busbw = 0;              // GB/s
  std::optional<int64_t> wrong;  // wrong elements over all ranks; empty when not checked
  RankTimes ranks;
  std::optional<IterationStats> iterations;
};

// One size of one test: the table row.
struct ResultRow {
  std::string collective;  // "all_reduce"
  size_t size = 0;         // bytes, max(send, recv) of one rank
  size_t count = 0;        // the count argument
  std::string type;        // "float"
  std::string redop;       // "sum", or "none"
  int root = -1;
  std::optional<PlacementResult> out_of_place;
  std::optional<PlacementResult> in_place;
  int64_t iterations = 0;  // timed ops per placement (iters x agg_iters)
  std::string timestamp;   // "%Y-%m-%d %H:%M:%S" when -S, else empty
};

// The run's configuration as the header and JSON show it.
struct RunConfig {
  int nthreads = 1;
  int ngpus = 1;
  size_t min_bytes = 0;
  size_t max_bytes = 0;
  size_t step_bytes = 0;
  uint64_t step_factor = 1;
  int warmup_iters = 0;
  int iters = 0;
  int agg_iters = 1;
  int check = 1;
  int graph = 0;
  int blocking = 0;
  int average = 1;
  int per_iter_timing = 0;
  int per_iter_skip = 0;
  bool event_timing = false;  // -I samples come from the devices' clocks (CUDA events)
  int parallel_init = 0;
  int unalign = 0;
  int report_timestamps = 0;  // -S: the table header gets a timestamp column
  int report_cputime = 0;     // -C: the time columns are "cputime", the JSON key "cpu_time"
  double min_bw = 0;          // NCCL_TESTS_MIN_BW: the trailer says OK/FAILED against 0.9 x this
};

struct TestSummary;

// A whole run: header facts, the rows in order, and what went wrong.
struct RunResult {
  std::string tool = "fabricscope";
  std::string version;
  std::string backend;
  std::string backend_version;
  int nccl_version = 0;    // NCCL_VERSION_CODE of the NCCL or RCCL that ran (22809); 0 if none
  std::string start_time;  // ISO 8601
  std::string end_time;
  std::vector<std::string> args;
  std::vector<std::string> env;  // NAME=value of the variables that shape the run
  RunConfig config;
  int nranks = 0;
  std::vector<RankInfo> ranks;
  std::vector<std::string> notes;  // header notes, e.g. "Reducing maxBytes to ..."
  std::vector<ResultRow> rows;
  std::vector<std::string> errors;
  // The collective a log announced ("Collective test starting: all_reduce_perf"), kept for a
  // run that died before its first row, whose rows cannot say it.
  std::string announced_collective{};
  // The lines a log says its platform in (read back from logs only), each once, as
  // "file:line: text": the span of its device lines, NCCL's network, NVLS and MNNVL lines.
  // check infers the platform from them and names them.
  std::vector<std::string> platform_lines{};
  // The thread level MPI runs at when the job used MPI ("MPI_THREAD_SINGLE"; MULTIPLE only
  // with rank threads), since it changes what every MPI call costs; empty without MPI.
  std::string mpi_thread_level{};

  // Filled only when a run is read back from a log or file (src/analyze), empty for a run
  // measured here.
  std::string source;  // where it was read: "file:line" of its first line
  // The trailers the log printed, one per test, as printed: analyze compares them with the
  // ones recomputed from the rows (Summarize), which tells a cut or edited log.
  std::vector<TestSummary> printed;
  // NCCL's own lines naming the transport it chose ("NET/IB : Using [0]mlx5_0:1/IB ...",
  // "via P2P/IPC"), each once, in order of appearance.
  std::vector<std::string> transports;
};

// The trailer facts of one collective's rows.
struct TestSummary {
  std::string collective;
  size_t rows = 0;
  int64_t out_of_bounds = 0;  // (row, placement) tests with any wrong element
  double avg_busbw = 0;       // mean of every busbw value, both placements
  bool okay = true;           // no wrong element (and, with a minimum, bandwidth above it)
};

// Groups rows by collective in order of first appearance and computes the trailers.
std::vector<TestSummary> Summarize(const RunResult& result);
// The summary of just the rows of one collective.
TestSummary SummarizeCollective(const RunResult& result, const std::string& collective);
// The summary of every row of the run, whatever its collective (`collective` stays empty):
// the top-level trailer of a JSON document that holds several tests.
TestSummary SummarizeAll(const RunResult& result);

}  // namespace fabricscope
