#include "fabricscope/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/local_time.h"
#include "fabricscope/sizes.h"
#include "fabricscope/statistics.h"
#include "fabricscope/validation.h"

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

// nccl-tests' nearest-rank percentile index (src/util.cu:528-530 at 2.19.6).
size_t PercentileIndex(size_t n, size_t percentile) {
  return std::min(n - 1, (n * percentile + 99) / 100 - 1);
}

// nccl-tests' computeIterStats (src/util.cu:532-555): the statistics of `times` after its
// first `skip`, with the population standard deviation.
IterationStats NcclTestsIterStats(const std::vector<double>& times, size_t skip) {
  std::vector<double> sorted(times.begin() + static_cast<std::ptrdiff_t>(skip), times.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  IterationStats stats;
  stats.skipped_iterations = static_cast<int>(skip);
  stats.min_us = sorted.front();
  stats.max_us = sorted.back();
  stats.p50_us = sorted[n / 2];
  stats.p95_us = sorted[PercentileIndex(n, 95)];
  stats.p99_us = sorted[PercentileIndex(n, 99)];
  stats.avg_us = Mean(sorted);
  stats.stdev_us = PopulationStdDev(sorted);
  stats.cv_percent = stats.avg_us > 0 ? 100.0 * stats.stdev_us / stats.avg_us : 0;
  return stats;
}

// The buffers of one thread, one of each per device it drives, sized for the largest call
// of the sweep (plus the -u shift).
struct Buffers {
  std::unique_ptr<DeviceBuffers> send;
  std::unique_ptr<DeviceBuffers> recv;
  // Inputs are made and results checked here: device memory is not addressable from the host.
  std::vector<std::byte> host;
  // Per-rank times and wrong counts cross the ranks through these, like any other call.
  std::unique_ptr<DeviceBuffers> control_send;
  std::unique_ptr<DeviceBuffers> control_recv;
};

// One (collective, type, op, root) test on this rank: what every size of it shares.
struct TestCase {
  const CollectiveSpec* spec;
  DataType type;
  ReduceOp op;
  int root;
};

// Where the call of `device` (rank `rank`) reads and writes for one placement, following
// nccl-tests' offsets, shifted by -u elements.
CollectiveCall MakeCall(const TestCase& t, const CollectiveCounts& counts, bool in_place,
                        const Buffers& buffers, int rank, int device, int unalign) {
  const size_t e = SizeOf(t.type);
  const size_t shift = static_cast<size_t>(unalign) * e;
  std::byte* send = buffers.send->data(device) + shift;
  std::byte* recv = buffers.recv->data(device) + shift;
  CollectiveCall call;
  call.collective = t.spec->id;
  call.count = counts.param_count;
  call.type = t.type;
  call.op = t.op;
  call.root = t.root < 0 ? 0 : t.root;
  call.device = device;
  if (!in_place) {
    call.send = send;
    call.recv = recv;
  } else if (counts.recv_inplace_offset > 0) {
    // reduce_scatter, scatter: the result lands inside the send buffer.
    call.send = send;
    call.recv = send + counts.recv_inplace_offset * static_cast<size_t>(rank) * e;
  } else {
    call.recv = recv;
    call.send = recv + counts.send_inplace_offset * static_cast<size_t>(rank) * e;
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
        nranks_(comm.size()),
        devices_(comm.devices()),
        warm_up_sizes_(WarmUpSizes(options.min_bytes, plan.max_bytes)) {}

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
                ThrowWithMessage(e, Where(t) + ": " + e.what());
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
    size_t largest = 64;
    for (Collective id : options_.collectives) {
      const CollectiveSpec& spec = SpecOf(id);
      for (DataType type : options_.types) {
        // The warm-up's sizes too: with -i they can pass the sweep's largest (-b 1K -e 2K
        // sweeps 1K and warms 1K and 2K), as nccl-tests' buffers of -e bytes allow.
        for (const auto* sizes : {&plan_.sizes, &warm_up_sizes_}) {
          for (size_t bytes : *sizes) {
            const CollectiveCounts c = CountsAt(spec, bytes, type);
            largest = std::max({largest, c.send_count * SizeOf(type), c.recv_count * SizeOf(type)});
          }
        }
      }
    }
    // In-place calls may place the send buffer inside the receive buffer and vice versa, so
    // both are as large as the larger; -u shifts by up to its count of the widest element.
    const size_t shift = static_cast<size_t>(options_.unalign) * sizeof(uint64_t);
    buffers_.send = comm_.Allocate(largest + shift);
    buffers_.recv = comm_.Allocate(largest + shift);
    buffers_.host.resize(largest);
    // -I gathers every rank's series of -n times.
    const size_t series =
        options_.per_iter_timing ? static_cast<size_t>(std::max(1, options_.iters)) : 1;
    const size_t control =
        std::max<size_t>(64, sizeof(double) * static_cast<size_t>(nranks_) * series);
    buffers_.control_send = comm_.Allocate(control);
    buffers_.control_recv = comm_.Allocate(control);
  }

  // The call of each device of this thread.
  std::vector<CollectiveCall> MakeCalls(const TestCase& t, const CollectiveCounts& counts,
                                        bool in_place) const {
    std::vector<CollectiveCall> calls;
    calls.reserve(static_cast<size_t>(devices_));
    for (int d = 0; d < devices_; ++d) {
      calls.push_back(MakeCall(t, counts, in_place, buffers_, rank_ + d, d, options_.unalign));
      // Fault injection: this rank posts half the count its peers do, as a peer of another
      // build or a library bug would, past the plan the processes agreed on.
      if (rank_ + d == options_.inject_size_fault_rank && calls.back().count > 1) {
        calls.back().count /= 2;
      }
    }
    return calls;
  }

  // One operation on every device of this thread: one call, or a group of them (-g).
  void Enqueue(const std::vector<CollectiveCall>& calls) {
    if (calls.size() > 1) comm_.GroupStart();
    for (const CollectiveCall& call : calls) comm_.Run(call);
    if (calls.size() > 1) comm_.GroupEnd();
  }

  std::string Where(const TestCase& t) const {
    std::string where = "during " + std::string(t.spec->name) + " " + std::string(NameOf(t.type));
    if (t.spec->has_op) where += " " + std::string(NameOf(t.op));
    if (t.spec->has_root) where += " root " + std::to_string(t.root);
    return where + " " + phase_;
  }

  void RunTest(const TestCase& t) {
    phase_ = "(warm-up)";
    if (!plan_.sizes.empty()) {
      for (size_t bytes : warm_up_sizes_) {
        const CollectiveCounts counts = CountsAt(*t.spec, bytes, t.type);
        const auto calls = MakeCalls(t, counts, false);
        for (int i = 0; i < options_.warmup_iters; ++i) Enqueue(calls);
      }
      comm_.Sync();
    }
    for (size_t bytes : plan_.sizes) RunSize(t, bytes);
  }

  // nccl-tests v2.19.6 warms up at every size from -b to -e by doubling, whatever -f or -i
  // say (TimeTest, src/common.cu:924-931). From -b 0 it would double 0 for ever; here the
  // doubling goes on from 1 byte.
  static std::vector<size_t> WarmUpSizes(size_t min_bytes, size_t max_bytes) {
    std::vector<size_t> sizes;
    for (size_t size = min_bytes; size <= max_bytes; size = size == 0 ? 1 : size * 2) {
      sizes.push_back(size);
      if (size > max_bytes / 2 && size != 0) break;  // the next doubling would overflow or pass -e
    }
    return sizes;
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
    const auto calls = MakeCalls(t, counts, in_place);
    const std::string size =
        std::to_string(std::max(counts.send_count, counts.recv_count) * SizeOf(t.type));
    const char* where = in_place ? "in-place" : "out-of-place";
    phase_ = "size " + size + " " + where + " (timing)";
    // One untimed op and a barrier line the ranks up before the clock starts.
    Enqueue(calls);
    comm_.Sync();
    comm_.Barrier();

    // As nccl-tests times: the host clock around the enqueued loop, then a sync. -C reports
    // the enqueue time alone, which on host backends (each call completes in Run) is the same.
    const bool per_iteration = options_.per_iter_timing || options_.blocking == 3;
    std::vector<double> samples_us;
    double total_us = 0;
    double enqueue_us = 0;
    int64_t ops = static_cast<int64_t>(options_.iters) * options_.agg_iters;
    if (options_.graph_launches > 0) {
      const auto graph = comm_.Capture([&] {
        for (int i = 0; i < options_.iters; ++i) RunIteration(calls);
      });
      comm_.Barrier();
      const auto start = Clock::now();
      for (int l = 0; l < options_.graph_launches; ++l) graph->Launch();
      enqueue_us = MicrosecondsSince(start);
      comm_.Sync();
      total_us = MicrosecondsSince(start);
      ops *= options_.graph_launches;
    } else if (!per_iteration) {
      const auto start = Clock::now();
      for (int i = 0; i < options_.iters; ++i) RunIteration(calls);
      enqueue_us = MicrosecondsSince(start);
      comm_.Sync();
      total_us = MicrosecondsSince(start);
    } else if (auto timer = comm_.MakeTimer(2 * options_.iters)) {
      // Device events around each iteration, the iterations back to back as in the plain
      // loop; -z 3's barrier falls between the marks, so it is not timed.
      const auto start = Clock::now();
      for (int i = 0; i < options_.iters; ++i) {
        if (options_.blocking == 3) comm_.Barrier();
        timer->Mark();
        RunIteration(calls);
        timer->Mark();
      }
      enqueue_us = MicrosecondsSince(start);
      comm_.Sync();
      samples_us = timer->IntervalsUs();
      total_us = std::accumulate(samples_us.begin(), samples_us.end(), 0.0);
    } else {
      samples_us.reserve(static_cast<size_t>(options_.iters));
      for (int i = 0; i < options_.iters; ++i) {
        // -z 3: the barrier lines ranks up per iteration but is not timed.
        if (options_.blocking == 3) comm_.Barrier();
        const auto start = Clock::now();
        RunIteration(calls);
        const double enqueued = MicrosecondsSince(start);
        comm_.Sync();
        const double us = options_.report_cputime ? enqueued : MicrosecondsSince(start);
        samples_us.push_back(us);
        total_us += us;
        enqueue_us += enqueued;
      }
    }
    ops = std::max<int64_t>(1, ops);
    const double my_time_us =
        (options_.report_cputime ? enqueue_us : total_us) / static_cast<double>(ops);

    PlacementResult placement;
    placement.ranks = GatherTimes(my_time_us);
    placement.time_us = Combine(placement.ranks);
    const double seconds = placement.time_us * 1e-6;
    const size_t alg_bytes = t.spec->alg_bytes(counts.param_count, SizeOf(t.type), nranks_);
    placement.algbw = seconds > 0 ? static_cast<double>(alg_bytes) / 1e9 / seconds : 0;
    placement.busbw = placement.algbw * t.spec->bus_factor(nranks_);
    // -z 3 times each iteration too, but only -I reports the series (src/common.cu:722).
    if (options_.per_iter_timing && !samples_us.empty()) {
      placement.iterations = IterationReport(std::move(samples_us));
    }
    if (options_.check > 0) {
      phase_ = "size " + size + " " + where + " (validation)";
      placement.wrong = Validate(t, counts, calls);
    }
    return placement;
  }

  static double MicrosecondsSince(Clock::time_point start) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }

  // -m operations, grouped as nccl-tests groups them; -z waits (and 1 barriers) after each.
  void RunIteration(const std::vector<CollectiveCall>& calls) {
    if (options_.agg_iters > 1) comm_.GroupStart();
    for (int a = 0; a < options_.agg_iters; ++a) {
      Enqueue(calls);
      if (options_.blocking != 0) comm_.Sync();
      if (options_.blocking == 1) comm_.Barrier();
    }
    if (options_.agg_iters > 1) comm_.GroupEnd();
  }

  // `count` elements of `type` per device in, the whole result of device 0 out: how times
  // and wrong counts cross the ranks, through the same memory and calls as the benchmark.
  void Exchange(Collective collective, DataType type, const std::vector<std::byte>& mine, void* out,
                size_t out_bytes, size_t count = 1) {
    const size_t e = SizeOf(type) * count;
    std::vector<CollectiveCall> calls;
    for (int d = 0; d < devices_; ++d) {
      CollectiveCall call;
      call.collective = collective;
      call.send = buffers_.control_send->data(d);
      call.recv = buffers_.control_recv->data(d);
      call.count = count;
      call.type = type;
      call.op = ReduceOp::kSum;
      call.device = d;
      comm_.CopyToDevice(d, buffers_.control_send->data(d),
                         mine.data() + static_cast<size_t>(d) * e, e);
      calls.push_back(call);
    }
    Enqueue(calls);
    comm_.Sync();
    comm_.CopyToHost(0, out, buffers_.control_recv->data(0), out_bytes);
  }

  // Every rank's time reaches every rank, so -a and the straggler facts agree everywhere.
  RankTimes GatherTimes(double my_time_us) {
    RankTimes times;
    times.per_rank_us.assign(static_cast<size_t>(nranks_), 0.0);
    std::vector<std::byte> mine(sizeof(double) * static_cast<size_t>(devices_));
    for (int d = 0; d < devices_; ++d) {
      std::memcpy(mine.data() + sizeof(double) * static_cast<size_t>(d), &my_time_us,
                  sizeof(double));
    }
    Exchange(Collective::kAllGather, DataType::kDouble, mine, times.per_rank_us.data(),
             sizeof(double) * times.per_rank_us.size());
    const auto& v = times.per_rank_us;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    times.min_us = *lo;
    times.max_us = *hi;
    times.min_rank = static_cast<int>(lo - v.begin());
    times.max_rank = static_cast<int>(hi - v.begin());
    times.avg_us = Mean(v);
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

  // nccl-tests' -I report (src/common.cu:862-886 at 2.19.6): each sample is one iteration of
  // -m ops, reported per op; every rank's series reaches every rank; a process's row is the
  // slowest of its ranks (threads and devices), and each iteration's time the slowest row's.
  IterationStats IterationReport(std::vector<double> samples) {
    const double per = static_cast<double>(std::max(1, options_.agg_iters));
    for (double& s : samples) s /= per;
    const size_t n = samples.size();
    std::vector<std::byte> mine(sizeof(double) * n * static_cast<size_t>(devices_));
    for (int d = 0; d < devices_; ++d) {
      std::memcpy(mine.data() + sizeof(double) * n * static_cast<size_t>(d), samples.data(),
                  sizeof(double) * n);
    }
    std::vector<double> all(n * static_cast<size_t>(nranks_));
    Exchange(Collective::kAllGather, DataType::kDouble, mine, all.data(),
             sizeof(double) * all.size(), n);
    const int per_process = std::max(1, options_.nthreads * devices_);
    const size_t processes = static_cast<size_t>(std::max(1, nranks_ / per_process));
    std::vector<std::vector<double>> rows(processes, std::vector<double>(n, 0.0));
    std::vector<double> series(n, 0.0);  // the max over the rows is the max over the ranks
    for (size_t r = 0; r < static_cast<size_t>(nranks_); ++r) {
      std::vector<double>& row =
          rows[std::min(processes - 1, r / static_cast<size_t>(per_process))];
      for (size_t i = 0; i < n; ++i) {
        row[i] = std::max(row[i], all[r * n + i]);
        series[i] = std::max(series[i], all[r * n + i]);
      }
    }
    const size_t skip = std::min(n - 1, static_cast<size_t>(std::max(0, options_.per_iter_skip)));
    IterationStats stats = NcclTestsIterStats(series, skip);
    stats.times_us = std::move(series);
    if (processes > 1) stats.per_process_max_times_us = std::move(rows);
    return stats;
  }

  // Runs -c validation iterations with fresh data and returns wrong elements over all ranks.
  // Inputs go to the devices and results come back through host copies.
  int64_t Validate(const TestCase& t, const CollectiveCounts& counts,
                   const std::vector<CollectiveCall>& calls) {
    const size_t e = SizeOf(t.type);
    std::vector<int64_t> wrong(static_cast<size_t>(devices_), 0);
    for (int iter = 0; iter < options_.check; ++iter) {
      auto validation_case = [&](int d) {
        return ValidationCase{t.spec,
                              counts,
                              t.type,
                              t.op,
                              rank_ + d,
                              nranks_,
                              calls[static_cast<size_t>(d)].root,
                              static_cast<uint32_t>(iter + 1)};
      };
      for (int d = 0; d < devices_; ++d) {
        FillInput(validation_case(d), buffers_.host.data());
        comm_.CopyToDevice(d, const_cast<void*>(calls[static_cast<size_t>(d)].send),
                           buffers_.host.data(), counts.send_count * e);
      }
      Enqueue(calls);
      comm_.Sync();
      for (int d = 0; d < devices_; ++d) {
        const ValidationCase v = validation_case(d);
        comm_.CopyToHost(d, buffers_.host.data(), calls[static_cast<size_t>(d)].recv,
                         counts.recv_count * e);
        if (v.rank == options_.inject_fault_rank && RankHasResult(v) && counts.recv_count > 0) {
          // Fault injection: flip every bit of this rank's first result element.
          for (size_t b = 0; b < e; ++b) buffers_.host[b] = ~buffers_.host[b];
        }
        wrong[static_cast<size_t>(d)] += CountWrong(v, buffers_.host.data());
      }
    }
    std::vector<std::byte> mine(sizeof(int64_t) * wrong.size());
    std::memcpy(mine.data(), wrong.data(), mine.size());
    int64_t total = 0;
    Exchange(Collective::kAllReduce, DataType::kInt64, mine, &total, sizeof total);
    return total;
  }

  const RunOptions& options_;
  const SweepPlan& plan_;
  Communicator& comm_;
  RunResult& result_;
  Reporter* sink_;
  const int rank_;    // of this thread's first device
  const int nranks_;  // in the whole communicator
  const int devices_;
  const std::vector<size_t> warm_up_sizes_;
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
