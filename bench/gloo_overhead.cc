// What the Gloo backend adds to Gloo: all_reduce timed as a bare gloo::allreduce loop and
// through GlooCommunicator::Run, on the same buffers, threads as ranks over loopback TCP.
//
//   gloo_overhead [--ranks 2,4] [--min-bytes 1024] [--max-bytes 67108864] [--rounds 8]
//                 [--bare-kernel gloo|fabricscope]
//
// The bare loop reduces with Gloo's own gloo::sum<float> by default, so the ratio includes
// our reduction kernel; --bare-kernel fabricscope gives it fabricscope::Reduce3 as well,
// which leaves only what GlooCommunicator::Run itself adds.
//
// Each size is timed as nccl-tests does (one warm-up op, then N ops between two host clock
// reads: the mean time per op, averaged over ranks). The two ways alternate in short rounds
// (bare, backend, backend, bare, ...) so drift and noise fall on both alike. On a small VM
// single ops have a millisecond tail (scheduler ticks), so the table also gives the ratio of
// the median rounds, which that tail moves less than the mean.
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
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_stats.h"
#include "fabricscope/backend.h"
#include "fabricscope/dtype.h"
#include "fabricscope/tcp_store.h"

namespace {

using fabricscope::bench::AllReduceBusBw;
using fabricscope::bench::Mean;
using fabricscope::bench::Median;
using fabricscope::bench::Quantile;
using fabricscope::bench::Sum;

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::vector<int> ranks = {2, 4};
  size_t min_bytes = size_t{1} << 10;
  size_t max_bytes = size_t{64} << 20;
  int rounds = 8;  // per way and size; a multiple of 4 keeps the ABBA order balanced
  bool bare_uses_reduce3 = false;
};

// Timed ops per round: about 8 MB of data, at least 2 ops, at most 100.
int ItersFor(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{8} << 20) / bytes, 2, 100));
}

// One rank's seconds per round, for each way.
struct Timing {
  std::vector<double> bare_s;
  std::vector<double> backend_s;
  int iters = 0;  // per round
};

std::shared_ptr<gloo::Context> ConnectBare(gloo::rendezvous::Store& store, int rank, int size) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(std::chrono::seconds(60));
  context->connectFullMesh(store, device);
  return context;
}

void Reduce3Sum(void* out, const void* a, const void* b, size_t n) {
  fabricscope::Reduce3(fabricscope::DataType::kFloat, fabricscope::ReduceOp::kSum, out, a, b, n);
}

void BareAllreduce(const std::shared_ptr<gloo::Context>& context, float* send, float* recv,
                   size_t count, bool use_reduce3) {
  gloo::AllreduceOptions opts(context);
  opts.setInput(send, count);
  opts.setOutput(recv, count);
  using Kernel = void (*)(void*, const void*, const void*, size_t);
  opts.setReduceFunction(use_reduce3 ? Kernel{&Reduce3Sum} : Kernel{&gloo::sum<float>});
  gloo::allreduce(opts);
}

void Barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions opts(context);
  gloo::barrier(opts);
}

// One rank's whole sweep; fills timings[size index].
void RankMain(int rank, int size, const BenchOptions& options, gloo::rendezvous::Store& bare_store,
              fabricscope::Store& store, fabricscope::Backend& backend,
              std::vector<Timing>& timings) {
  auto bare = ConnectBare(bare_store, rank, size);
  fabricscope::ConnectOptions connect;
  connect.rank = rank;
  connect.size = size;
  connect.store = &store;
  connect.timeout = std::chrono::seconds(60);
  auto comm = backend.Connect(connect);

  size_t index = 0;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4, ++index) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> send(count, 1.0f);
    std::vector<float> recv(count, 0.0f);
    fabricscope::CollectiveCall call;
    call.collective = fabricscope::Collective::kAllReduce;
    call.send = send.data();
    call.recv = recv.data();
    call.count = count;
    call.type = fabricscope::DataType::kFloat;
    call.op = fabricscope::ReduceOp::kSum;

    const int iters = ItersFor(bytes);
    BareAllreduce(bare, send.data(), recv.data(), count, options.bare_uses_reduce3);  // warm-up
    comm->Run(call);
    Timing& t = timings[index];
    t.iters = iters;
    for (int round = 0; round < options.rounds; ++round) {
      // ABBA order: rounds 0 and 3 start bare, 1 and 2 start with the backend.
      const bool bare_first = round % 4 == 0 || round % 4 == 3;
      for (int half = 0; half < 2; ++half) {
        const bool run_bare = (half == 0) == bare_first;
        Barrier(bare);
        const auto start = Clock::now();
        for (int i = 0; i < iters; ++i) {
          if (run_bare) {
            BareAllreduce(bare, send.data(), recv.data(), count, options.bare_uses_reduce3);
          } else {
            comm->Run(call);
          }
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        (run_bare ? t.bare_s : t.backend_s).push_back(seconds);
      }
    }
  }
}

void RunRanks(int nranks, const BenchOptions& options) {
  auto backend = fabricscope::MakeBackend("gloo");
  fabricscope::InMemoryStore store;
  gloo::rendezvous::HashStore bare_store;
  size_t sizes = 0;
  for (size_t b = options.min_bytes; b <= options.max_bytes; b *= 4) ++sizes;
  std::vector<std::vector<Timing>> timings(static_cast<size_t>(nranks), std::vector<Timing>(sizes));
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        RankMain(r, nranks, options, bare_store, store, *backend, timings[static_cast<size_t>(r)]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);

  fmt::print(
      "# all_reduce float sum, {} thread ranks, {} rounds x 2 ways, mean of ranks, bare kernel "
      "{}\n",
      nranks, options.rounds, options.bare_uses_reduce3 ? "fabricscope::Reduce3" : "gloo::sum");
  fmt::print("# busbw in GB/s; ratio = backend busbw / bare busbw (1 = no overhead)\n");
  fmt::print("# {:>10}  {:>6}  {:>10}  {:>9}  {:>10}  {:>9}  {:>7}  {:>8}\n", "size(B)", "ops",
             "bare(us)", "bare bw", "fs(us)", "fs bw", "ratio", "median");
  size_t index = 0;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4, ++index) {
    // Per round, the mean over ranks (nccl-tests' -a 1); then their sum and their median.
    std::vector<double> bare_rounds(static_cast<size_t>(options.rounds), 0.0);
    std::vector<double> backend_rounds(static_cast<size_t>(options.rounds), 0.0);
    int iters = 0;
    for (const auto& rank_timings : timings) {
      const Timing& t = rank_timings[index];
      for (size_t i = 0; i < bare_rounds.size(); ++i) {
        bare_rounds[i] += t.bare_s[i] / nranks;
        backend_rounds[i] += t.backend_s[i] / nranks;
      }
      iters = t.iters;
    }
    const int ops = iters * options.rounds;
    const double bare_per_op = Sum(bare_rounds) / ops;
    const double backend_per_op = Sum(backend_rounds) / ops;
    const double bare_bw = AllReduceBusBw(bytes, bare_per_op, nranks);
    const double backend_bw = AllReduceBusBw(bytes, backend_per_op, nranks);
    const double median_ratio = Median(bare_rounds) / Median(backend_rounds);
    fmt::print("  {:>10}  {:>6}  {:>10.1f}  {:>9.3f}  {:>10.1f}  {:>9.3f}  {:>7.3f}  {:>8.3f}\n",
               bytes, ops, bare_per_op * 1e6, bare_bw, backend_per_op * 1e6, backend_bw,
               backend_bw / bare_bw, median_ratio);
  }
  fmt::print("\n");
}

BenchOptions Parse(int argc, char** argv) {
  BenchOptions options;
  CLI::App app{"Bare gloo::allreduce against the same call through fabricscope's Gloo backend",
               "gloo_overhead"};
  app.add_option("--ranks", options.ranks, "rank counts, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  app.add_option("--min-bytes", options.min_bytes, "smallest size")
      ->check(CLI::Range(size_t{4}, size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--max-bytes", options.max_bytes, "largest size")
      ->check(CLI::Range(size_t{4}, size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--rounds", options.rounds, "rounds per way and size")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  std::string kernel = "gloo";
  app.add_option("--bare-kernel", kernel, "the bare side's reduction kernel")
      ->check(CLI::IsMember({"gloo", "fabricscope"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
    if (options.min_bytes > options.max_bytes) {
      throw CLI::ValidationError("--min-bytes", "must not exceed --max-bytes");
    }
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  options.bare_uses_reduce3 = kernel == "fabricscope";
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  const BenchOptions options = Parse(argc, argv);
  try {
    for (int nranks : options.ranks) RunRanks(nranks, options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "gloo_overhead: {}\n", e.what());
    return 1;
  }
  return 0;
}
