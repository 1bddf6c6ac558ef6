#include "fabricscope/max_min.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>

namespace fabricscope::sim {
namespace {

// Coefficients are at least 1/64 (a QP share); anything below is rounding left behind.
constexpr double kWeightEpsilon = 1e-9;

}  // namespace

void FlowSet::Add(std::vector<std::pair<int, double>> entries) {
  std::sort(entries.begin(), entries.end());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!links.empty() && offsets.back() < links.size() && links.back() == entries[i].first) {
      coefs.back() += entries[i].second;
    } else {
      links.push_back(entries[i].first);
      coefs.push_back(entries[i].second);
    }
  }
  offsets.push_back(links.size());
}

void MaxMinRates(const std::vector<double>& capacity, const FlowSet& flows,
                 const std::vector<char>& active, std::vector<double>& rates, MaxMinWorkspace& ws) {
  const size_t nlinks = capacity.size();
  const size_t nflows = flows.size();
  rates.assign(nflows, 0.0);
  ws.remaining.assign(capacity.begin(), capacity.end());
  ws.weight.assign(nlinks, 0.0);
  ws.version.assign(nlinks, 0);
  ws.frozen.assign(nflows, 1);
  ws.link_offsets.assign(nlinks + 1, 0);

  size_t unfrozen = 0;
  for (size_t f = 0; f < nflows; ++f) {
    if (!active[f]) continue;
    if (flows.offsets[f] == flows.offsets[f + 1]) {
      rates[f] = std::numeric_limits<double>::infinity();
      continue;
    }
    ws.frozen[f] = 0;
    ++unfrozen;
    for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
      ws.weight[static_cast<size_t>(flows.links[i])] += flows.coefs[i];
      ++ws.link_offsets[static_cast<size_t>(flows.links[i]) + 1];
    }
  }
  for (size_t l = 0; l < nlinks; ++l) ws.link_offsets[l + 1] += ws.link_offsets[l];
  ws.link_flows.resize(ws.link_offsets[nlinks]);
  {
    std::vector<size_t> fill(ws.link_offsets.begin(), ws.link_offsets.end() - 1);
    for (size_t f = 0; f < nflows; ++f) {
      if (ws.frozen[f]) continue;
      for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
        ws.link_flows[fill[static_cast<size_t>(flows.links[i])]++] = static_cast<int>(f);
      }
    }
  }

  // (level at which the link fills, link, version): smallest level first.
  using Entry = std::tuple<double, size_t, unsigned>;
  std::vector<Entry> storage;
  storage.reserve(nlinks + flows.links.size() / 4);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap(std::greater<>{},
                                                                      std::move(storage));
  auto level = [&](size_t l) { return std::max(0.0, ws.remaining[l]) / ws.weight[l]; };
  for (size_t l = 0; l < nlinks; ++l) {
    if (ws.weight[l] > kWeightEpsilon) heap.emplace(level(l), l, 0);
  }

  while (unfrozen > 0 && !heap.empty()) {
    const auto [key, l, ver] = heap.top();
    heap.pop();
    if (ver != ws.version[l] || ws.weight[l] <= kWeightEpsilon) continue;
    const double rate = level(l);
    for (size_t k = ws.link_offsets[l]; k < ws.link_offsets[l + 1]; ++k) {
      const auto f = static_cast<size_t>(ws.link_flows[k]);
      if (ws.frozen[f]) continue;
      ws.frozen[f] = 1;
      --unfrozen;
      rates[f] = rate;
      for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
        const auto l2 = static_cast<size_t>(flows.links[i]);
        ws.remaining[l2] -= flows.coefs[i] * rate;
        ws.weight[l2] -= flows.coefs[i];
        if (l2 == l) continue;
        ++ws.version[l2];
        if (ws.weight[l2] > kWeightEpsilon) heap.emplace(level(l2), l2, ws.version[l2]);
      }
    }
    ws.weight[l] = 0;
  }
}

}  // namespace fabricscope::sim
