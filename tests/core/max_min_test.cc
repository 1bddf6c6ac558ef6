// Max-min fair sharing: textbook cases, and the heap-based filling against a plain
// quadratic one on random instances.
#include "fabricscope/max_min.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace fabricscope::sim {
namespace {

std::vector<double> Rates(const std::vector<double>& capacity, const FlowSet& flows,
                          std::vector<char> active = {}) {
  if (active.empty()) active.assign(flows.size(), 1);
  std::vector<double> rates;
  MaxMinWorkspace ws;
  MaxMinRates(capacity, flows, active, rates, ws);
  return rates;
}

// The definition, step by step: raise every unfrozen flow until some link is full.
std::vector<double> Reference(const std::vector<double>& capacity, const FlowSet& flows) {
  const size_t n = flows.size();
  std::vector<double> rate(n, 0.0);
  std::vector<char> frozen(n, 0);
  std::vector<double> left = capacity;
  for (size_t round = 0; round < n; ++round) {
    double step = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < capacity.size(); ++l) {
      double w = 0;
      for (size_t f = 0; f < n; ++f) {
        if (frozen[f]) continue;
        for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
          if (static_cast<size_t>(flows.links[i]) == l) w += flows.coefs[i];
        }
      }
      if (w > 0) step = std::min(step, left[l] / w);
    }
    if (!std::isfinite(step)) break;
    for (size_t f = 0; f < n; ++f) {
      if (frozen[f]) continue;
      rate[f] += step;
      for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
        left[static_cast<size_t>(flows.links[i])] -= flows.coefs[i] * step;
      }
    }
    for (size_t f = 0; f < n; ++f) {
      if (frozen[f]) continue;
      for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
        if (left[static_cast<size_t>(flows.links[i])] <= 1e-9) frozen[f] = 1;
      }
    }
  }
  return rate;
}

TEST(MaxMin, TwoFlowsOnOneLinkSplitIt) {
  FlowSet flows;
  flows.Add({{0, 1.0}});
  flows.Add({{0, 1.0}});
  const auto r = Rates({10.0}, flows);
  EXPECT_DOUBLE_EQ(r[0], 5.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
}

TEST(MaxMin, TheClassicParkingLot) {
  // Flow 0 crosses links 0 and 1; flow 1 uses link 0, flow 2 link 1; link 1 is smaller.
  FlowSet flows;
  flows.Add({{0, 1.0}, {1, 1.0}});
  flows.Add({{0, 1.0}});
  flows.Add({{1, 1.0}});
  const auto r = Rates({10.0, 4.0}, flows);
  EXPECT_DOUBLE_EQ(r[0], 2.0);
  EXPECT_DOUBLE_EQ(r[2], 2.0);
  EXPECT_DOUBLE_EQ(r[1], 8.0);  // what link 0 has left
}

TEST(MaxMin, CoefficientsCoupleHopsAndSplitQueuePairs) {
  // A ring channel crossing link 0 twice moves at half its capacity; a connection spread
  // over two QPs on two links (0.5 each) gets both links' worth.
  FlowSet ring;
  ring.Add({{0, 1.0}, {0, 1.0}});
  EXPECT_DOUBLE_EQ(Rates({10.0}, ring)[0], 5.0);
  FlowSet qps;
  qps.Add({{0, 0.5}, {1, 0.5}});
  EXPECT_DOUBLE_EQ(Rates({10.0, 10.0}, qps)[0], 20.0);
}

TEST(MaxMin, FailedLinksStopTheirFlowsAndLinklessFlowsAreUnbounded) {
  FlowSet flows;
  flows.Add({{0, 1.0}, {1, 1.0}});
  flows.Add({{1, 1.0}});
  flows.Add({});
  const auto r = Rates({0.0, 10.0}, flows);
  EXPECT_EQ(r[0], 0.0);
  EXPECT_DOUBLE_EQ(r[1], 10.0);
  EXPECT_TRUE(std::isinf(r[2]));
}

TEST(MaxMin, InactiveFlowsTakeNothing) {
  FlowSet flows;
  flows.Add({{0, 1.0}});
  flows.Add({{0, 1.0}});
  const auto r = Rates({10.0}, flows, {1, 0});
  EXPECT_DOUBLE_EQ(r[0], 10.0);
  EXPECT_EQ(r[1], 0.0);
}

TEST(MaxMin, MatchesTheDefinitionOnRandomInstances) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int links = 1 + static_cast<int>(rng() % 12);
    const int nflows = 1 + static_cast<int>(rng() % 20);
    std::vector<double> capacity(static_cast<size_t>(links));
    for (auto& c : capacity) c = 1.0 + static_cast<double>(rng() % 100);
    FlowSet flows;
    for (int f = 0; f < nflows; ++f) {
      std::vector<std::pair<int, double>> e;
      const int uses = 1 + static_cast<int>(rng() % 4);
      for (int u = 0; u < uses; ++u) {
        e.emplace_back(static_cast<int>(rng() % static_cast<uint64_t>(links)),
                       1.0 / static_cast<double>(1 + rng() % 4));
      }
      flows.Add(e);
    }
    const auto fast = Rates(capacity, flows);
    const auto slow = Reference(capacity, flows);
    for (size_t f = 0; f < flows.size(); ++f) {
      EXPECT_NEAR(fast[f], slow[f], 1e-6 * std::max(1.0, slow[f])) << trial << " flow " << f;
    }
    // Max-min fair: no link over capacity, and every flow has a full link where it is
    // among the largest.
    std::vector<double> load(capacity.size(), 0.0);
    for (size_t f = 0; f < flows.size(); ++f) {
      for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
        load[static_cast<size_t>(flows.links[i])] += flows.coefs[i] * fast[f];
      }
    }
    for (size_t l = 0; l < capacity.size(); ++l) EXPECT_LE(load[l], capacity[l] * (1 + 1e-9));
  }
}

}  // namespace
}  // namespace fabricscope::sim
