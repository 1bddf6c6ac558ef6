// Private: the topology blame. Given which leaf switch each host hangs from (and, when
// known, each pair's route), a set of slow pairs is attributed to the element they share:
// a leaf's uplinks, one uplink or spine link, some of a leaf's uplinks, a rail.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fabricscope/locate.h"

namespace fabricscope::locate {

// The job's nodes (indices) behind each leaf switch the topology names, by switch name.
std::vector<std::pair<std::string, std::vector<int>>> Leaves(const Topology& topology,
                                                             const ClusterLayout& layout);

// A leaf (two or more of the job's nodes, not all) whose pairs to every node behind other
// switches are slow (at least 3 in 4 slow, none fine) and whose pairs among themselves are
// not slow: its uplinks are named (kUplink, the leaf), and the links they explain are taken
// off the suspects.
void BlameWholeLeaves(const Topology& topology, LocateReport& report);

// One switch-to-switch link (an element) and the pairs of one rail whose routes cross it.
struct ElementPairs {
  int total = 0;
  int slow = 0;
  int fine = 0;
  std::vector<NodePair> links;  // the named slow links among them, sorted
};

// Every element the routes of the rail's judged pairs cross, with those pairs.
std::map<std::string, ElementPairs> CrossedBy(
    const LocateReport& report, int rail, const std::map<NodePair, double>& slow_links,
    const std::function<std::vector<std::string>(const NodePair&)>& route);

// The element that explains the most slow links: crossed by two or more of them, by no fine
// pair, and 3 in 4 of the pairs crossing it slow. None when no element qualifies, or when
// another that qualifies is crossed by every one of its slow links too (ambiguous).
std::optional<std::string> BestElement(const std::map<std::string, ElementPairs>& crossed);

// With the routes known: the slow links blamed on the element they cross (kUplink
// "leaf3-spine1" when it runs from a leaf up, kSpineLink "spine1-leaf3" otherwise), one
// element at a time, and taken off the suspects.
void BlameRoutes(const Topology& topology, LocateReport& report);

// The named slow links that cross one leaf's uplinks (one end behind it).
struct LeafSubset {
  std::vector<NodePair> links;  // sorted
  std::vector<double> ratios;
  int crossing = 0;  // judged pairs with one end behind the leaf
};
// A leaf's subset: three or more slow links with one end behind it, from two or more of its
// nodes to two or more outside, none among its own nodes; none otherwise.
std::optional<LeafSubset> SubsetOf(const LocateReport& report, const std::vector<int>& members);

// Without the routes (or what they did not explain): slow links that are a subset of one
// leaf's crossing pairs are named as some of its uplinks (kSomeUplinks). When the links
// cross two leaves alike, nothing is named and a note says so.
void BlameLeafSubsets(const Topology& topology, LocateReport& report);

// One rail against the others: the difference of the median log bandwidth of its pairs and
// of the other rails' pairs, its standard error, and whether it is significantly below
// log_threshold at `z`.
struct RailTest {
  double diff = 0;
  double se = 0;
  int pairs = 0;
  bool slow = false;
};
// `logs`: per rail, each judged pair's log bandwidth (mean of both collectives' logs).
RailTest TestRail(const std::vector<std::vector<double>>& logs, int rail, double sigma, double z,
                  double log_threshold);

// A rail whose every pair is slow against the other rails (each rail's own typical pair
// hides it from the pair tests): named kRail. Needs two rails and three nodes.
void BlameRails(LocateReport& report);

// The spine end of a named uplink ("leaf3-spine1") or spine link ("spine1-leaf3") whose
// other end is one of `leaves`; empty for any other suspect.
std::string SpineOf(const Suspect& s, const std::map<std::string, std::vector<int>>& leaves);

// A spine with a named link to or from every leaf (two or more leaves): the links are one
// spine switch (kSpine), named instead of them.
void BlameSpines(const Topology& topology, LocateReport& report);

// All of the above in turn: rails, whole leaves, routes, spines, leaf subsets. A no-op but for the
// rails without a topology.
void Blame(const Topology& topology, LocateReport& report);

}  // namespace fabricscope::locate
