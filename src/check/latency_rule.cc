// The latency rule: the small-message time against the platform's floor. The catalog's floor
// is a 2-node figure; at other scales, or without one, the model's time stands in.
#include <fmt/format.h>

#include <algorithm>

#include "check/rules.h"
#include "fabricscope/analyze.h"
#include "fabricscope/collective.h"
#include "fabricscope/error.h"
#include "fabricscope/model.h"

namespace fabricscope::check {
namespace {

struct Floor {
  double us = 0;
  std::string source;
};

std::optional<Floor> FloorFor(const RuleContext& c, size_t size) {
  const Platform& p = *c.choice.platform;
  // The catalog's floor is the network's; inside an NVLink domain the model's time stands in.
  if (p.latency_floor_us && !c.bandwidth.over_nvlink && (c.test.nodes == 2 || c.test.host_memory)) {
    return Floor{*p.latency_floor_us,
                 p.latency_source.empty() ? std::string("the catalog") : p.latency_source};
  }
  // The model describes NCCL on GPUs: it has nothing to say about a host-memory run.
  if (c.test.host_memory) return std::nullopt;
  // Nor about EFA's small messages: its latency terms are InfiniBand's, and EFA's SRD takes
  // several times longer (2 x p6-b200, 16 ranks: 50.6 us at 8 B, dstackai/dstack#3961; 2 x
  // p4d, NCCL 2.8: 167 us, aws-samples/aws-efa-eks README): without a catalog floor, no judgement.
  if (p.transport == "EFA") return std::nullopt;
  try {
    ModelOptions options;
    options.nodes = c.test.nodes;
    const CollectiveModel model(p, options);
    const Prediction prediction = model.Predict(FindCollective(c.test.collective).id, size);
    return Floor{
        prediction.time_us,
        fmt::format("fabricscope model ({}/{}), as the catalog {}",
                    AlgorithmName(prediction.algorithm), ProtocolName(prediction.protocol),
                    p.latency_floor_us ? "floor is for 2 nodes" : "has no floor for " + p.name)};
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<Finding> LatencyRule(const RuleContext& c) {
  if (!PlatformApplies(c.test, c.choice) || c.test.nodes < 2) return std::nullopt;
  // Each sweep's lowest time among its small sizes; the median over sweeps, so that one
  // unlucky run does not decide.
  std::vector<std::pair<double, size_t>> lows;
  for (const Sweep& sweep : c.test.sweeps) {
    std::optional<std::pair<double, size_t>> low;
    for (const auto& [size, us] : sweep.time_us) {
      if (size == 0 || size > c.options.latency_max_size) continue;
      if (!low || us < low->first) low = std::make_pair(us, size);
    }
    if (low) lows.push_back(*low);
  }
  if (lows.empty()) return std::nullopt;
  std::sort(lows.begin(), lows.end());
  const auto [measured, size] = lows[lows.size() / 2];
  const std::optional<Floor> floor = FloorFor(c, size);
  if (!floor || !(floor->us > 0)) return std::nullopt;
  const double ratio = measured / floor->us;
  Finding f;
  f.figures = {{"latency_us", measured}, {"floor_us", floor->us}, {"ratio", ratio}};
  const std::string seen = fmt::format("{} at {}, {:.2f}x the {} floor ({})", Micros(measured),
                                       FormatBytes(size), ratio, Micros(floor->us), floor->source);
  if (ratio <= c.options.latency_warn_ratio) {
    f.severity = Severity::kOk;
    f.what = seen;
  } else {
    f.severity = Severity::kWarn;
    f.what = seen +
             ": small messages are slow; look for a busy or throttled CPU (NCCL's proxy "
             "thread), LL/LL128 disabled by NCCL_PROTO, or a TCP path";
  }
  return f;
}

}  // namespace fabricscope::check
