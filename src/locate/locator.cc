// The procedure: per-node round, pair rounds, classifier, remeasurement of what is
// undecided, collective over every rank. It only plans and decides; the measurer measures.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/locate.h"
#include "fabricscope/strings.h"
#include "locate/classifier.h"
#include "locate/topology.h"

namespace fabricscope {

// Indexed by SuspectKind's value, in its declaration order.
constexpr std::array<std::string_view, 9> kSuspectKindNames = {
    "node", "nic", "link", "intra-node", "uplink", "spine-link", "some-uplinks", "rail", "spine"};

std::string_view NameOf(SuspectKind kind) { return NameOf(kind, kSuspectKindNames); }

// Indexed by PairCall's value, in its declaration order.
constexpr std::array<std::string_view, 3> kPairCallNames = {"fine", "slow", "undecided"};

std::string_view NameOf(PairCall call) { return NameOf(call, kPairCallNames); }

// Indexed by LocateStatus's value, in its declaration order.
constexpr std::array<std::string_view, 4> kLocateStatusNames = {"clear", "found", "inconclusive",
                                                                "ambiguous"};

std::string_view NameOf(LocateStatus status) { return NameOf(status, kLocateStatusNames); }

namespace {

void CheckOptions(const LocateOptions& o) {
  if (!(o.threshold > 0 && o.threshold < 1)) {
    throw UsageError("--threshold " + std::to_string(o.threshold) +
                     " must be between 0 and 1 (exclusive): a pair is slow below that fraction "
                     "of the pairs it is compared with, e.g. 0.7");
  }
  if (!(o.confidence >= 0.5 && o.confidence < 1)) {
    throw UsageError(fmt::format(
        "--confidence {} must be at least 0.5 and below 1, e.g. 0.999 (a wrong name in at "
        "most one run of a thousand)",
        o.confidence));
  }
  if (!(o.budget_s >= 0)) {
    throw UsageError(fmt::format("--budget {} must be 0 or more seconds", o.budget_s));
  }
  if (o.max_sweeps < 1) {
    throw UsageError(fmt::format("--max-sweeps {} must be at least 1", o.max_sweeps));
  }
  if (!(o.expect_gbs >= 0)) {
    throw UsageError(
        fmt::format("--expect {} must be 0 (none) or a bandwidth in GB/s", o.expect_gbs));
  }
  if (!(o.min_robust_z >= 0)) {
    throw UsageError("the robust z limit must be 0 or more (got " + std::to_string(o.min_robust_z) +
                     ")");
  }
}

void Append(std::vector<PairSample>& to, std::vector<PairSample> more) {
  to.insert(to.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

// Measures `rounds` and counts them in `counter` under `phase`.
void MeasureRounds(const std::vector<Round>& rounds, std::string_view phase, int& counter,
                   const LocateOptions& options, PairMeasurer& measurer, LocateReport& report) {
  for (size_t i = 0; i < rounds.size(); ++i) {
    if (options.progress) {
      options.progress(phase, static_cast<int>(i + 1), static_cast<int>(rounds.size()));
    }
    std::vector<PairSample> measured = measurer.MeasureRound(rounds[i]);
    const int index = report.rounds.per_node + report.rounds.pairs + report.rounds.again;
    for (PairSample& s : measured) s.round = index;
    Append(report.samples, std::move(measured));
    ++counter;
  }
}

// Every rail judged on everything measured so far.
std::vector<locate::RailVerdict> JudgeAll(const LocateReport& report, size_t pairs) {
  const int nodes = static_cast<int>(report.layout.names.size());
  const LocateOptions& o = report.options;
  // The confidence is split over every pair of every rail at every look.
  const double tests = static_cast<double>(std::max<size_t>(1, pairs)) * report.layout.rails *
                       static_cast<double>(o.max_sweeps);
  std::vector<locate::RailVerdict> rails;
  rails.reserve(static_cast<size_t>(std::max(0, report.layout.rails)));
  for (int r = 0; r < report.layout.rails; ++r) {
    rails.push_back(locate::JudgeRail(report.samples, r, nodes, o, tests));
  }
  return rails;
}

bool AllDecided(const std::vector<locate::RailVerdict>& rails) {
  return std::all_of(rails.begin(), rails.end(),
                     [](const locate::RailVerdict& v) { return v.Decided(); });
}

// The pair rounds, then measurements again of what is undecided, until everything is
// decided or the budget or the sweeps run out.
std::vector<locate::RailVerdict> MeasurePairs(const std::vector<Round>& schedule,
                                              PairMeasurer& measurer, LocateReport& report) {
  const LocateOptions& o = report.options;
  const int nodes = static_cast<int>(report.layout.names.size());
  size_t pairs = 0;
  for (const Round& round : schedule) pairs += round.pairs.size();
  MeasureRounds(schedule, "pairs", report.rounds.pairs, o, measurer, report);
  report.sweeps = 1;
  // The budget is for measuring again: the first pass always runs whole.
  const double start = measurer.Elapsed();
  for (;;) {
    std::vector<locate::RailVerdict> rails = JudgeAll(report, pairs);
    bool decided = AllDecided(rails);
    if (nodes == 2) {
      const bool need_noise =
          (o.expect_gbs > 0 || report.layout.rails > 1) && !rails.empty() && rails[0].noise.df < 4;
      decided = locate::JudgeTwoNodes(report.layout, rails, report.node_samples, o).decided &&
                !need_noise;
    }
    if (decided || report.sweeps >= o.max_sweeps || measurer.Elapsed() - start >= o.budget_s) {
      return rails;
    }
    const std::vector<NodePair> again = locate::PairsToRemeasure(rails, nodes);
    if (again.empty()) return rails;
    MeasureRounds(PackRounds(again), "again", report.rounds.again, o, measurer, report);
    ++report.sweeps;
  }
}

// What is still undecided, in one sentence, and the command that would decide it.
void ExplainInconclusive(const std::vector<locate::RailVerdict>& rails, LocateReport& report) {
  size_t nodes = 0;
  size_t pairs = 0;
  double sigma = 0;
  for (const locate::RailVerdict& v : rails) {
    nodes += v.undecided_nodes.size();
    pairs += v.undecided_pairs.size();
    sigma = std::max(sigma, v.noise.sigma);
  }
  const LocateOptions& o = report.options;
  const bool out_of_time = report.sweeps < o.max_sweeps;
  report.unknown = fmt::format(
      "{} node{} and {} pair{} undecided after {} sweep{} ({}): the noise is {:.2f} (sd of log "
      "bandwidth between repeats of one pair, {:.0f}% between two measurements), too much to "
      "decide at {:.1f}% confidence whether they are below {:.2f}x",
      nodes, nodes == 1 ? "" : "s", pairs, pairs == 1 ? "" : "s", report.sweeps,
      report.sweeps == 1 ? "" : "s",
      out_of_time ? fmt::format("the --budget of {:g} s for measuring again spent", o.budget_s)
                  : fmt::format("--max-sweeps {}", o.max_sweeps),
      sigma, 100.0 * (std::exp(sigma * std::sqrt(2.0)) - 1.0), 100.0 * o.confidence, o.threshold);
  report.next_step = fmt::format(
      "measure more: rerun with --budget {:g} --max-sweeps {} (about four times the "
      "measurements halves the noise of each decision), or make each measurement steadier "
      "with -n/--iters four times higher or a larger -b/--size",
      std::max(4.0 * o.budget_s, 60.0), 4 * o.max_sweeps);
}

void DecidePairs(const std::vector<locate::RailVerdict>& rails, LocateReport& report) {
  report.judgements = locate::Judgements(rails);
  for (const locate::RailVerdict& v : rails) {
    RailBaseline b;
    b.rail = v.levels.rail;
    b.sendrecv_typical = v.sendrecv_typical;
    b.all_reduce_typical = v.all_reduce_typical;
    b.sigma = v.noise.sigma;
    b.noise_df = v.noise.df;
    report.baselines.push_back(b);
  }
  if (report.layout.names.size() == 2) {
    const locate::TwoNodeVerdict two =
        locate::JudgeTwoNodes(report.layout, rails, report.node_samples, report.options);
    report.status = two.status;
    report.unknown = two.unknown;
    report.next_step = two.next_step;
    return;
  }
  locate::Decision decision = locate::Decide(report.layout, rails);
  report.suspects = std::move(decision.named);
  report.undecided = std::move(decision.undecided);
  if (!report.suspects.empty()) {
    report.status = LocateStatus::kFound;
  } else if (!AllDecided(rails)) {
    report.status = LocateStatus::kInconclusive;
  }
  if (!AllDecided(rails)) ExplainInconclusive(rails, report);
  locate::Blame(report.options.topology, report);
}

// The per-node rounds (three, then more while a node is undecided, within the passes and
// the budget) and their verdict, added to the pairs'.
locate::IntraVerdict MeasureIntraNode(PairMeasurer& measurer, LocateReport& report) {
  constexpr size_t kFirstRounds = 3;  // repeats from the start: the noise needs them
  const LocateOptions& options = report.options;
  const double start = measurer.Elapsed();
  std::vector<std::vector<NodeSample>> rounds;
  locate::IntraVerdict verdict;
  for (;;) {
    if (options.progress) {
      options.progress("per-node", static_cast<int>(rounds.size() + 1),
                       static_cast<int>(std::max(rounds.size() + 1, kFirstRounds)));
    }
    rounds.push_back(measurer.MeasureNodes());
    for (NodeSample& s : rounds.back()) s.round = report.rounds.per_node;
    ++report.rounds.per_node;
    if (rounds.size() < kFirstRounds) continue;
    verdict = locate::JudgeIntraNode(report.layout, rounds, options);
    if (verdict.decided || static_cast<int>(rounds.size()) >= options.max_sweeps ||
        measurer.Elapsed() - start >= options.budget_s) {
      break;
    }
  }
  report.node_samples = rounds.front();
  for (size_t r = 1; r < rounds.size(); ++r) {
    report.node_retests.insert(report.node_retests.end(), rounds[r].begin(), rounds[r].end());
  }
  return verdict;
}

// The per-node verdict joins the pairs'.
void AddIntraNode(locate::IntraVerdict verdict, LocateReport& report) {
  for (Suspect& s : verdict.decision.named) report.suspects.push_back(std::move(s));
  for (Suspect& s : verdict.decision.undecided) report.undecided.push_back(std::move(s));
  if (!verdict.decision.named.empty() && report.status != LocateStatus::kAmbiguous) {
    report.status = LocateStatus::kFound;
  } else if (!verdict.decided && report.status == LocateStatus::kClear) {
    report.status = LocateStatus::kInconclusive;
    report.unknown = "a node's own ranks are below the threshold but not significantly";
    report.next_step = "measure more: raise --max-sweeps or --budget, or -n/--iters";
  }
}

void FindStragglersOf(PairMeasurer& measurer, LocateReport& report) {
  if (report.options.progress) report.options.progress("world", 1, 1);
  report.world_times = measurer.MeasureWorld();
  ++report.rounds.world;
  if (!report.world_times) return;
  std::vector<int> node_of_rank(report.world_times->per_rank_us.size(), -1);
  for (size_t n = 0; n < report.layout.ranks.size(); ++n) {
    for (int r : report.layout.ranks[n]) {
      if (r >= 0 && static_cast<size_t>(r) < node_of_rank.size()) {
        node_of_rank[static_cast<size_t>(r)] = static_cast<int>(n);
      }
    }
  }
  report.stragglers = FindStragglers(*report.world_times, node_of_rank, report.options);
}

}  // namespace

LocateReport Locate(const LocateOptions& options, const ClusterLayout& layout,
                    PairMeasurer& measurer) {
  CheckOptions(options);
  const int nodes = static_cast<int>(layout.names.size());
  if (nodes < 2) {
    const std::string found = Joined(layout.names);
    throw UsageError(
        "locate compares nodes with each other and needs at least 2; the job has " +
        std::to_string(nodes) + (found.empty() ? "" : " (" + found + ")") +
        ". Start one process per host on 2 or more hosts (4 or more to tell a slow node from "
        "a slow link), or treat processes (--group-by process) or ranks (--group-by rank) as "
        "nodes");
  }
  LocateReport report;
  report.options = options;
  report.layout = layout;
  report.notes = layout.notes;

  const bool per_node =
      options.per_node && std::any_of(layout.ranks.begin(), layout.ranks.end(),
                                      [](const auto& ranks) { return ranks.size() >= 2; });
  locate::IntraVerdict inside;
  if (per_node) inside = MeasureIntraNode(measurer, report);
  const std::vector<Round> schedule = options.mode == LocateMode::kFull
                                          ? RoundRobinSchedule(nodes)
                                          : QuickSchedule(nodes, options.coverage, options.seed);
  DecidePairs(MeasurePairs(schedule, measurer, report), report);
  AddIntraNode(std::move(inside), report);
  if (options.stragglers) FindStragglersOf(measurer, report);
  report.findings = LocateFindings(report);
  return report;
}

}  // namespace fabricscope
