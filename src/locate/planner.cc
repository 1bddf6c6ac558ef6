// The planner: which pairs meet in which round. Nothing here measures anything.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"
#include "locate/random.h"

namespace fabricscope {
namespace {

NodePair Ordered(int a, int b) { return a < b ? NodePair{a, b} : NodePair{b, a}; }

// Round r of the circle method on an even count: one position stays put, the others
// rotate by one each round; with an odd count a phantom node makes it even, and its
// partner sits out. Computed on its own, so quick mode never builds the whole schedule.
Round CircleRound(int nodes, int r) {
  const int even = nodes % 2 == 0 ? nodes : nodes + 1;
  const int circle = even - 1;
  const int fixed = even - 1;
  Round round;
  round.pairs.reserve(static_cast<size_t>(even / 2));
  auto add = [&](int x, int y) {
    if (x < nodes && y < nodes) round.pairs.push_back(Ordered(x, y));
  };
  add(fixed, r);
  for (int k = 1; k < even / 2; ++k) add((r + k) % circle, (r - k + circle) % circle);
  std::sort(round.pairs.begin(), round.pairs.end());
  return round;
}

int CircleRounds(int nodes) {
  if (nodes < 2) {
    throw UsageError("a pair schedule needs at least 2 nodes (got " + std::to_string(nodes) + ")");
  }
  return nodes % 2 == 0 ? nodes - 1 : nodes;
}

}  // namespace

std::vector<Round> RoundRobinSchedule(int nodes) {
  const int count = CircleRounds(nodes);
  std::vector<Round> rounds;
  rounds.reserve(static_cast<size_t>(count));
  for (int r = 0; r < count; ++r) rounds.push_back(CircleRound(nodes, r));
  return rounds;
}

std::vector<Round> QuickSchedule(int nodes, int coverage, uint64_t seed) {
  const int count = CircleRounds(nodes);
  if (coverage < 1 || coverage > count) {
    throw UsageError("quick mode covers each node 1 to " + std::to_string(count) + " times with " +
                     std::to_string(nodes) + " nodes (got " + std::to_string(coverage) +
                     "); beyond that, run the full schedule");
  }
  // A random relabelling of the nodes and a random choice of rounds: each node meets
  // `coverage` distinct peers, random but reproducible from the seed.
  SplitMix rng(seed);
  std::vector<int> label(static_cast<size_t>(nodes));
  std::iota(label.begin(), label.end(), 0);
  Shuffle(label, rng);
  std::vector<int> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  Shuffle(order, rng);
  std::vector<Round> rounds;
  rounds.reserve(static_cast<size_t>(coverage));
  for (int r = 0; r < coverage; ++r) {
    Round round;
    for (const NodePair& p : CircleRound(nodes, order[static_cast<size_t>(r)]).pairs) {
      round.pairs.push_back(
          Ordered(label[static_cast<size_t>(p.a)], label[static_cast<size_t>(p.b)]));
    }
    std::sort(round.pairs.begin(), round.pairs.end());
    rounds.push_back(std::move(round));
  }
  return rounds;
}

std::vector<Round> PackRounds(const std::vector<NodePair>& pairs) {
  std::vector<Round> rounds;
  std::vector<std::vector<int>> busy;  // per round, the nodes it already has
  for (const NodePair& p : pairs) {
    size_t r = 0;
    for (; r < rounds.size(); ++r) {
      const auto& used = busy[r];
      if (std::find(used.begin(), used.end(), p.a) == used.end() &&
          std::find(used.begin(), used.end(), p.b) == used.end()) {
        break;
      }
    }
    if (r == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[r].pairs.push_back(Ordered(p.a, p.b));
    busy[r].push_back(p.a);
    busy[r].push_back(p.b);
  }
  return rounds;
}

}  // namespace fabricscope
