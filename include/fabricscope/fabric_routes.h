// Private: following a route hop by hop through the forwarding tables.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/fabric.h"

namespace fabricscope::fabric {

// One directed hop: out of `from` into `to` ("leaf1[5]" -> "spine1[1]").
struct Hop {
  std::string from;
  std::string to;
  double capacity_gbps = 0;    // data rate of the link (the slower end)
  const Node* next = nullptr;  // the node reached; nullptr: none answers there
};

// The hop out of `node`'s port `port_number`.
Hop HopFrom(const Fabric& fabric, const Node& node, int port_number);

// src's HCA to dst's HCA through every switch's table; empty with `why` set when a table
// lacks the destination, a hop leads nowhere, or the route loops.
std::vector<Hop> TraceRoute(const Fabric& fabric, const Node& src, const Node& dst,
                            std::string* why);

// Traffic from one host to another, weighted by its share of the sender's line rate.
struct Flow {
  const Node* src = nullptr;
  const Node* dst = nullptr;
  double weight = 1;
};

// The flows of a ring (host i to i + 1, weight 1) or of an all-to-all (every pair, weight
// 1 / (n - 1)) over `hosts`.
std::vector<Flow> CollectiveFlows(const std::vector<const Node*>& hosts, bool ring);

// Each flow's hops through the forwarding tables (empty where it cannot be routed; the first
// reason goes to `unroutable`).
std::vector<std::vector<Hop>> RoutedPaths(const Fabric& fabric, const std::vector<Flow>& flows,
                                          std::string* unroutable);

// Each flow's hops as balanced routing would place them: host links as cabled, each
// leaf-to-leaf flow on the spine path whose busier link stays least loaded (greedy).
std::vector<std::vector<Hop>> BalancedPaths(const Fabric& fabric, const std::vector<Flow>& flows);

// The hosts in ring order: `names` as given (unknown ones go to `missing`), or every HCA in
// natural name order.
std::vector<const Node*> RingHosts(const Fabric& fabric, const std::vector<std::string>& names,
                                   std::vector<std::string>* missing);

}  // namespace fabricscope::fabric
