// What the MPI backend adds to MPI: all_reduce timed as a bare MPI_Allreduce loop and through
// the mpi backend's Communicator::Run, on the same buffers, one rank per process.
//
//   mpirun -np 4 mpi_overhead [--min-bytes 1024] [--max-bytes 268435456] [--rounds 8]
//                             [--in-place]
//
// Each size is timed the OSU way (warm-up ops, a barrier, then N ops between two MPI_Wtime
// reads: the mean time per op), and the per-rank times are averaged over ranks. The two ways
// alternate in short rounds (bare, backend, backend, bare, ...) so drift and noise fall on
// both alike; the table also gives the ratio of the median rounds, which a scheduler tick in
// one round moves less than the mean.
#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench_stats.h"
#include "fabricscope/backend.h"
#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"

namespace {

using fabricscope::bench::AllReduceBusBw;
using fabricscope::bench::Mean;
using fabricscope::bench::Median;
using fabricscope::bench::Quantile;
using fabricscope::bench::Sum;

struct BenchOptions {
  size_t min_bytes = size_t{1} << 10;
  size_t max_bytes = size_t{256} << 20;
  int rounds = 8;  // per way and size; a multiple of 4 keeps the ABBA order balanced
  bool in_place = false;
};

// Timed ops per round: about 32 MB of data, at least 2 ops, at most 200.
int ItersFor(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{32} << 20) / bytes, 2, 200));
}

// Untimed ops per way before the first round: as OSU, more for small messages.
int WarmupsFor(size_t bytes) { return bytes <= (size_t{1} << 20) ? 10 : 2; }

// Throws on an MPI failure, so main reports it instead of a wrong figure.
void Check(int rc, std::string_view what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("{} failed ({})", what, rc));
}

void RunSweep(const BenchOptions& options) {
  int rank = 0;
  int nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  auto backend = fabricscope::MakeBackend("mpi");
  fabricscope::ConnectOptions connect;
  connect.rank = rank;
  connect.size = nranks;
  connect.world_rank = rank;
  auto comm = backend->Connect(connect);

  if (rank == 0) {
    fmt::print("# all_reduce float sum {}, {} MPI ranks, {} rounds x 2 ways, mean of ranks, {}\n",
               options.in_place ? "in place" : "out of place", nranks, options.rounds,
               backend->version());
    fmt::print("# busbw in GB/s; ratio = backend busbw / bare busbw (1 = no overhead)\n");
    fmt::print("# {:>10}  {:>6}  {:>10}  {:>9}  {:>10}  {:>9}  {:>7}  {:>8}\n", "size(B)", "ops",
               "bare(us)", "bare bw", "fs(us)", "fs bw", "ratio", "median");
  }

  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    // Zeros, as the engine's buffers at -c 0: sums stay finite however many ops run.
    std::vector<float> send(count, 0.0f);
    std::vector<float> recv(count, 0.0f);
    const void* bare_send = options.in_place ? MPI_IN_PLACE : send.data();
    fabricscope::CollectiveCall call;
    call.collective = fabricscope::Collective::kAllReduce;
    call.send = options.in_place ? recv.data() : send.data();
    call.recv = recv.data();
    call.count = count;
    call.type = fabricscope::DataType::kFloat;
    call.op = fabricscope::ReduceOp::kSum;
    const auto bare = [&] {
      Check(MPI_Allreduce(bare_send, recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD),
            "MPI_Allreduce");
    };

    for (int i = 0; i < WarmupsFor(bytes); ++i) {
      bare();
      comm->Run(call);
    }
    const int iters = ItersFor(bytes);
    std::vector<double> bare_s;
    std::vector<double> backend_s;
    for (int round = 0; round < options.rounds; ++round) {
      // ABBA order: rounds 0 and 3 start bare, 1 and 2 start with the backend.
      const bool bare_first = round % 4 == 0 || round % 4 == 3;
      for (int half = 0; half < 2; ++half) {
        const bool run_bare = (half == 0) == bare_first;
        Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        const double start = MPI_Wtime();
        for (int i = 0; i < iters; ++i) {
          if (run_bare) {
            bare();
          } else {
            comm->Run(call);
          }
        }
        (run_bare ? bare_s : backend_s).push_back(MPI_Wtime() - start);
      }
    }

    // Per round, the mean over ranks (nccl-tests' -a 1); then their sum and their median.
    const int rounds = options.rounds;
    std::vector<double> bare_rounds(static_cast<size_t>(rounds));
    std::vector<double> backend_rounds(static_cast<size_t>(rounds));
    Check(MPI_Reduce(bare_s.data(), bare_rounds.data(), rounds, MPI_DOUBLE, MPI_SUM, 0,
                     MPI_COMM_WORLD),
          "MPI_Reduce");
    Check(MPI_Reduce(backend_s.data(), backend_rounds.data(), rounds, MPI_DOUBLE, MPI_SUM, 0,
                     MPI_COMM_WORLD),
          "MPI_Reduce");
    if (rank != 0) continue;
    for (double& s : bare_rounds) s /= nranks;
    for (double& s : backend_rounds) s /= nranks;
    const int ops = iters * rounds;
    const double bare_per_op = Sum(bare_rounds) / ops;
    const double backend_per_op = Sum(backend_rounds) / ops;
    const double bare_bw = AllReduceBusBw(bytes, bare_per_op, nranks);
    const double backend_bw = AllReduceBusBw(bytes, backend_per_op, nranks);
    const double median_ratio = Median(bare_rounds) / Median(backend_rounds);
    fmt::print("  {:>10}  {:>6}  {:>10.1f}  {:>9.3f}  {:>10.1f}  {:>9.3f}  {:>7.3f}  {:>8.3f}\n",
               bytes, ops, bare_per_op * 1e6, bare_bw, backend_per_op * 1e6, backend_bw,
               backend_bw / bare_bw, median_ratio);
    std::fflush(stdout);
  }
}

// Parses the flags; on a bad one every rank prints the same error and the job ends with 2.
BenchOptions Parse(int argc, char** argv) {
  BenchOptions options;
  CLI::App app{"Bare MPI_Allreduce against the same call through fabricscope's MPI backend",
               "mpi_overhead"};
  app.add_option("--min-bytes", options.min_bytes, "smallest size")
      ->check(CLI::Range(size_t{4}, size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--max-bytes", options.max_bytes, "largest size (MPI counts are ints)")
      ->check(CLI::Range(size_t{4}, static_cast<size_t>(INT_MAX) * sizeof(float)))
      ->capture_default_str();
  app.add_option("--rounds", options.rounds, "rounds per way and size")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_flag("--in-place", options.in_place, "time the in-place placement");
  try {
    app.parse(argc, argv);
    if (options.min_bytes > options.max_bytes) {
      throw CLI::ValidationError("--min-bytes", "must not exceed --max-bytes");
    }
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    MPI_Finalize();
    std::exit(code);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // As the launcher does: the backend finds MPI initialized, multithreaded.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int status = 0;
  try {
    RunSweep(Parse(argc, argv));
  } catch (const std::exception& e) {
    fmt::print(stderr, "mpi_overhead: {}\n", e.what());
    status = 1;
  }
  if (status != 0) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
  return status;
}
