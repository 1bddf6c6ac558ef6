// Private: the fabric's links (both ends paired) and its two tiers, shared by the findings,
// the routing analysis and the picture.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/fabric.h"

namespace fabricscope::fabric {

// One cabled link seen from both ends (b may be missing: the peer did not answer).
struct LinkEnds {
  const Node* a = nullptr;
  const Port* a_port = nullptr;
  const Node* b = nullptr;  // nullptr: unknown peer
  const Port* b_port = nullptr;
  std::string Name() const;  // "leaf1[5] <-> spine1[1]"
};

// Every port with a peer, each link once (the end with the smaller name first).
std::vector<LinkEnds> ActiveLinks(const Fabric& fabric);

// "leaf1[5]".
std::string PortName(const std::string& node, int port);

// Switches with an HCA on an active port (leaves), the others (spines).
bool IsLeaf(const Fabric& fabric, const Node& node);

// Natural order: "h2" before "h10".
bool NaturalLess(const std::string& a, const std::string& b);

// The most common value; ties go to the larger.
template <typename T>
T Majority(const std::vector<T>& values) {
  T best{};
  size_t best_count = 0;
  for (const auto& v : values) {
    size_t count = 0;
    for (const auto& w : values) count += (w == v) ? 1 : 0;
    if (count > best_count || (count == best_count && best < v)) {
      best = v;
      best_count = count;
    }
  }
  return best;
}

}  // namespace fabricscope::fabric
