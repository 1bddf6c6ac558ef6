// What the engine costs: per size, the busbw the fabricscope engine reports for all_reduce
// (fabricscope::RunThreads, the path `fabricscope run` takes) next to a bare loop of the same
// gloo::allreduce in the same process, threads as ranks over loopback TCP.
//
//   engine_overhead [--ranks 2] [--min-bytes 1024] [--max-bytes 67108864] [--rounds 8]
//                   [--iters N] [--bare-kernel fabricscope|gloo] [--bare-connect round|once]
//
// The bare loop is timed as nccl-tests times: one untimed op and a barrier, then N ops
// between two host clock reads; the mean time per op, averaged over ranks. It runs both of
// the engine's placements (out-of-place: input and output buffers; in-place: Gloo reduces
// the output buffer), so each engine figure has a bare twin doing the same memory traffic.
// By default the bare loop reduces with fabricscope::Reduce3, the kernel the Gloo backend
// gives Gloo, so the ratio is what the engine and the backend's Run add; --bare-kernel gloo
// uses gloo::sum<float> instead and folds the kernel difference into the ratio.
//
// Each engine round is one RunThreads call (-c 0, -n N, -b = -e = that size): it connects
// Gloo and allocates its buffers outside its timed loop, but the rendezvous leaves both
// CPUs idle for ~10-30 ms, and on a small VM the first ~100 ops after an idle spell are
// several times slower. So by default each bare round starts the same way (fresh threads,
// connect, allocate, warm up); --bare-connect once keeps its connections warm instead, which
// shows that effect. Bare and engine rounds alternate in ABBA order (bare, engine, engine,
// bare, ...) so drift and noise fall on both alike; the table gives the ratio of the mean
// busbw over all rounds and the ratio of the median rounds, which the scheduler tail moves
// less. Before timing, one validated engine call (-c 1) per size checks the sums.
#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

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

#include "fabricscope/backend.h"
#include "fabricscope/dtype.h"
#include "fabricscope/launch.h"
#include "fabricscope/options.h"
#include "fabricscope/result.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kGoalRatio = 0.97;
constexpr size_t kGoalFromBytes = size_t{1} << 20;

struct BenchOptions {
  std::vector<int> ranks = {2};
  size_t min_bytes = size_t{1} << 10;
  size_t max_bytes = size_t{64} << 20;
  int rounds = 8;  // per way and size; a multiple of 4 keeps the ABBA order balanced
  int iters = 0;   // timed ops per placement and round; 0 = ItersFor(size)
  bool bare_uses_reduce3 = true;
  bool bare_connect_each_round = true;
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

double BusBw(size_t bytes, double seconds_per_op, int nranks) {
  const double algbw = static_cast<double>(bytes) / 1e9 / seconds_per_op;
  return algbw * 2.0 * (nranks - 1) / nranks;
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// Runs body(rank) on one thread per rank and rethrows the first failure.
void OnRankThreads(int nranks, const std::function<void(int)>& body) {
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

void Reduce3Sum(void* out, const void* a, const void* b, size_t n) {
  fabricscope::Reduce3(fabricscope::DataType::kFloat, fabricscope::ReduceOp::kSum, out, a, b, n);
}

// One bare rank: its Gloo context and buffers, zero-filled like the engine's at -c 0.
struct BareRank {
  std::shared_ptr<gloo::Context> context;
  std::vector<float> send;
  std::vector<float> recv;
};

// The bare side. By default every round starts the way a RunThreads call does: fresh threads
// connect, allocate and fill their buffers, and warm up with one op for each end of the
// (one-size) sweep. With connect_each_round false, contexts and buffers are kept from round
// to round: the bare loop then runs right after the previous round, without the idle
// milliseconds of a rendezvous, which the engine's rounds here can never do.
class BareRanks {
 public:
  BareRanks(int nranks, bool use_reduce3, bool connect_each_round)
      : nranks_(nranks),
        use_reduce3_(use_reduce3),
        connect_each_round_(connect_each_round),
        kept_(static_cast<size_t>(nranks)) {
    if (connect_each_round_) return;
    gloo::rendezvous::HashStore store;
    OnRankThreads(nranks_, [&](int rank) {
      kept_[static_cast<size_t>(rank)].context = Connect(store, rank);
    });
  }

  // For each placement, one untimed op, a barrier, then `iters` timed ops.
  RoundTimes Round(size_t bytes, int iters) {
    const size_t count = bytes / sizeof(float);
    std::vector<RoundTimes> per_rank(static_cast<size_t>(nranks_));
    gloo::rendezvous::HashStore store;  // one per round, as RunThreads has
    OnRankThreads(nranks_, [&](int rank) {
      const auto r = static_cast<size_t>(rank);
      BareRank fresh;
      BareRank& me = connect_each_round_ ? fresh : kept_[r];
      if (connect_each_round_) me.context = Connect(store, rank);
      if (me.recv.size() != count) {
        me.send.assign(count, 0.0f);
        me.recv.assign(count, 0.0f);
      }
      if (connect_each_round_) {
        for (int i = 0; i < 2; ++i) Allreduce(me, kOutOfPlace);
      }
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
    if (placement == kOutOfPlace) opts.setInput(me.send.data(), me.send.size());
    opts.setOutput(me.recv.data(), me.recv.size());
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
  std::vector<BareRank> kept_;
};

// The engine side: what `fabricscope run -b S -e S -n N -c 0 -t nranks` would report.
class EngineRuns {
 public:
  explicit EngineRuns(int nranks) : nranks_(nranks), backend_(fabricscope::MakeBackend("gloo")) {}

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
      const double expected = BusBw(bytes, times.per_op_s[p], nranks_);
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
    const fabricscope::RunResult result = fabricscope::RunThreads(options, *backend_, nullptr);
    if (result.rows.size() != 1 || result.rows[0].size != bytes) {
      throw std::runtime_error(
          fmt::format("engine gave {} rows for {} bytes (memory cap?)", result.rows.size(), bytes));
    }
    return result.rows[0];
  }

  const int nranks_;
  std::unique_ptr<fabricscope::Backend> backend_;
};

void RunRanks(int nranks, const BenchOptions& options) {
  BareRanks bare(nranks, options.bare_uses_reduce3, options.bare_connect_each_round);
  EngineRuns engine(nranks);

  fmt::print("# all_reduce float sum, {} thread ranks, {} rounds per way (ABBA), busbw in GB/s\n",
             nranks, options.rounds);
  fmt::print("# bare: gloo::allreduce loop, kernel {}, {}\n",
             options.bare_uses_reduce3 ? "fabricscope::Reduce3 (the backend's kernel)"
                                       : "gloo::sum<float> (not the backend's kernel)",
             options.bare_connect_each_round ? "connected each round like the engine"
                                             : "connected once (warm, unlike the engine)");
  fmt::print("# fs:   busbw fabricscope::RunThreads reports (engine + Gloo backend, -c 0)\n");
  fmt::print("# ratio = fs / bare over all rounds; median = ratio of the median rounds\n");
  std::string groups =
      fmt::format("#{:>10} {:>6} | {:^33} | {:^33}", "", "", "out-of-place", "in-place");
  groups.erase(groups.find_last_not_of(' ') + 1);
  fmt::print("{}\n", groups);
  fmt::print("#{:>10} {:>6} | {:>8} {:>8} {:>7} {:>7} | {:>8} {:>8} {:>7} {:>7}\n", "size(B)",
             "ops", "bare", "fs", "ratio", "median", "bare", "fs", "ratio", "median");
  std::fflush(stdout);

  int goal_sizes = 0;
  int goal_met[kPlacements] = {0, 0};
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
        const RoundTimes t = run_bare ? bare.Round(bytes, iters) : engine.Round(bytes, iters);
        for (int p = 0; p < kPlacements; ++p) {
          (run_bare ? bare_s : engine_s)[p].push_back(t.per_op_s[p]);
        }
      }
    }
    std::string line = fmt::format(" {:>10} {:>6}", bytes, iters * options.rounds);
    const bool in_goal = bytes >= kGoalFromBytes;
    goal_sizes += in_goal ? 1 : 0;
    for (int p = 0; p < kPlacements; ++p) {
      const double bare_bw = BusBw(bytes, Mean(bare_s[p]), nranks);
      const double fs_bw = BusBw(bytes, Mean(engine_s[p]), nranks);
      const double ratio = fs_bw / bare_bw;
      const double median = Median(bare_s[p]) / Median(engine_s[p]);
      if (in_goal && ratio >= kGoalRatio) ++goal_met[p];
      line += fmt::format(" | {:>8.4g} {:>8.4g} {:>7.3f} {:>7.3f}", bare_bw, fs_bw, ratio, median);
    }
    fmt::print("{}\n", line);
    std::fflush(stdout);
  }
  if (goal_sizes > 0) {
    fmt::print("# sizes >= {} B with ratio >= {:.2f}: {} {}/{}, {} {}/{}\n", kGoalFromBytes,
               kGoalRatio, kPlacementNames[kOutOfPlace], goal_met[kOutOfPlace], goal_sizes,
               kPlacementNames[kInPlace], goal_met[kInPlace], goal_sizes);
  }
  fmt::print("\n");
}

[[noreturn]] void Usage(std::string_view problem) {
  fmt::print(stderr, "engine_overhead: {}\n", problem);
  fmt::print(stderr,
             "usage: engine_overhead [--ranks 2[,4...]] [--min-bytes N] [--max-bytes N]\n"
             "                       [--rounds N] [--iters N] [--bare-kernel fabricscope|gloo]\n"
             "                       [--bare-connect round|once]\n");
  std::exit(2);
}

size_t ParseNumber(std::string_view flag, const std::string& text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v == 0) Usage(fmt::format("bad value for {}", flag));
  return static_cast<size_t>(v);
}

int ParseInt(std::string_view flag, const std::string& text) {
  const size_t v = ParseNumber(flag, text);
  if (v > 1000000) Usage(fmt::format("{} is too large", flag));
  return static_cast<int>(v);
}

BenchOptions Parse(int argc, char** argv) {
  BenchOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) Usage(fmt::format("{} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--ranks") {
      options.ranks.clear();
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = std::min(value.find(',', start), value.size());
        const int n = ParseInt(flag, value.substr(start, comma - start));
        if (n < 2) Usage("--ranks needs at least 2 ranks: one rank has no Gloo traffic");
        options.ranks.push_back(n);
        start = comma + 1;
      }
    } else if (flag == "--min-bytes") {
      options.min_bytes = ParseNumber(flag, value);
    } else if (flag == "--max-bytes") {
      options.max_bytes = ParseNumber(flag, value);
    } else if (flag == "--rounds") {
      options.rounds = ParseInt(flag, value);
    } else if (flag == "--iters") {
      options.iters = ParseInt(flag, value);
    } else if (flag == "--bare-kernel") {
      if (value != "gloo" && value != "fabricscope") Usage("--bare-kernel is fabricscope or gloo");
      options.bare_uses_reduce3 = value == "fabricscope";
    } else if (flag == "--bare-connect") {
      if (value != "round" && value != "once") Usage("--bare-connect is round or once");
      options.bare_connect_each_round = value == "round";
    } else {
      Usage(fmt::format("unknown flag {}", flag));
    }
  }
  if (options.min_bytes < sizeof(float) || options.min_bytes % sizeof(float) != 0 ||
      options.min_bytes > options.max_bytes) {
    Usage("need min-bytes <= max-bytes, min-bytes a multiple of 4");
  }
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
