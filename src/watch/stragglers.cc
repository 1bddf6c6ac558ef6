#include "watch/stragglers.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "fabricscope/statistics.h"
#include "watch/judge.h"

namespace fabricscope::watch {
namespace {

// The node a rank ran on, as a finding blames it; none when the records did not say.
std::vector<std::string> OneNode(const std::string& node) {
  if (node.empty()) return {};
  return {node};
}

using Key = std::pair<int, std::string>;  // rank, node

struct Lateness {
  std::vector<double> late_us;
  size_t last = 0;
};

// Collectives by (communicator, function, sequence number), each with the records of its
// ranks: NCCL numbers the collectives of a communicator per function (comm->seqNumber[func],
// src/plugin/profiler.cc, ncclProfilerStartTaskEvents), so AllGather #k and ReduceScatter #k
// are different collectives. Sends and receives have no common number: left out.
using GroupKey = std::tuple<std::string, std::string, uint64_t>;
std::map<GroupKey, std::vector<const InspectorRecord*>> Groups(
    const std::vector<const InspectorRecord*>& records) {
  std::map<GroupKey, std::vector<const InspectorRecord*>> groups;
  for (const InspectorRecord* r : records) {
    if (r->start_us && !r->p2p) groups[{r->comm, r->collective, r->seq}].push_back(r);
  }
  return groups;
}

std::map<Key, Lateness> Measure(const std::vector<const InspectorRecord*>& records) {
  std::map<Key, Lateness> ranks;
  for (const auto& [id, group] : Groups(records)) {
    if (group.size() < 2) continue;
    const auto [first, last] = std::minmax_element(
        group.begin(), group.end(), [](const InspectorRecord* a, const InspectorRecord* b) {
          return *a->start_us < *b->start_us;
        });
    for (const InspectorRecord* r : group) {
      ranks[{r->rank, r->hostname}].late_us.push_back(
          static_cast<double>(*r->start_us - *(*first)->start_us));
    }
    ++ranks[{(*last)->rank, (*last)->hostname}].last;
  }
  return ranks;
}

}  // namespace

std::vector<WatchRank> RankLateness(const std::vector<const InspectorRecord*>& records,
                                    const WatchOptions& options, std::vector<Finding>* findings) {
  std::vector<WatchRank> out;
  for (const auto& [key, lateness] : Measure(records)) {
    WatchRank r;
    r.rank = key.first;
    r.node = key.second;
    r.groups = lateness.late_us.size();
    r.last = lateness.last;
    r.median_late_us = Median(lateness.late_us);
    r.straggler =
        r.groups >= options.min_samples &&
        static_cast<double>(r.last) >= options.straggler_share * static_cast<double>(r.groups) &&
        r.median_late_us >= options.straggler_us;
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const WatchRank& a, const WatchRank& b) {
    return a.median_late_us > b.median_late_us;
  });
  for (WatchRank& r : out) {
    if (!r.straggler) continue;
    // The noise: how late the latest of the other ranks is. A rank is named only when it
    // stands out of that by the threshold itself; a loaded host makes every rank's start
    // skew milliseconds wide (2026-11-28, TSan beside busy loops: a healthy rank 1.9 ms late
    // and last in 18 of 34), and naming one of them would send the user to a healthy node.
    // `out` is latest first: the next rank is the first one that is not r.
    const WatchRank* next = &r != &out.front() ? &out.front() : out.size() > 1 ? &out[1] : nullptr;
    const double noise_us = next == nullptr ? 0 : next->median_late_us;
    const std::string where =
        fmt::format("rank {} on node {}", r.rank, r.node.empty() ? "?" : r.node);
    std::map<std::string, double> figures = {{"rank", static_cast<double>(r.rank)},
                                             {"median_late_us", r.median_late_us},
                                             {"next_late_us", noise_us},
                                             {"last", static_cast<double>(r.last)},
                                             {"collectives", static_cast<double>(r.groups)}};
    if (next != nullptr && r.median_late_us - noise_us < options.straggler_us) {
      r.straggler = false;
      findings->push_back(Inconclusive(
          {.source = "straggler",
           .what = fmt::format(
               "starts its collectives {:.1f} ms after the first rank (median) and is the last "
               "in {} of {}, but rank {} is {:.1f} ms late too: the start skew is noise of that "
               "size",
               r.median_late_us / 1e3, r.last, r.groups, next->rank, noise_us / 1e3),
           .where = where,
           .fix = "watch a longer window, or run `fabricscope locate` on those nodes to decide",
           .figures = std::move(figures),
           .element = "node",
           .nodes = OneNode(r.node)}));
      continue;
    }
    findings->push_back(
        Alert({.source = "straggler",
               .what = fmt::format(
                   "starts its collectives {:.1f} ms after the first rank (median; the next rank "
                   "{:.1f} ms) and is the last in {} of {}; the other ranks wait for it",
                   r.median_late_us / 1e3, noise_us / 1e3, r.last, r.groups),
               .where = where,
               .fix = "look at that rank's compute, data loading and GPU (`fabricscope doctor`, "
                      "`fabricscope locate`)",
               .figures = std::move(figures),
               .element = "node",
               .nodes = OneNode(r.node)}));
  }
  return out;
}

}  // namespace fabricscope::watch
