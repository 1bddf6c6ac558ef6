// What the engine costs: per size, the busbw the fabricscope engine reports for all_reduce
// (fabricscope::RunThreads, the path `fabricscope run` takes) next to a bare loop of the same
// gloo::allreduce in the same process, threads as ranks over loopback TCP.
//
//   engine_overhead [--ranks 2] [--min-bytes 1024] [--max-bytes 67108864] [--rounds 16]
//                   [--iters N] [--bare-kernel fabricscope|gloo] [--connect round|once] [--aa 0|1]
//
// The bare loop is timed as nccl-tests times: one untimed op and a barrier, then N ops
// between two host clock reads; the mean time per op, averaged over ranks. It runs both of
// the engine's placements (out-of-place: input and output buffers; in-place: Gloo reduces
// the output buffer), so each engine figure has a bare twin doing the same memory traffic.
// By default the bare loop reduces with fabricscope::Reduce3, the kernel the Gloo backend
// gives Gloo, so the ratio is what the engine and the backend's Run add; --bare-kernel gloo
// uses gloo::sum<float> instead and folds the kernel difference into the ratio.
//
// Each engine round is one RunThreads call (-c 0, -n N, -b = -e = that size). It connects
// Gloo and allocates its buffers outside its timed loop, yet both move the figures on a small
// VM: the rendezvous leaves the CPUs idle for ~10-30 ms, after which the first ~100 ops run
// several times slower, and the busbw of a buffer depends on where malloc got it (rank 0 runs
// on the calling thread, in the main arena). So each bare round starts the same way: rank 0
// on this thread and the others on new threads, connect, allocate as the engine does, warm
// up. --connect once connects both sides once and runs the engine as RunBenchmark (engine.h)
// on the kept communicators: the launcher's connect drops out of both, which leaves the
// engine's own cost with less noise around it.
//
// Bare and engine rounds alternate in ABBA order (bare, engine, engine, bare, ...) so drift
// falls on both alike. The table gives the ratio of the mean busbw over all rounds (what the
// goal is about) and the median and quartiles of the per-round ratios, each engine half
// against the bare half next to it, which the scheduler tail moves less. Before timing, one
// validated engine call (-c 1) per size checks the sums.
//
// --aa 1 puts a second bare loop where the engine was (an A/A test): the spread of its
// ratios is what this machine's noise alone does to the table, the yardstick for the
// engine's.
#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_stats.h"
#include "fabricscope/backend.h"
#include "fabricscope/dtype.h"
#include "fabricscope/engine.h"
#include "fabricscope/launch.h"
#include "fabricscope/options.h"
#include "fabricscope/result.h"
#include "fabricscope/tcp_store.h"

namespace {

using fabricscope::bench::AllReduceBusBw;
using fabricscope::bench::Mean;
using fabricscope::bench::Median;
using fabricscope::bench::Quantile;
using fabricscope::bench::Sum;

using Clock = std::chrono::steady_clock;

constexpr double kGoalRatio = 0.97;
constexpr size_t kGoalFromBytes = size_t{1} << 20;

struct BenchOptions {
  std::vector<int> ranks = {2};
  size_t min_bytes = size_t{1} << 10;
  size_t max_bytes = size_t{64} << 20;
  int rounds = 16;  // per way and size; a multiple of 4 keeps the ABBA order balanced
  int iters = 0;    // timed ops per placement and round; 0 = ItersFor(size)
  bool bare_uses_reduce3 = true;
  bool connect_each_round = true;
  bool aa = false;  // time the bare loop against itself
};

// Timed ops per placement and round: about 32 MiB of data, at least 4 ops, at most 100.
int ItersFor(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{32} << 20) / bytes, 4, 100));
}

// The two placements of an nccl-tests row.
enum Placement { kOutOfPlace = 0, kInPlace = 1 };
constexpr int kPlacements = 2;
constexpr const char* kPlacementNames[kPlacements] = {"out-of-place", "in-place"};

// Seconds per op of one round, already averaged over ranks, for each placement.
struct RoundTimes {
  double per_op_s[kPlacements] = {0, 0};
};

// Runs body(rank) for every rank and rethrows the first failure. Like RunThreads, rank 0
// runs on the calling thread and the others on new threads: where a rank runs decides which
// malloc arena its buffers come from, which alone moved 4 MB busbw by 10-30% on a 2-vCPU VM.
void OnRanks(int nranks, const std::function<void(int)>& body) {
  std::mutex mutex;
  std::exception_ptr failure;
  auto guarded = [&](int rank) {
    try {
      body(rank);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(nranks));
  for (int r = 1; r < nranks; ++r) threads.emplace_back(guarded, r);
  guarded(0);
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

void Reduce3Sum(void* out, const void* a, const void* b, size_t n) {
  fabricscope::Reduce3(fabricscope::DataType::kFloat, fabricscope::ReduceOp::kSum, out, a, b, n);
}

// One bare rank: its Gloo context and buffers, allocated and zero-filled as the engine
// allocates its own (RankRunner::AllocateBuffers), so both sides get the same kind of memory.
struct BareRank {
  std::shared_ptr<gloo::Context> context;
  std::unique_ptr<std::byte[]> send;
  std::unique_ptr<std::byte[]> recv;
  size_t count = 0;

  void Allocate(size_t bytes) {
    const size_t allocated = std::max<size_t>(bytes, 64);
    send = std::make_unique_for_overwrite<std::byte[]>(allocated);
    recv = std::make_unique_for_overwrite<std::byte[]>(allocated);
    std::fill_n(send.get(), allocated, std::byte{0});
    std::fill_n(recv.get(), allocated, std::byte{0});
    count = bytes / sizeof(float);
  }
};

// The bare side. Every round allocates its buffers and warms up as an engine call does
// (one op for each end of its one-size sweep), on rank threads laid out as RunThreads lays
// them out. With connect_each_round the ranks also connect at the start of every round, as
// each RunThreads call does; otherwise they keep the contexts connected at the start.
class BareRanks {
 public:
  BareRanks(int nranks, bool use_reduce3, bool connect_each_round)
      : nranks_(nranks),
        use_reduce3_(use_reduce3),
        connect_each_round_(connect_each_round),
        kept_(static_cast<size_t>(nranks)) {
    if (connect_each_round_) return;
    gloo::rendezvous::HashStore store;
    OnRanks(nranks_, [&](int rank) { kept_[static_cast<size_t>(rank)] = Connect(store, rank); });
  }

  // For each placement, one untimed op, a barrier, then `iters` timed ops.
  RoundTimes Round(size_t bytes, int iters) {
    std::vector<RoundTimes> per_rank(static_cast<size_t>(nranks_));
    gloo::rendezvous::HashStore store;  // one per round, as RunThreads has
    OnRanks(nranks_, [&](int rank) {
      const auto r = static_cast<size_t>(rank);
      BareRank me;
      me.context = connect_each_round_ ? Connect(store, rank) : kept_[r];
      me.Allocate(bytes);
      for (int i = 0; i < 2; ++i) Allreduce(me, kOutOfPlace);
      for (int p = 0; p < kPlacements; ++p) {
        const auto placement = static_cast<Placement>(p);
        Allreduce(me, placement);
        Barrier(me);
        const auto start = Clock::now();
        for (int i = 0; i < iters; ++i) Allreduce(me, placement);
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        per_rank[r].per_op_s[p] = seconds / iters;
      }
    });
    RoundTimes mean;
    for (const RoundTimes& t : per_rank) {
      for (int p = 0; p < kPlacements; ++p) mean.per_op_s[p] += t.per_op_s[p] / nranks_;
    }
    return mean;
  }

 private:
  std::shared_ptr<gloo::Context> Connect(gloo::rendezvous::Store& store, int rank) const {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks_);
    context->setTimeout(std::chrono::seconds(60));
    context->connectFullMesh(store, device);
    return context;
  }

  // In place, Gloo gets no input and reduces the output buffer, as the backend does.
  void Allreduce(BareRank& me, Placement placement) const {
    gloo::AllreduceOptions opts(me.context);
    if (placement == kOutOfPlace) opts.setInput(reinterpret_cast<float*>(me.send.get()), me.count);
    opts.setOutput(reinterpret_cast<float*>(me.recv.get()), me.count);
    using Kernel = void (*)(void*, const void*, const void*, size_t);
    opts.setReduceFunction(use_reduce3_ ? Kernel{&Reduce3Sum} : Kernel{&gloo::sum<float>});
    gloo::allreduce(opts);
  }

  static void Barrier(BareRank& me) {
    gloo::BarrierOptions opts(me.context);
    gloo::barrier(opts);
  }

  const int nranks_;
  const bool use_reduce3_;
  const bool connect_each_round_;
  std::vector<std::shared_ptr<gloo::Context>> kept_;
};

// The engine side: what `fabricscope run -b S -e S -n N -c 0 -t nranks` reports. With
// connect_each_round every call is a RunThreads, the whole launcher; otherwise the ranks keep
// the communicators connected at the start and each call is a RunBenchmark (engine.h) on
// them, which leaves out only the launcher's Connect.
class EngineRanks {
 public:
  EngineRanks(int nranks, bool connect_each_round)
      : nranks_(nranks),
        connect_each_round_(connect_each_round),
        backend_(fabricscope::MakeBackend("gloo")),
        kept_(static_cast<size_t>(nranks)) {
    if (connect_each_round_) return;
    OnRanks(nranks_, [&](int rank) {
      fabricscope::ConnectOptions connect;
      connect.rank = rank;
      connect.size = nranks_;
      connect.store = &store_;
      kept_[static_cast<size_t>(rank)] = backend_->Connect(connect);
    });
  }

  // One validated call; throws when any element is wrong.
  void Check(size_t bytes) {
    const fabricscope::ResultRow row = Run(bytes, 1, 1);
    for (const auto* p : {&row.out_of_place, &row.in_place}) {
      if (!p->has_value() || !(*p)->wrong.has_value() || *(*p)->wrong != 0) {
        throw std::runtime_error(
            fmt::format("engine all_reduce of {} bytes failed its check", bytes));
      }
    }
  }

  // One timed round: the engine's own figures, per op, for each placement.
  RoundTimes Round(size_t bytes, int iters) {
    const fabricscope::ResultRow row = Run(bytes, iters, 0);
    RoundTimes times;
    const std::optional<fabricscope::PlacementResult>* placements[kPlacements] = {&row.out_of_place,
                                                                                  &row.in_place};
    for (int p = 0; p < kPlacements; ++p) {
      const auto& placement = *placements[p];
      if (!placement.has_value()) throw std::runtime_error("engine row without a placement");
      times.per_op_s[p] = placement->time_us * 1e-6;
      // The table derives busbw from time; this says the engine's own figure is the same.
      const double expected = AllReduceBusBw(bytes, times.per_op_s[p], nranks_);
      if (std::abs(placement->busbw - expected) > 1e-9 * expected) {
        throw std::runtime_error(fmt::format("engine busbw {} != {} from its time at {} bytes",
                                             placement->busbw, expected, bytes));
      }
    }
    return times;
  }

 private:
  fabricscope::ResultRow Run(size_t bytes, int iters, int check) {
    fabricscope::RunOptions options;
    options.backend = "gloo";
    options.collectives = {fabricscope::Collective::kAllReduce};
    options.types = {fabricscope::DataType::kFloat};
    options.ops = {fabricscope::ReduceOp::kSum};
    options.nthreads = nranks_;
    options.min_bytes = options.max_bytes = bytes;
    options.iters = iters;
    options.warmup_iters = 1;
    options.check = check;
    options.command_line = {"engine_overhead"};
    fabricscope::RunResult result;
    if (connect_each_round_) {
      result = fabricscope::RunThreads(options, *backend_, nullptr);
    } else {
      const fabricscope::SweepPlan plan = fabricscope::PlanSweep(options, nranks_);
      std::vector<fabricscope::RunResult> scratch(static_cast<size_t>(nranks_));
      OnRanks(nranks_, [&](int rank) {
        const auto r = static_cast<size_t>(rank);
        fabricscope::RunBenchmark(options, plan, *kept_[r], rank == 0 ? result : scratch[r],
                                  nullptr);
      });
    }
    if (result.rows.size() != 1 || result.rows[0].size != bytes) {
      throw std::runtime_error(
          fmt::format("engine gave {} rows for {} bytes (memory cap?)", result.rows.size(), bytes));
    }
    return result.rows[0];
  }

  const int nranks_;
  const bool connect_each_round_;
  std::unique_ptr<fabricscope::Backend> backend_;
  fabricscope::InMemoryStore store_;
  std::vector<std::unique_ptr<fabricscope::Communicator>> kept_;
};

void RunRanks(int nranks, const BenchOptions& options) {
  BareRanks bare(nranks, options.bare_uses_reduce3, options.connect_each_round);
  EngineRanks engine(nranks, options.connect_each_round);
  // --aa: the "fs" side is a second, identical bare loop (an A/A test).
  std::unique_ptr<BareRanks> twin;
  if (options.aa) {
    twin =
        std::make_unique<BareRanks>(nranks, options.bare_uses_reduce3, options.connect_each_round);
  }

  fmt::print("# all_reduce float sum, {} thread ranks, {} rounds per way (ABBA), busbw in GB/s\n",
             nranks, options.rounds);
  fmt::print("# bare: gloo::allreduce loop, kernel {}\n",
             options.bare_uses_reduce3 ? "fabricscope::Reduce3 (the backend's kernel)"
                                       : "gloo::sum<float> (not the backend's kernel)");
  if (options.aa) {
    fmt::print("# fs:   A/A TEST: a second bare loop, not the engine; its ratios are the noise\n");
  } else {
    fmt::print("# fs:   busbw the engine reports (-c 0), {}\n",
               options.connect_each_round
                   ? "one RunThreads per round; bare reconnects each round too"
                   : "RunBenchmark on communicators kept all run; bare keeps its contexts too");
  }
  fmt::print(
      "# ratio = fs / bare busbw over all rounds; median, quartiles: of the ratios of\n"
      "# each round's engine half to its bare half (adjacent in time, so drift cancels)\n");
  std::string groups =
      fmt::format("#{:>10} {:>6} | {:^45} | {:^45}", "", "", "out-of-place", "in-place");
  groups.erase(groups.find_last_not_of(' ') + 1);
  fmt::print("{}\n", groups);
  std::string columns = fmt::format("#{:>10} {:>6}", "size(B)", "ops");
  for (int p = 0; p < kPlacements; ++p) {
    columns += fmt::format(" | {:>9} {:>9} {:>6} {:>6} {:>11}", "bare", "fs", "ratio", "median",
                           "quartiles");
  }
  fmt::print("{}\n", columns);
  std::fflush(stdout);

  int goal_sizes = 0;
  int goal_met[kPlacements] = {0, 0};
  int goal_met_median[kPlacements] = {0, 0};
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4) {
    const int iters = options.iters > 0 ? options.iters : ItersFor(bytes);
    engine.Check(bytes);
    std::vector<double> bare_s[kPlacements];
    std::vector<double> engine_s[kPlacements];
    for (int round = 0; round < options.rounds; ++round) {
      // ABBA order: rounds 0 and 3 start bare, 1 and 2 start with the engine.
      const bool bare_first = round % 4 == 0 || round % 4 == 3;
      for (int half = 0; half < 2; ++half) {
        const bool run_bare = (half == 0) == bare_first;
        const RoundTimes t = run_bare ? bare.Round(bytes, iters)
                             : twin   ? twin->Round(bytes, iters)
                                      : engine.Round(bytes, iters);
        for (int p = 0; p < kPlacements; ++p) {
          (run_bare ? bare_s : engine_s)[p].push_back(t.per_op_s[p]);
        }
      }
    }
    std::string line = fmt::format(" {:>10} {:>6}", bytes, iters * options.rounds);
    const bool in_goal = bytes >= kGoalFromBytes;
    goal_sizes += in_goal ? 1 : 0;
    for (int p = 0; p < kPlacements; ++p) {
      const double bare_bw = AllReduceBusBw(bytes, Mean(bare_s[p]), nranks);
      const double fs_bw = AllReduceBusBw(bytes, Mean(engine_s[p]), nranks);
      const double ratio = fs_bw / bare_bw;
      std::vector<double> paired;
      for (size_t r = 0; r < bare_s[p].size(); ++r) paired.push_back(bare_s[p][r] / engine_s[p][r]);
      const double median = Quantile(paired, 0.5);
      if (in_goal && ratio >= kGoalRatio) ++goal_met[p];
      if (in_goal && median >= kGoalRatio) ++goal_met_median[p];
      const std::string quartiles =
          fmt::format("{:.2f}-{:.2f}", Quantile(paired, 0.25), Quantile(paired, 0.75));
      line += fmt::format(" | {:>9.3g} {:>9.3g} {:>6.3f} {:>6.3f} {:>11}", bare_bw, fs_bw, ratio,
                          median, quartiles);
    }
    fmt::print("{}\n", line);
    std::fflush(stdout);
  }
  if (goal_sizes > 0) {
    for (int p = 0; p < kPlacements; ++p) {
      fmt::print("# {}: sizes >= {} B at or above {:.2f}: ratio {}/{}, median {}/{}\n",
                 kPlacementNames[p], kGoalFromBytes, kGoalRatio, goal_met[p], goal_sizes,
                 goal_met_median[p], goal_sizes);
    }
  }
  fmt::print("\n");
}

BenchOptions Parse(int argc, char** argv) {
  BenchOptions options;
  CLI::App app{"Bare gloo::allreduce against the busbw fabricscope's engine reports for it",
               "engine_overhead"};
  app.add_option("--ranks", options.ranks,
                 "rank counts, comma-separated (one rank has no Gloo traffic)")
      ->delimiter(',')
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  app.add_option("--min-bytes", options.min_bytes, "smallest size, a multiple of 4")
      ->check(CLI::Range(size_t{4}, size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--max-bytes", options.max_bytes, "largest size")
      ->check(CLI::Range(size_t{4}, size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--rounds", options.rounds, "rounds per way and size")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--iters", options.iters, "timed ops per placement and round; 0 = by size")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  std::string kernel = "fabricscope";
  app.add_option("--bare-kernel", kernel, "the bare side's reduction kernel")
      ->check(CLI::IsMember({"gloo", "fabricscope"}))
      ->capture_default_str();
  std::string connect = "round";
  app.add_option("--connect", connect, "connect the bare side every round or once")
      ->check(CLI::IsMember({"round", "once"}))
      ->capture_default_str();
  int aa = 0;
  app.add_option("--aa", aa, "1: time the bare loop against itself (the noise yardstick)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
    if (options.min_bytes % sizeof(float) != 0 || options.min_bytes > options.max_bytes) {
      throw CLI::ValidationError("--min-bytes",
                                 "must be a multiple of 4 and not exceed --max-bytes");
    }
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  options.bare_uses_reduce3 = kernel == "fabricscope";
  options.connect_each_round = connect == "round";
  options.aa = aa == 1;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  const BenchOptions options = Parse(argc, argv);
  try {
    for (int nranks : options.ranks) RunRanks(nranks, options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "engine_overhead: {}\n", e.what());
    return 1;
  }
  return 0;
}
