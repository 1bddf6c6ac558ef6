// The real measurer: each round splits the job into one communicator per pair and rail,
// runs sendrecv and all_reduce on it through the backend, and shares the numbers with
// every rank, so that every rank runs the same planner and takes the same decisions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fabricscope/engine.h"
#include "fabricscope/error.h"
#include "fabricscope/launch.h"
#include "fabricscope/locate.h"

namespace fabricscope {
namespace {

constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// What one rank contributes to a round's exchange: the numbers of the group it leads.
struct Record {
  double sendrecv = kNotMeasured;
  double all_reduce = kNotMeasured;
  double wrong = 0;
  double elapsed = 0;  // rank 0's seconds since locate began: one clock for every rank
};

// A rank's facts as they travel in the all-gather: fixed size, hostname last.
struct WireRank {
  int32_t rank = 0;
  int32_t pid = 0;
  int32_t device = 0;
  char hostname[244] = {};
};
static_assert(sizeof(WireRank) == 256);

class CollectiveMeasurer final : public PairMeasurer {
 public:
  CollectiveMeasurer(RankContext& context, const ClusterLayout& layout, const RunOptions& measure)
      : context_(context), layout_(layout), measure_(measure), rank_(context.self.rank) {
    for (size_t n = 0; n < layout_.ranks.size(); ++n) {
      const auto& ranks = layout_.ranks[n];
      const auto it = std::find(ranks.begin(), ranks.end(), rank_);
      if (it != ranks.end()) {
        node_ = static_cast<int>(n);
        rail_ = static_cast<int>(it - ranks.begin());
      }
    }
    RunOptions both = measure_;
    both.collectives = {Collective::kSendRecv, Collective::kAllReduce};
    plan_ = PlanSweep(both, 1);
  }

  std::vector<PairSample> MeasureRound(const Round& round) override {
    const int rails = layout_.rails;
    // This rank's group: its node's pair in this round, on its rail, if it has one.
    int color = -1;
    std::vector<int> members;
    if (rail_ >= 0 && rail_ < rails) {
      for (size_t i = 0; i < round.pairs.size(); ++i) {
        const NodePair& p = round.pairs[i];
        if (p.a != node_ && p.b != node_) continue;
        color = static_cast<int>(i) * rails + rail_;
        members = {RankOf(p.a, rail_), RankOf(p.b, rail_)};
      }
    }
    const int groups = static_cast<int>(round.pairs.size()) * rails;
    const Record mine =
        MeasureGroup(color, members, groups, {Collective::kSendRecv, Collective::kAllReduce});
    const std::vector<Record> all = Share(mine);
    std::vector<PairSample> out;
    out.reserve(round.pairs.size() * static_cast<size_t>(rails));
    for (const NodePair& p : round.pairs) {
      for (int r = 0; r < rails; ++r) {
        const Record& lead = all[static_cast<size_t>(std::min(RankOf(p.a, r), RankOf(p.b, r)))];
        out.push_back({p, r, lead.sendrecv, lead.all_reduce, static_cast<int64_t>(lead.wrong)});
      }
    }
    return out;
  }

  std::vector<NodeSample> MeasureNodes() override {
    const auto& mine = layout_.ranks[static_cast<size_t>(node_)];
    std::vector<int> members;
    if (mine.size() >= 2) members = mine;
    const int color = members.empty() ? -1 : node_;
    const int groups = static_cast<int>(layout_.ranks.size());
    const std::vector<Record> all =
        Share(MeasureGroup(color, members, groups, {Collective::kAllReduce}));
    std::vector<NodeSample> out;
    for (size_t n = 0; n < layout_.ranks.size(); ++n) {
      if (layout_.ranks[n].size() < 2) continue;
      const Record& lead = all[static_cast<size_t>(layout_.ranks[n].front())];
      out.push_back({static_cast<int>(n), lead.all_reduce, static_cast<int64_t>(lead.wrong)});
    }
    return out;
  }

  double Elapsed() const override { return elapsed_; }

  std::optional<RankTimes> MeasureWorld() override {
    RunOptions options = measure_;
    options.collectives = {Collective::kAllReduce};
    RunResult rows;
    RunBenchmark(options, plan_, *context_.world, rows, nullptr);
    if (rank_ != 0 || rows.rows.empty() || !rows.rows.front().out_of_place) return std::nullopt;
    return rows.rows.front().out_of_place->ranks;
  }

 private:
  int RankOf(int node, int rail) const {
    return layout_.ranks[static_cast<size_t>(node)][static_cast<size_t>(rail)];
  }

  // Joins this round's group (`members`, ascending; empty: a group of its own, as backends
  // whose Connect is collective over the whole job need every rank to call it) and, in a
  // group of two or more, runs `collectives` on it. Returns the numbers on the group's
  // first rank.
  Record MeasureGroup(int color, std::vector<int> members, int groups,
                      std::vector<Collective> collectives) {
    ++step_;
    std::sort(members.begin(), members.end());
    ConnectOptions group = context_.connect;
    if (members.empty()) {
      group.color = groups + rank_;  // past every measured group's colour
      group.rank = 0;
      group.size = 1;
    } else {
      group.color = color;
      group.rank =
          static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
      group.size = static_cast<int>(members.size());
    }
    group.prefix = "fs/locate/" + std::to_string(step_) + "/" + std::to_string(group.color);
    auto comm = context_.join(group);
    Record record;
    if (members.empty()) return record;
    RunOptions options = measure_;
    options.collectives = std::move(collectives);
    RunResult rows;
    RunBenchmark(options, plan_, *comm, rows, nullptr);
    if (group.rank != 0) return record;
    for (const ResultRow& row : rows.rows) {
      double best = 0;
      for (const auto* half : {&row.out_of_place, &row.in_place}) {
        if (!half->has_value()) continue;
        // The better placement: a pair is as fast as it has shown it can be.
        best = std::max(best, (*half)->busbw);
        record.wrong += static_cast<double>((*half)->wrong.value_or(0));
      }
      (row.collective == "sendrecv" ? record.sendrecv : record.all_reduce) = best;
    }
    return record;
  }

  // Every rank's record reaches every rank (an all-gather over the job).
  std::vector<Record> Share(Record mine) {
    mine.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::vector<Record> all(static_cast<size_t>(context_.nranks));
    CollectiveCall call;
    call.collective = Collective::kAllGather;
    call.send = &mine;
    call.recv = all.data();
    call.count = sizeof(Record) / sizeof(double);
    call.type = DataType::kDouble;
    context_.world->Run(call);
    elapsed_ = all.front().elapsed;
    return all;
  }

  RankContext& context_;
  const ClusterLayout& layout_;
  const RunOptions& measure_;
  const int rank_;
  int node_ = 0;
  int rail_ = -1;
  int step_ = 0;
  SweepPlan plan_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double elapsed_ = 0;
};

// Every rank's host, pid and device, on every rank.
std::vector<RankInfo> GatherRanks(RankContext& context) {
  WireRank mine;
  mine.rank = context.self.rank;
  mine.pid = context.self.pid;
  mine.device = context.self.device;
  std::strncpy(mine.hostname, context.self.hostname.c_str(), sizeof mine.hostname - 1);
  std::vector<WireRank> all(static_cast<size_t>(context.nranks));
  CollectiveCall call;
  call.collective = Collective::kAllGather;
  call.send = &mine;
  call.recv = all.data();
  call.count = sizeof(WireRank);
  call.type = DataType::kUint8;
  context.world->Run(call);
  std::vector<RankInfo> ranks;
  for (const WireRank& w : all) {
    RankInfo r;
    r.rank = w.rank;
    r.pid = w.pid;
    r.device = w.device;
    r.hostname = std::string(w.hostname, strnlen(w.hostname, sizeof w.hostname));
    ranks.push_back(std::move(r));
  }
  return ranks;
}

}  // namespace

LocateReport RunLocateJob(const LocateJobOptions& job, Backend& backend, const LaunchInfo& launch,
                          const EnvLookup& env) {
  RunOptions measure = job.measure;
  measure.collectives = {Collective::kSendRecv, Collective::kAllReduce};
  measure.types = {DataType::kFloat};
  measure.ops = {ReduceOp::kSum};
  measure.root = 0;
  measure.run_cycles = 1;
  LocateReport report;
  const RunResult header =
      RunJob(measure, backend, nullptr, launch, env, [&](RankContext& context) {
        if (context.world->size() != context.nranks) {
          throw UsageError("locate splits the job into groups itself: unset NCCL_TESTS_SPLIT " +
                           std::string("and NCCL_TESTS_SPLIT_MASK"));
        }
        std::vector<RankInfo> ranks = GatherRanks(context);
        const ClusterLayout layout = GroupRanks(ranks, job.grouping);
        CollectiveMeasurer measurer(context, layout, measure);
        LocateOptions options = job.locate;
        if (context.self.rank != 0) options.progress = nullptr;
        LocateReport mine = Locate(options, layout, measurer);
        if (context.self.rank == 0) {
          report = std::move(mine);
          report.ranks = std::move(ranks);
        }
      });
  if (report.ranks.empty()) return report;  // not global rank 0's process
  report.version = header.version;
  report.backend = header.backend;
  report.backend_version = header.backend_version;
  report.start_time = header.start_time;
  report.end_time = header.end_time;
  report.args = header.args;
  report.bytes = measure.max_bytes;
  report.iters = measure.iters;
  return report;
}

}  // namespace fabricscope
