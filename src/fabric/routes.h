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

// The hosts in ring order: `names` as given (unknown ones go to `missing`), or every HCA in
// natural name order.
std::vector<const Node*> RingHosts(const Fabric& fabric, const std::vector<std::string>& names,
                                   std::vector<std::string>* missing);

}  // namespace fabricscope::fabric
