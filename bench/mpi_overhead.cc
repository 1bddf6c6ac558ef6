// What fabricscope adds to MPI: sendrecv and all_reduce timed as a bare MPI loop, in a
// process that initialized MPI as a plain MPI program does (MPI_Init), and through
// fabricscope's engine on the mpi backend (RunBenchmark, the timed loop of `fabricscope
// run --backend mpi`), on the same processes, side by side in ABBA rounds.
//
//   mpirun -np 2 mpi_overhead [--collective sendrecv,all_reduce] [--min-bytes 8]
//                             [--max-bytes 4194304] [--rounds 16] [--iters N] [--in-place]
//                             [--init mpi_init|fabricscope|multiple]
//
// --init says who initializes MPI, which fixes the thread level of both sides: mpi_init
// (MPI_Init, the level a plain MPI program gets), fabricscope (the launcher's own session,
// as `fabricscope run -t 1` opens it: MPI_THREAD_SINGLE) or multiple (MPI_THREAD_MULTIPLE,
// what fabricscope asked for before it chose by the number of rank threads).
//
// Each half round is timed as the engine times: one untimed op, a barrier, then N ops
// between two clock reads; the mean time per op, averaged over ranks. The engine's half is
// one RunBenchmark call at that one size (-w 0 -c 0), which times the same way and reports
// the same mean (row.out_of_place / in_place time_us).
#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench_stats.h"
#include "fabricscope/backend.h"
#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/engine.h"
#include "fabricscope/mpi_session.h"
#include "fabricscope/options.h"
#include "fabricscope/result.h"

namespace {

using fabricscope::Collective;
using fabricscope::ThreadLevelName;
using fabricscope::bench::Median;
using fabricscope::bench::Sum;

// Who initializes MPI, and so at which thread level both sides run.
enum class Init { kMpiInit, kFabricscope, kMultiple };

struct BenchOptions {
  std::vector<std::string> collectives = {"sendrecv", "all_reduce"};
  size_t min_bytes = 8;
  size_t max_bytes = size_t{4} << 20;
  int rounds = 16;  // per way and size; a multiple of 4 keeps the ABBA order balanced
  int iters = 0;    // timed ops per half round; 0 = ItersFor(size)
  bool in_place = false;
  Init init = Init::kMpiInit;
};

// Timed ops per half round: about 16 MB of data, at least 20 ops, at most 4000 (at 8 B a
// half round then lasts some milliseconds, well above the clock's resolution).
int ItersFor(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{16} << 20) / bytes, 20, 4000));
}

// Untimed ops per way before the first round: as OSU, more for small messages.
int WarmupsFor(size_t bytes) { return bytes <= (size_t{1} << 20) ? 100 : 10; }

// Throws on an MPI failure, so main reports it instead of a wrong figure.
void Check(int rc, std::string_view what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("{} failed ({})", what, rc));
}

// One size of one collective: the bare loop on MPI_COMM_WORLD, and the engine on the
// backend's communicator, over the same buffers' sizes.
class SizeBench {
 public:
  SizeBench(Collective collective, size_t bytes, bool in_place, int rank, int nranks)
      : collective_(collective),
        count_(bytes / sizeof(float)),
        in_place_(in_place),
        rank_(rank),
        nranks_(nranks),
        // Zeros, as the engine's buffers at -c 0: sums stay finite however many ops run.
        send_(count_, 0.0f),
        recv_(count_, 0.0f),
        copy_(count_, 0.0f) {}

  // One op as a plain MPI program writes it. In place, sendrecv copies aside first, as
  // MPI_Sendrecv_replace (and the backend) must.
  void Bare() {
    const int n = static_cast<int>(count_);
    if (collective_ == Collective::kAllReduce) {
      Check(MPI_Allreduce(in_place_ ? MPI_IN_PLACE : send_.data(), recv_.data(), n, MPI_FLOAT,
                          MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce");
      return;
    }
    const float* send = send_.data();
    if (in_place_) {
      std::copy(recv_.begin(), recv_.end(), copy_.begin());
      send = copy_.data();
    }
    Check(MPI_Sendrecv(send, n, MPI_FLOAT, (rank_ + 1) % nranks_, 0, recv_.data(), n, MPI_FLOAT,
                       (rank_ + nranks_ - 1) % nranks_, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
  }

  // This rank's mean seconds per op of one bare half round, timed as the engine times.
  double BareRound(int iters) {
    Bare();
    Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) Bare();
    return (MPI_Wtime() - start) / iters;
  }

  // The engine's mean seconds per op over ranks (-a 1) for one half round.
  double EngineRound(fabricscope::Communicator& comm, int iters) const {
    fabricscope::RunOptions options;
    options.backend = "mpi";
    options.collectives = {collective_};
    options.min_bytes = options.max_bytes = count_ * sizeof(float);
    options.iters = iters;
    options.warmup_iters = 0;
    options.check = 0;
    options.command_line = {"mpi_overhead"};
    const fabricscope::SweepPlan plan = fabricscope::PlanSweep(options, 1);
    fabricscope::RunResult result;
    fabricscope::RunBenchmark(options, plan, comm, result, nullptr);
    if (rank_ != 0) return 0;
    if (result.rows.size() != 1) throw std::runtime_error("the engine gave no row");
    const auto& half = in_place_ ? result.rows[0].in_place : result.rows[0].out_of_place;
    if (!half) throw std::runtime_error("the engine's row lacks the placement");
    return half->time_us * 1e-6;
  }

 private:
  const Collective collective_;
  const size_t count_;
  const bool in_place_;
  const int rank_;
  const int nranks_;
  std::vector<float> send_;
  std::vector<float> recv_;
  std::vector<float> copy_;
};

// The per-round times of both ways at one size, rank 0's view (bare: mean over ranks).
struct Rounds {
  std::vector<double> bare;
  std::vector<double> engine;
};

Rounds TimeSize(SizeBench& bench, fabricscope::Communicator& comm, size_t bytes, int rounds,
                int iters, int nranks) {
  for (int i = 0; i < WarmupsFor(bytes); ++i) bench.Bare();
  bench.EngineRound(comm, WarmupsFor(bytes));
  std::vector<double> bare_mine;
  Rounds out;
  for (int round = 0; round < rounds; ++round) {
    // ABBA order: rounds 0 and 3 start bare, 1 and 2 start with the engine.
    const bool bare_first = round % 4 == 0 || round % 4 == 3;
    for (int half = 0; half < 2; ++half) {
      if ((half == 0) == bare_first) {
        bare_mine.push_back(bench.BareRound(iters));
      } else {
        out.engine.push_back(bench.EngineRound(comm, iters));
      }
    }
  }
  out.bare.resize(bare_mine.size());
  Check(
      MPI_Reduce(bare_mine.data(), out.bare.data(), rounds, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD),
      "MPI_Reduce");
  for (double& s : out.bare) s /= nranks;
  return out;
}

void RunSweep(const BenchOptions& options) {
  int rank = 0;
  int nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int level = 0;
  Check(MPI_Query_thread(&level), "MPI_Query_thread");

  auto backend = fabricscope::MakeBackend("mpi");
  fabricscope::ConnectOptions connect;
  connect.rank = rank;
  connect.size = nranks;
  connect.world_rank = rank;
  auto comm = backend->Connect(connect);

  static const std::map<Init, const char*> kInitNames = {
      {Init::kMpiInit, "MPI_Init"},
      {Init::kFabricscope, "fabricscope's launcher session (-t 1)"},
      {Init::kMultiple, "MPI_Init_thread(MPI_THREAD_MULTIPLE)"}};
  if (rank == 0) {
    fmt::print("# {} float sum {}, {} MPI processes, {} rounds x 2 ways (ABBA), {}\n",
               fmt::join(options.collectives, " and "),
               options.in_place ? "in place" : "out of place", nranks, options.rounds,
               backend->version());
    fmt::print("# MPI initialized by {}: {} (both ways run at it)\n", kInitNames.at(options.init),
               ThreadLevelName(level));
    fmt::print(
        "# bare: a plain MPI loop on MPI_COMM_WORLD; fs: fabricscope's engine on the mpi "
        "backend (RunBenchmark -w 0 -c 0)\n");
    fmt::print(
        "# us per op, mean over ranks; ratio = fs / bare time over all rounds (1 = no "
        "overhead), median = of the per-round times\n");
    fmt::print("# {:>10}  {:>10}  {:>6}  {:>9}  {:>9}  {:>7}  {:>7}\n", "collective", "size(B)",
               "ops", "bare(us)", "fs(us)", "ratio", "median");
  }
  for (const std::string& name : options.collectives) {
    const Collective collective = fabricscope::FindCollective(name).id;
    for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4) {
      SizeBench bench(collective, bytes, options.in_place, rank, nranks);
      const int iters = options.iters > 0 ? options.iters : ItersFor(bytes);
      const Rounds r = TimeSize(bench, *comm, bytes, options.rounds, iters, nranks);
      if (rank != 0) continue;
      const int ops = iters * options.rounds;
      const double bare = Sum(r.bare) / options.rounds;
      const double fs = Sum(r.engine) / options.rounds;
      const double best_bare = *std::min_element(r.bare.begin(), r.bare.end());
      const double best_fs = *std::min_element(r.engine.begin(), r.engine.end());
      fmt::print(
          "  {:>10}  {:>10}  {:>6}  {:>9.2f}  {:>9.2f}  {:>7.3f}  {:>7.3f}  {:>9.2f}  {:>9.2f}  "
          "{:>7.3f}\n",
          name, bytes, ops, bare * 1e6, fs * 1e6, fs / bare, Median(r.engine) / Median(r.bare),
          best_bare * 1e6, best_fs * 1e6, best_fs / best_bare);
      std::fflush(stdout);
    }
  }
}

// Parses the flags; on a bad one every rank prints the same error and the job ends with 2.
std::optional<BenchOptions> Parse(int argc, char** argv, int* exit_code) {
  BenchOptions options;
  CLI::App app{"Bare MPI loops against the same collective through fabricscope's engine",
               "mpi_overhead"};
  app.add_option("--collective", options.collectives, "sendrecv and/or all_reduce")
      ->check(CLI::IsMember({"sendrecv", "all_reduce"}))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--min-bytes", options.min_bytes, "smallest size")
      ->check(CLI::Range(size_t{4}, size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--max-bytes", options.max_bytes, "largest size (MPI counts are ints)")
      ->check(CLI::Range(size_t{4}, static_cast<size_t>(INT_MAX) * sizeof(float)))
      ->capture_default_str();
  app.add_option("--rounds", options.rounds, "rounds per way and size")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--iters", options.iters,
                 "timed ops per half round (0: about 16 MB of data, 20 to 4000 ops)")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  app.add_flag("--in-place", options.in_place, "time the in-place placement");
  app.add_option("--init", options.init,
                 "who initializes MPI: mpi_init (a plain MPI program), fabricscope (its "
                 "launcher, -t 1), multiple (MPI_THREAD_MULTIPLE)")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, Init>{{"mpi_init", Init::kMpiInit},
                                                              {"fabricscope", Init::kFabricscope},
                                                              {"multiple", Init::kMultiple}},
                                  CLI::ignore_case));
  try {
    app.parse(argc, argv);
    if (options.min_bytes > options.max_bytes) {
      throw CLI::ValidationError("--min-bytes", "must not exceed --max-bytes");
    }
  } catch (const CLI::ParseError& e) {
    *exit_code = app.exit(e);
    return std::nullopt;
  }
  return options;
}

int Main(int argc, char** argv) {
  int exit_code = 0;
  // Parsed before MPI starts, since the flags say how to start it.
  const std::optional<BenchOptions> options = Parse(argc, argv, &exit_code);
  std::optional<fabricscope::MpiSession> session;
  int provided = 0;
  if (options && options->init == Init::kFabricscope) {
    session.emplace(fabricscope::MpiSessionOptions{.rank_threads = false});
  } else if (options && options->init == Init::kMultiple) {
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  if (options) {
    try {
      RunSweep(*options);
    } catch (const std::exception& e) {
      fmt::print(stderr, "mpi_overhead: {}\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (!session) MPI_Finalize();
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
