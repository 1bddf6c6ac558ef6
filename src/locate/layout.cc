// Node groups from the gathered rank facts: which ranks are one node, and its rails.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"
#include "fabricscope/strings.h"

namespace fabricscope {

NodeGrouping ParseNodeGrouping(std::string_view name) {
  if (name == "host") return NodeGrouping::kHost;
  if (name == "process") return NodeGrouping::kProcess;
  if (name == "rank") return NodeGrouping::kRank;
  throw UsageError("unknown node grouping '" + std::string(name) +
                   "': give host (ranks with the same hostname are one node), process (each "
                   "process a node) or rank (each rank a node)");
}

// Indexed by NodeGrouping's value, in its declaration order.
constexpr std::array<std::string_view, 3> kNodeGroupingNames = {"host", "process", "rank"};

std::string_view NameOf(NodeGrouping grouping) { return NameOf(grouping, kNodeGroupingNames); }

ClusterLayout GroupRanks(const std::vector<RankInfo>& ranks, NodeGrouping grouping) {
  ClusterLayout layout;
  std::map<std::string, size_t> index;
  std::vector<RankInfo> sorted = ranks;
  std::sort(sorted.begin(), sorted.end(),
            [](const RankInfo& x, const RankInfo& y) { return x.rank < y.rank; });
  for (const RankInfo& r : sorted) {
    std::string key;
    std::string name;
    switch (grouping) {
      case NodeGrouping::kHost:
        key = name = r.hostname;
        break;
      case NodeGrouping::kProcess:
        key = r.hostname + "\t" + std::to_string(r.pid);
        name = r.hostname + ":" + std::to_string(r.pid);
        break;
      case NodeGrouping::kRank:
        key = std::to_string(r.rank);
        name = r.hostname + "#" + std::to_string(r.rank);
        break;
    }
    auto [it, added] = index.emplace(key, layout.names.size());
    if (added) {
      layout.names.push_back(name);
      layout.ranks.emplace_back();
    }
    layout.ranks[it->second].push_back(r.rank);
  }
  if (layout.ranks.empty()) {
    layout.rails = 0;
    return layout;
  }
  size_t fewest = layout.ranks.front().size();
  size_t most = fewest;
  for (const auto& node : layout.ranks) {
    fewest = std::min(fewest, node.size());
    most = std::max(most, node.size());
  }
  layout.rails = static_cast<int>(fewest);
  if (fewest != most) {
    layout.notes.push_back("nodes have " + std::to_string(fewest) + " to " + std::to_string(most) +
                           " ranks: pair rounds measure the first " + std::to_string(fewest) +
                           " of each (rails 0-" + std::to_string(fewest - 1) +
                           "); the others join only the per-node test and the collective over "
                           "every rank");
  }
  return layout;
}

}  // namespace fabricscope
