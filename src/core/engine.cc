#include "fabricscope/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>

#include "core/local_time.h"
#include "core/validation.h"
#include "fabricscope/error.h"
#include "fabricscope/sizes.h"

namespace fabricscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kGiB = size_t{1} << 30;

// Host memory available to this process: MemAvailable from /proc/meminfo.
size_t AvailableMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

std::vector<int> RootsFor(const CollectiveSpec& spec, const RunOptions& options, int nranks) {
  if (!spec.has_root) return {-1};
  if (options.root >= 0) return {options.root};
  std::vector<int> roots(static_cast<size_t>(nranks));
  std::iota(roots.begin(), roots.end(), 0);
  return roots;
}

std::vector<ReduceOp> OpsFor(const CollectiveSpec& spec, const RunOptions& options) {
  if (!spec.has_op) return {ReduceOp::kSum};  // unused: the call moves data only
  return options.ops;
}

// The buffers of one rank, sized for the largest call of the sweep.
struct Buffers {
  std::unique_ptr<std::byte[]> send;
  std::unique_ptr<std::byte[]> recv;
  size_t send_bytes = 0;
  size_t recv_bytes = 0;
};

// One (collective, type, op, root) test on this rank: what every size of it shares.
struct TestCase {
  const CollectiveSpec* spec;
  DataType type;
  ReduceOp op;
  int root;
};

// Where the call reads and writes for one placement, following nccl-tests' offsets.
CollectiveCall MakeCall(const TestCase& t, const CollectiveCounts& counts, bool in_place,
                        Buffers& buffers, int rank) {
  const size_t e = SizeOf(t.type);
  CollectiveCall call;
  call.collective = t.spec->id;
  call.count = counts.param_count;
  call.type = t.type;
  call.op = t.op;
  call.root = t.root < 0 ? 0 : t.root;
  if (!in_place) {
    call.send = buffers.send.get();
    call.recv = buffers.recv.get();
  } else if (counts.recv_inplace_offset > 0) {
    // reduce_scatter, scatter: the result lands inside the send buffer.
    call.send = buffers.send.get();
    call.recv = buffers.send.get() + counts.recv_inplace_offset * static_cast<size_t>(rank) * e;
  } else {
    call.recv = buffers.recv.get();
    call.send = buffers.recv.get() + counts.send_inplace_offset * static_cast<size_t>(rank) * e;
  }
  return call;
}

class RankRunner {
 public:
  RankRunner(const RunOptions& options, const SweepPlan& plan, Communicator& comm,
             RunResult& result, Reporter* sink)
      : options_(options),
        plan_(plan),
        comm_(comm),
        result_(result),
        sink_(sink),
        rank_(comm.rank()),
        nranks_(comm.size()) {}

  void Run() {
    CheckRoot();
    AllocateBuffers();
    const int cycles = options_.run_cycles;
    for (Collective id : options_.collectives) {
      const CollectiveSpec& spec = SpecOf(id);
      const std::string name(spec.name);
      if (IsReporter()) sink_->BeginTest(result_, name);
      for (int cycle = 0; cycles == 0 || cycle < cycles; ++cycle) {
        for (DataType type : options_.types) {
          for (ReduceOp op : OpsFor(spec, options_)) {
            for (int root : RootsFor(spec, options_, nranks_)) {
              const TestCase t{&spec, type, op, root};
              try {
                RunTest(t);
              } catch (const Error& e) {
                // Say where the run was, so a hang or a dead peer is located at once.
                throw Error(e.code(), Where(t) + ": " + e.what());
              }
            }
          }
        }
      }
      if (IsReporter()) sink_->EndTest(result_, SummarizeCollective(result_, name));
    }
  }

 private:
  bool IsReporter() const { return rank_ == 0 && sink_ != nullptr; }

  void CheckRoot() {
    if (options_.root < -1 || options_.root >= nranks_) {
      throw UsageError("root " + std::to_string(options_.root) + " (-r) is out of range for " +
                       std::to_string(nranks_) + " ranks: give 0.." + std::to_string(nranks_ - 1) +
                       ", or -1 for every root");
    }
  }

  CollectiveCounts CountsAt(const CollectiveSpec& spec, size_t bytes, DataType type) const {
    return spec.counts(bytes, SizeOf(type), nranks_);
  }

  void AllocateBuffers() {
    for (Collective id : options_.collectives) {
      const CollectiveSpec& spec = SpecOf(id);
      for (DataType type : options_.types) {
        for (size_t bytes : plan_.sizes) {
          const CollectiveCounts c = CountsAt(spec, bytes, type);
          const size_t e = SizeOf(type);
          buffers_.send_bytes = std::max(buffers_.send_bytes, c.send_count * e);
          buffers_.recv_bytes = std::max(buffers_.recv_bytes, c.recv_count * e);
        }
      }
    }
    // In-place calls may place the send buffer inside the receive buffer and vice versa.
    const size_t both = std::max(buffers_.send_bytes, buffers_.recv_bytes);
    buffers_.send_bytes = buffers_.recv_bytes = std::max<size_t>(both, 64);
    buffers_.send = std::make_unique_for_overwrite<std::byte[]>(buffers_.send_bytes);
    buffers_.recv = std::make_unique_for_overwrite<std::byte[]>(buffers_.recv_bytes);
    // Touch every page now so first-touch faults are not timed.
    std::fill_n(buffers_.send.get(), buffers_.send_bytes, std::byte{0});
    std::fill_n(buffers_.recv.get(), buffers_.recv_bytes, std::byte{0});
  }

  std::string Where(const TestCase& t) const {
    std::string where = "during " + std::string(t.spec->name) + " " + std::string(NameOf(t.type));
    if (t.spec->has_op) where += " " + std::string(NameOf(t.op));
    if (t.spec->has_root) where += " root " + std::to_string(t.root);
    return where + " " + phase_;
  }

  void RunTest(const TestCase& t) {
    // Warm-up at the largest and the smallest size, as nccl-tests does.
    phase_ = "(warm-up)";
    if (!plan_.sizes.empty()) {
      for (size_t bytes : {plan_.sizes.back(), plan_.sizes.front()}) {
        const CollectiveCounts counts = CountsAt(*t.spec, bytes, t.type);
        const CollectiveCall call = MakeCall(t, counts, false, buffers_, rank_);
        for (int i = 0; i < options_.warmup_iters; ++i) comm_.Run(call);
      }
    }
    for (size_t bytes : plan_.sizes) RunSize(t, bytes);
  }

  void RunSize(const TestCase& t, size_t bytes) {
    const CollectiveCounts counts = CountsAt(*t.spec, bytes, t.type);
    const size_t e = SizeOf(t.type);
    ResultRow row;
    row.collective = std::string(t.spec->name);
    row.size = std::max(counts.send_count, counts.recv_count) * e;
    row.count = counts.param_count;
    row.type = std::string(NameOf(t.type));
    row.redop = t.spec->has_op ? std::string(NameOf(t.op)) : "none";
    row.root = t.spec->has_root ? t.root : -1;
    row.iterations = static_cast<int64_t>(options_.iters) * options_.agg_iters;
    row.out_of_place = Measure(t, counts, false);
    row.in_place = Measure(t, counts, true);
    if (options_.report_timestamps) row.timestamp = LocalTime("%Y-%m-%d %H:%M:%S");
    if (IsReporter()) {
      result_.rows.push_back(std::move(row));
      sink_->Row(result_, result_.rows.back());
    } else if (rank_ == 0) {
      result_.rows.push_back(std::move(row));
    }
  }

  PlacementResult Measure(const TestCase& t, const CollectiveCounts& counts, bool in_place) {
    const CollectiveCall call = MakeCall(t, counts, in_place, buffers_, rank_);
    const std::string size =
        std::to_string(std::max(counts.send_count, counts.recv_count) * SizeOf(t.type));
    const char* where = in_place ? "in-place" : "out-of-place";
    phase_ = "size " + size + " " + where + " (timing)";
    // One untimed op and a barrier line the ranks up before the clock starts.
    comm_.Run(call);
    comm_.Barrier();

    const bool per_iteration = options_.per_iter_timing || options_.blocking == 3;
    std::vector<double> samples_us;
    double total_us = 0;
    if (!per_iteration) {
      const auto start = Clock::now();
      for (int i = 0; i < options_.iters; ++i) RunIteration(call);
      total_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    } else {
      samples_us.reserve(static_cast<size_t>(options_.iters));
      for (int i = 0; i < options_.iters; ++i) {
        // -z 3: the barrier lines ranks up per iteration but is not timed.
        if (options_.blocking == 3) comm_.Barrier();
        const auto start = Clock::now();
        RunIteration(call);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        samples_us.push_back(us);
        total_us += us;
      }
    }
    const int64_t ops =
        std::max<int64_t>(1, static_cast<int64_t>(options_.iters) * options_.agg_iters);
    const double my_time_us = total_us / static_cast<double>(ops);

    PlacementResult placement;
    placement.ranks = GatherTimes(my_time_us);
    placement.time_us = Combine(placement.ranks);
    const double seconds = placement.time_us * 1e-6;
    const size_t alg_bytes = t.spec->alg_bytes(counts.param_count, SizeOf(t.type), nranks_);
    placement.algbw = seconds > 0 ? static_cast<double>(alg_bytes) / 1e9 / seconds : 0;
    placement.busbw = placement.algbw * t.spec->bus_factor(nranks_);
    if (!samples_us.empty()) placement.iterations = IterationSpread(samples_us);
    if (options_.check > 0) {
      phase_ = "size " + size + " " + where + " (validation)";
      placement.wrong = Validate(t, counts, call);
    }
    return placement;
  }

  void RunIteration(const CollectiveCall& call) {
    for (int a = 0; a < options_.agg_iters; ++a) {
      comm_.Run(call);
      if (options_.blocking == 1) comm_.Barrier();
    }
  }

  // Every rank's time reaches every rank, so -a and the straggler facts agree everywhere.
  RankTimes GatherTimes(double my_time_us) {
    RankTimes times;
    times.per_rank_us.assign(static_cast<size_t>(nranks_), 0.0);
    CollectiveCall call;
    call.collective = Collective::kAllGather;
    call.send = &my_time_us;
    call.recv = times.per_rank_us.data();
    call.count = 1;
    call.type = DataType::kDouble;
    comm_.Run(call);
    const auto& v = times.per_rank_us;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    times.min_us = *lo;
    times.max_us = *hi;
    times.min_rank = static_cast<int>(lo - v.begin());
    times.max_rank = static_cast<int>(hi - v.begin());
    times.avg_us = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    return times;
  }

  double Combine(const RankTimes& times) const {
    switch (options_.average) {
      case TimeAggregation::kRank0:
        return times.per_rank_us.front();
      case TimeAggregation::kAverage:
        return times.avg_us;
      case TimeAggregation::kMin:
        return times.min_us;
      case TimeAggregation::kMax:
        return times.max_us;
    }
    return times.avg_us;
  }

  IterationStats IterationSpread(std::vector<double> samples) const {
    const size_t skip =
        std::min(samples.size() - 1, static_cast<size_t>(std::max(0, options_.per_iter_skip)));
    samples.erase(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(skip));
    // Each sample is one iteration of agg_iters ops: report per op, like the table.
    const double per = static_cast<double>(std::max(1, options_.agg_iters));
    for (double& s : samples) s /= per;
    std::sort(samples.begin(), samples.end());
    IterationStats stats;
    stats.min_us = samples.front();
    stats.max_us = samples.back();
    const size_t p99 =
        static_cast<size_t>(std::ceil(0.99 * static_cast<double>(samples.size()))) - 1;
    stats.p99_us = samples[std::min(p99, samples.size() - 1)];
    const double mean =
        std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    double var = 0;
    for (double s : samples) var += (s - mean) * (s - mean);
    var /= static_cast<double>(samples.size());
    stats.cv_percent = mean > 0 ? 100.0 * std::sqrt(var) / mean : 0;
    return stats;
  }

  // Runs -c validation iterations with fresh data and returns wrong elements over all ranks.
  int64_t Validate(const TestCase& t, const CollectiveCounts& counts, const CollectiveCall& call) {
    int64_t wrong = 0;
    for (int iter = 0; iter < options_.check; ++iter) {
      ValidationCase v{t.spec, counts,  t.type,    t.op,
                       rank_,  nranks_, call.root, static_cast<uint32_t>(iter + 1)};
      FillInput(v, const_cast<void*>(call.send));
      comm_.Run(call);
      if (rank_ == options_.inject_fault_rank && RankHasResult(v) && counts.recv_count > 0) {
        // Fault injection: flip every bit of this rank's first result element.
        auto* first = static_cast<unsigned char*>(call.recv);
        for (size_t b = 0; b < SizeOf(t.type); ++b)
          first[b] = static_cast<unsigned char>(~first[b]);
      }
      wrong += CountWrong(v, call.recv);
    }
    int64_t total = 0;
    CollectiveCall sum;
    sum.collective = Collective::kAllReduce;
    sum.send = &wrong;
    sum.recv = &total;
    sum.count = 1;
    sum.type = DataType::kInt64;
    sum.op = ReduceOp::kSum;
    comm_.Run(sum);
    return total;
  }

  const RunOptions& options_;
  const SweepPlan& plan_;
  Communicator& comm_;
  RunResult& result_;
  Reporter* sink_;
  const int rank_;
  const int nranks_;
  Buffers buffers_;
  std::string phase_;  // where the sweep is, for error messages
};

}  // namespace

SweepPlan PlanSweep(const RunOptions& options, int ranks_in_process) {
  SweepPlan plan;
  plan.max_bytes = options.max_bytes;
  const size_t available =
      options.memory_limit_bytes > 0 ? options.memory_limit_bytes : AvailableMemory();
  if (available > 0) {
    // nccl-tests keeps 1 GiB free and needs 2 buffers (3 with the check) per rank; on the
    // host the backend may add a scratch buffer, so one more.
    const size_t headroom = available > 2 * kGiB ? kGiB : available / 2;
    const size_t buffers = options.check > 0 ? 4 : 3;
    const size_t limit =
        (available - headroom) / (buffers * static_cast<size_t>(std::max(1, ranks_in_process)));
    if (plan.max_bytes > limit) {
      plan.max_bytes = limit;
      plan.notes.push_back("Reducing maxBytes to " + std::to_string(limit) +
                           " due to memory limitation");
      if (options.min_bytes > limit) {
        throw UsageError("minimum size " + std::to_string(options.min_bytes) +
                         " (-b) does not fit in memory: at most " + std::to_string(limit) +
                         " bytes per rank with " + std::to_string(ranks_in_process) +
                         " ranks in this process; lower -b or use fewer threads (-t)");
      }
    }
  }
  plan.sizes =
      SizeSweep(options.min_bytes, plan.max_bytes, options.step_bytes, options.step_factor);
  return plan;
}

size_t CountRows(const RunOptions& options, const SweepPlan& plan, int nranks) {
  size_t rows = 0;
  for (Collective id : options.collectives) {
    const CollectiveSpec& spec = SpecOf(id);
    rows += options.types.size() * OpsFor(spec, options).size() *
            RootsFor(spec, options, nranks).size() * plan.sizes.size();
  }
  return rows * static_cast<size_t>(std::max(0, options.run_cycles));
}

void RunBenchmark(const RunOptions& options, const SweepPlan& plan, Communicator& comm,
                  RunResult& result, Reporter* sink) {
  RankRunner(options, plan, comm, result, sink).Run();
}

}  // namespace fabricscope
