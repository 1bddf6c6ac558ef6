#include "check/evidence.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

namespace fabricscope::check {
namespace {

void AddOnce(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

// A run's rows of one collective as sweeps: the k-th row of a size belongs to the k-th
// sweep, so that -N cycles inside one run count as repeats.
std::vector<Sweep> SweepsOf(const RunResult& run, const std::string& collective) {
  std::vector<Sweep> sweeps;
  std::map<size_t, size_t> seen;
  for (const ResultRow& row : run.rows) {
    if (row.collective != collective) continue;
    const size_t cycle = seen[row.size]++;
    if (cycle >= sweeps.size()) {
      sweeps.resize(cycle + 1);
      sweeps[cycle].source = run.source;
    }
    Sweep& sweep = sweeps[cycle];
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (!half->has_value()) continue;
      const PlacementResult& p = **half;
      auto [busbw, fresh] = sweep.busbw.emplace(row.size, p.busbw);
      if (!fresh) busbw->second = std::max(busbw->second, p.busbw);
      if (p.time_us > 0) {
        auto [time, new_time] = sweep.time_us.emplace(row.size, p.time_us);
        if (!new_time) time->second = std::min(time->second, p.time_us);
      }
    }
  }
  return sweeps;
}

bool OnHostMemory(const RunResult& run) {
  if (run.backend == "gloo" || run.backend == "mpi") return true;
  return std::any_of(run.ranks.begin(), run.ranks.end(),
                     [](const RankInfo& r) { return r.device_name.starts_with("host memory"); });
}

// NCCL's ring follows the ranks: the hosts in the order their first rank appears.
std::vector<std::string> HostsInRankOrder(const RunResult& run) {
  std::vector<const RankInfo*> ranks;
  for (const RankInfo& r : run.ranks) ranks.push_back(&r);
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankInfo* a, const RankInfo* b) { return a->rank < b->rank; });
  std::vector<std::string> hosts;
  for (const RankInfo* r : ranks) {
    if (!r->hostname.empty()) AddOnce(hosts, r->hostname);
  }
  return hosts;
}

// The test's node count and what it was taken from: --nodes, the host names, else ranks /
// the platform's GPUs per node; 0 when none says.
std::pair<int, std::string> NodesOf(const TestAnalysis& analysis, const ScaleHints& hints) {
  if (hints.nodes) return {*hints.nodes, "--nodes"};
  if (analysis.nodes > 0) {
    return {analysis.nodes, analysis.nodes_from.empty() ? "host names" : analysis.nodes_from};
  }
  if (analysis.ranks > 0 && hints.gpus_per_node > 0) {
    return {(analysis.ranks + hints.gpus_per_node - 1) / hints.gpus_per_node,
            "ranks / GPUs per node"};
  }
  return {0, ""};
}

}  // namespace

std::optional<std::string> TestEvidence::Env(const std::string& name) const {
  for (const std::string& entry : env) {
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

namespace {

// The test of `analysis` at `nodes` among `tests`, added from `run` when it is not there yet.
TestEvidence& FindOrAddTest(std::vector<TestEvidence>& tests, const RunResult& run,
                            const TestAnalysis& analysis, int nodes,
                            const std::string& nodes_from) {
  auto same = [&](const TestEvidence& t) {
    return std::tie(t.collective, t.ranks, t.nodes) ==
           std::tie(analysis.collective, analysis.ranks, nodes);
  };
  const auto found = std::find_if(tests.begin(), tests.end(), same);
  if (found != tests.end()) return *found;
  TestEvidence fresh;
  fresh.collective = analysis.collective;
  fresh.ranks = analysis.ranks;
  fresh.nodes = nodes;
  fresh.nodes_from = nodes_from;
  fresh.backend = run.backend;
  if (!run.ranks.empty()) fresh.device_name = run.ranks.front().device_name;
  fresh.hosts = HostsInRankOrder(run);
  tests.push_back(std::move(fresh));
  return tests.back();
}

// Adds what one run says about the test to its evidence.
void AddRun(const RunResult& run, const TestAnalysis& analysis, TestEvidence& test) {
  ++test.runs;
  if (!run.source.empty()) AddOnce(test.sources, run.source);
  test.host_memory = test.host_memory || OnHostMemory(run);
  for (const std::string& t : run.transports) AddOnce(test.transports, t);
  for (const std::string& e : run.env) AddOnce(test.env, e);
  for (const std::string& e : run.errors) AddOnce(test.run_errors, e);
  if (analysis.wrong) {
    // Saturating, as analyze's count: a corrupt log can claim any number.
    const int64_t have = test.wrong.value_or(0);
    const int64_t add = std::max<int64_t>(*analysis.wrong, 0);
    test.wrong = add > std::numeric_limits<int64_t>::max() - have
                     ? std::numeric_limits<int64_t>::max()
                     : have + add;
  }
  test.out_of_bounds += analysis.out_of_bounds;
  if (analysis.peak_busbw > test.peak_busbw) {
    test.peak_busbw = analysis.peak_busbw;
    test.peak_size = analysis.peak_size;
  }
  for (Sweep& sweep : SweepsOf(run, analysis.collective)) {
    if (!sweep.busbw.empty()) {
      test.largest_size = std::max(test.largest_size, sweep.busbw.rbegin()->first);
    }
    test.sweeps.push_back(std::move(sweep));
  }
}

}  // namespace

std::vector<TestEvidence> GatherTests(const std::vector<RunResult>& runs, const ScaleHints& hints) {
  std::vector<TestEvidence> tests;
  for (const RunResult& run : runs) {
    for (const TestAnalysis& analysis : Analyze(run)) {
      const auto [nodes, nodes_from] = NodesOf(analysis, hints);
      AddRun(run, analysis, FindOrAddTest(tests, run, analysis, nodes, nodes_from));
    }
  }
  return tests;
}

}  // namespace fabricscope::check
