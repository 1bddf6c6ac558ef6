// The procedure: per-node round, pair rounds, classifier, confirmation, collective over
// every rank. It only plans and decides; the measurer does the measuring.
#include <algorithm>
#include <string>
#include <vector>

#include "core/joined.h"
#include "fabricscope/error.h"
#include "fabricscope/locate.h"
#include "locate/classifier.h"

namespace fabricscope {

std::string_view NameOf(SuspectKind kind) {
  switch (kind) {
    case SuspectKind::kNode:
      return "node";
    case SuspectKind::kNic:
      return "nic";
    case SuspectKind::kLink:
      return "link";
    case SuspectKind::kIntraNode:
      return "intra-node";
  }
  return "node";
}

namespace {

void CheckOptions(const LocateOptions& o) {
  if (!(o.threshold > 0 && o.threshold < 1)) {
    throw UsageError("--threshold " + std::to_string(o.threshold) +
                     " must be between 0 and 1 (exclusive): a pair is slow below that fraction "
                     "of the median, e.g. 0.7");
  }
  if (!(o.min_robust_z >= 0)) {
    throw UsageError("the robust z limit must be 0 or more (got " + std::to_string(o.min_robust_z) +
                     ")");
  }
  if (o.confirm_peers < 1) {
    throw UsageError("--confirm " + std::to_string(o.confirm_peers) +
                     " must be at least 1: each suspect is retested against that many "
                     "known-good nodes");
  }
}

void Append(std::vector<PairSample>& to, std::vector<PairSample> more) {
  to.insert(to.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

}  // namespace

LocateReport Locate(const LocateOptions& options, const ClusterLayout& layout,
                    PairMeasurer& measurer) {
  CheckOptions(options);
  const int nodes = static_cast<int>(layout.names.size());
  // With three nodes a slow node is in two of the three pairs: its bandwidth is the
  // majority, and nothing tells it from one unusually fast pair.
  if (nodes < 4) {
    const std::string found = Joined(layout.names);
    throw UsageError(
        "locate needs at least 4 nodes to tell a slow node from a slow link; the "
        "job has " +
        std::to_string(nodes) + (found.empty() ? "" : " (" + found + ")") +
        ". Start one process per host on 4 or more hosts, or treat processes "
        "(--group-by process) or ranks (--group-by rank) as nodes");
  }
  LocateReport report;
  report.options = options;
  report.layout = layout;
  report.notes = layout.notes;

  const bool per_node =
      options.per_node && std::any_of(layout.ranks.begin(), layout.ranks.end(),
                                      [](const auto& ranks) { return ranks.size() >= 2; });
  auto tell = [&](std::string_view phase, size_t round, size_t rounds) {
    if (options.progress) {
      options.progress(phase, static_cast<int>(round + 1), static_cast<int>(rounds));
    }
  };
  if (per_node) {
    tell("per-node", 0, 1);
    report.node_samples = measurer.MeasureNodes();
    ++report.rounds.per_node;
  }

  const std::vector<Round> schedule = options.mode == LocateMode::kFull
                                          ? RoundRobinSchedule(nodes)
                                          : QuickSchedule(nodes, options.coverage, options.seed);
  for (const Round& round : schedule) {
    tell("pairs", static_cast<size_t>(report.rounds.pairs), schedule.size());
    Append(report.samples, measurer.MeasureRound(round));
    ++report.rounds.pairs;
  }

  const classify::Candidates candidates = classify::FindCandidates(layout, report.samples, options);
  for (const classify::RailAnalysis& rail : candidates.rails) {
    report.baselines.push_back(rail.baseline.values());
  }
  const classify::ConfirmationPlan plan = classify::PlanConfirmation(candidates, options);
  const std::vector<Round> retests = PackRounds(plan.Pairs());
  for (const Round& round : retests) {
    tell("confirmation", static_cast<size_t>(report.rounds.confirmation), retests.size());
    Append(report.confirmation_samples, measurer.MeasureRound(round));
    ++report.rounds.confirmation;
  }
  classify::Decision decision =
      classify::Decide(layout, candidates, plan, report.confirmation_samples);

  if (per_node) {
    std::vector<NodeSample> retest;
    if (!classify::IntraNodeCandidates(report.node_samples, options).empty()) {
      tell("per-node", 0, 1);
      retest = measurer.MeasureNodes();
      ++report.rounds.per_node;
    }
    classify::Decision inside =
        classify::DecideIntraNode(layout, report.node_samples, retest, options);
    for (Suspect& s : inside.named) decision.named.push_back(std::move(s));
    for (Suspect& s : inside.unconfirmed) decision.unconfirmed.push_back(std::move(s));
    report.node_retests = std::move(retest);
  }
  report.suspects = std::move(decision.named);
  report.unconfirmed = std::move(decision.unconfirmed);

  if (options.stragglers) {
    tell("world", 0, 1);
    report.world_times = measurer.MeasureWorld();
    ++report.rounds.world;
    if (report.world_times) {
      std::vector<int> node_of_rank(report.world_times->per_rank_us.size(), -1);
      for (size_t n = 0; n < layout.ranks.size(); ++n) {
        for (int r : layout.ranks[n]) {
          if (r >= 0 && static_cast<size_t>(r) < node_of_rank.size()) {
            node_of_rank[static_cast<size_t>(r)] = static_cast<int>(n);
          }
        }
      }
      report.stragglers = FindStragglers(*report.world_times, node_of_rank, options);
    }
  }
  return report;
}

}  // namespace fabricscope
