// The real measurer: each round runs sendrecv and all_reduce on every pair and rail through
// the backend and shares the numbers with every rank, so that every rank runs the same
// planner and takes the same decisions. Where the backend has point-to-point on the job's
// communicator (Gloo's pairs, MPI_Sendrecv, grouped ncclSend/ncclRecv) a pair is two ranks
// of that communicator (PairCommunicator) and a round creates no communicator; otherwise
// each round splits the job into one communicator per pair and rail.
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
#include "locate/pair_communicator.h"

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

// How the measurer reaches its groups, from the backend's capabilities.
struct GroupPaths {
  bool point_to_point = false;      // pairs on the job's communicator (PairCommunicator)
  bool host_memory = true;          // buffers the host can reduce: all_reduce of a pair too
  bool collective_connect = false;  // Connect is collective over the job (MPI_Comm_split)
};

// An all-gather of `bytes` per rank over `comm` through memory the backend allocates
// (device memory on GPU backends): `mine` in, every rank's in rank order out to `all`.
class HostAllGather {
 public:
  HostAllGather(Communicator& comm, size_t bytes)
      : comm_(comm),
        bytes_(bytes),
        send_(comm.Allocate(bytes)),
        recv_(comm.Allocate(bytes * static_cast<size_t>(comm.size()))) {}

  void Run(const void* mine, void* all) {
    comm_.CopyToDevice(0, send_->data(0), mine, bytes_);
    CollectiveCall call;
    call.collective = Collective::kAllGather;
    call.send = send_->data(0);
    call.recv = recv_->data(0);
    call.count = bytes_;
    call.type = DataType::kUint8;
    comm_.Run(call);
    comm_.Sync();
    comm_.CopyToHost(0, all, recv_->data(0), bytes_ * static_cast<size_t>(comm_.size()));
  }

 private:
  Communicator& comm_;
  const size_t bytes_;
  std::unique_ptr<DeviceBuffers> send_;
  std::unique_ptr<DeviceBuffers> recv_;
};

class CollectiveMeasurer final : public PairMeasurer {
 public:
  CollectiveMeasurer(RankContext& context, const ClusterLayout& layout, const RunOptions& measure,
                     GroupPaths paths, bool fastest_iteration)
      : context_(context),
        layout_(layout),
        measure_(measure),
        paths_(paths),
        fastest_iteration_(fastest_iteration),
        rank_(context.self.rank) {
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
    ++step_;  // every rank counts every round: the store keys of a round's groups agree
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
    Record mine;
    if (paths_.point_to_point) {
      // On the job's communicator: a rank without a pair this round sits it out.
      if (!members.empty()) mine = MeasurePair(members[0] == rank_ ? members[1] : members[0]);
    } else {
      mine = MeasureGroup(color, members, groups, {Collective::kSendRecv, Collective::kAllReduce});
    }
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
    ++step_;
    const std::vector<Record> all = Share(MeasureOwnNode());
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

  // This rank's node, its ranks together (all_reduce): a node of two is a pair on the job's
  // communicator where the backend can; a larger one needs a communicator of its own (the
  // reduction runs inside the library), joined at the first per-node round and kept for
  // the others. The numbers on the node's first rank.
  Record MeasureOwnNode() {
    const auto& mine = layout_.ranks[static_cast<size_t>(node_)];
    std::vector<int> members;
    if (mine.size() >= 2) members = mine;
    bool any = false;
    for (size_t n = 0; n < layout_.ranks.size(); ++n) any = any || NodeNeedsCommunicator(n);
    // A backend whose Connect is collective needs every rank of the job to join.
    const bool join =
        paths_.collective_connect ? any : NodeNeedsCommunicator(static_cast<size_t>(node_));
    if (join) {
      if (!node_comm_) {
        const int groups = static_cast<int>(layout_.ranks.size());
        node_comm_ = Join(members.empty() ? -1 : node_, members, groups);
      }
      if (members.empty()) return {};
      return MeasureOn(*node_comm_, {Collective::kAllReduce});
    }
    if (members.size() != 2) return {};
    return MeasurePair(members[0] == rank_ ? members[1] : members[0], {Collective::kAllReduce});
  }

  // Whether node n's ranks need a communicator of their own for the per-node rounds.
  bool NodeNeedsCommunicator(size_t n) const {
    const size_t ranks = layout_.ranks[n].size();
    if (ranks < 2) return false;
    return !(paths_.point_to_point && paths_.host_memory && ranks == 2);
  }

  // This rank and `peer` on the job's communicator, through its point-to-point exchange:
  // nothing is created. all_reduce on device memory would time host copies with the
  // transfer (there is no reduction kernel here), so there the pair runs sendrecv only.
  Record MeasurePair(int peer, std::vector<Collective> collectives = {}) {
    if (collectives.empty()) {
      collectives = {Collective::kSendRecv};
      if (paths_.host_memory) collectives.push_back(Collective::kAllReduce);
    }
    PairCommunicator pair(*context_.world, peer, paths_.host_memory);
    return MeasureOn(pair, std::move(collectives));
  }

  // Joins this round's group (`members`, ascending; empty: a group of its own, as backends
  // whose Connect is collective over the whole job need every rank to call it) and, in a
  // group of two or more, runs `collectives` on it. Returns the numbers on the group's
  // first rank.
  Record MeasureGroup(int color, std::vector<int> members, int groups,
                      std::vector<Collective> collectives) {
    if (members.empty() && !paths_.collective_connect) return {};
    auto comm = Join(color, std::move(members), groups);
    if (comm->size() < 2) return {};
    return MeasureOn(*comm, std::move(collectives));
  }

  // A communicator of `members` (ascending after sorting; empty: one of its own, for a
  // backend whose Connect every rank of the job must call).
  std::unique_ptr<Communicator> Join(int color, std::vector<int> members, int groups) {
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
    return context_.join(group);
  }

  // Runs `collectives` on `comm`; the numbers on its rank 0.
  Record MeasureOn(Communicator& comm, std::vector<Collective> collectives) {
    Record record;
    RunOptions options = measure_;
    options.collectives = std::move(collectives);
    options.per_iter_timing = options.per_iter_timing || fastest_iteration_;
    RunResult rows;
    RunBenchmark(options, plan_, comm, rows, nullptr);
    if (comm.rank() != 0) return record;
    for (const ResultRow& row : rows.rows) {
      double best = 0;
      for (const auto* half : {&row.out_of_place, &row.in_place}) {
        if (!half->has_value()) continue;
        // The better placement (and iteration): a pair is as fast as it has shown it can be.
        best = std::max(best, Busbw(**half));
        record.wrong += static_cast<double>((*half)->wrong.value_or(0));
      }
      (row.collective == "sendrecv" ? record.sendrecv : record.all_reduce) = best;
    }
    return record;
  }

  // The placement's bus bandwidth at its fastest timed iteration (this rank's clock; the
  // mean's bandwidth scaled by mean / fastest), or at the mean of its iterations.
  double Busbw(const PlacementResult& half) const {
    if (!fastest_iteration_ || !half.iterations || !(half.iterations->min_us > 0) ||
        !(half.time_us > 0)) {
      return half.busbw;
    }
    return half.busbw * half.time_us / half.iterations->min_us;
  }

  // Every rank's record reaches every rank (an all-gather over the job).
  std::vector<Record> Share(Record mine) {
    mine.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::vector<Record> all(static_cast<size_t>(context_.nranks));
    share_.Run(&mine, all.data());
    elapsed_ = all.front().elapsed;
    return all;
  }

  RankContext& context_;
  const ClusterLayout& layout_;
  const RunOptions& measure_;
  const GroupPaths paths_;
  const bool fastest_iteration_;
  const int rank_;
  std::unique_ptr<Communicator> node_comm_;  // the per-node rounds' group, once joined
  HostAllGather share_{*context_.world, sizeof(Record)};
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
  HostAllGather(*context.world, sizeof(WireRank)).Run(&mine, all.data());
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

// Rank 0's expectation for two nodes, as it travels in the all-gather.
struct WireExpectation {
  double gbs = 0;  // 0: none
  char source[504] = {};
};
static_assert(sizeof(WireExpectation) == 512);

// Two nodes and no expectation given: rank 0 asks job.expectation_on_rank0, every rank
// takes its answer (an all-gather, every rank in it, even when rank 0 has none). Returns
// the answer's notes on rank 0, for its report.
std::vector<std::string> ShareExpectation(RankContext& context, const LocateJobOptions& job,
                                          LocateOptions& options) {
  WireExpectation mine;
  std::vector<std::string> notes;
  if (context.self.rank == 0) {
    if (const std::optional<PairExpectation> e = job.expectation_on_rank0(); e && e->gbs > 0) {
      mine.gbs = e->gbs;
      std::strncpy(mine.source, e->source.c_str(), sizeof mine.source - 1);
      notes = e->notes;
    }
  }
  std::vector<WireExpectation> all(static_cast<size_t>(context.nranks));
  HostAllGather(*context.world, sizeof(WireExpectation)).Run(&mine, all.data());
  if (!(all.front().gbs > 0)) return {};
  options.expect_gbs = all.front().gbs;
  options.expect_source =
      std::string(all.front().source, strnlen(all.front().source, sizeof all.front().source));
  return notes;
}

}  // namespace

LocateReport RunLocateJob(const LocateJobOptions& job, Backend& backend, const LaunchInfo& launch,
                          const Env& env) {
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
        const BackendCapabilities& caps = backend.capabilities();
        GroupPaths paths;
        paths.point_to_point =
            job.point_to_point && caps.point_to_point && context.world->devices() == 1;
        paths.host_memory = !caps.device_memory;
        paths.collective_connect = caps.mpi_processes;
        CollectiveMeasurer measurer(context, layout, measure, paths, job.fastest_iteration);
        LocateOptions options = job.locate;
        std::vector<std::string> notes;
        if (layout.names.size() == 2 && !(options.expect_gbs > 0) && job.expectation_on_rank0) {
          notes = ShareExpectation(context, job, options);
        }
        if (context.self.rank != 0) options.progress = nullptr;
        LocateReport mine = Locate(options, layout, measurer);
        if (context.self.rank == 0) {
          report = std::move(mine);
          report.ranks = std::move(ranks);
          report.notes.insert(report.notes.end(), notes.begin(), notes.end());
          report.findings = LocateFindings(report);  // the notes added are findings too
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
