// Fitting the model's efficiency and latency terms to a measured run, and judging the fit.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/model.h"

namespace fabricscope {
namespace {

const PlacementResult* PlacementOf(const ResultRow& row, Placement placement) {
  const auto& half = placement == Placement::kOutOfPlace ? row.out_of_place : row.in_place;
  return half && half->time_us > 0 ? &*half : nullptr;
}

// Golden-section search for the minimum of f on [lo, hi] (f unimodal enough there).
double GoldenMin(const std::function<double(double)>& f, double lo, double hi) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo;
  double b = hi;
  double c = b - g * (b - a);
  double d = a + g * (b - a);
  double fc = f(c);
  double fd = f(d);
  for (int i = 0; i < 60 && b - a > 1e-7 * (std::abs(a) + std::abs(b)); ++i) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = f(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = f(d);
    }
  }
  return (a + b) / 2;
}

}  // namespace

FitError SummarizeFit(const std::vector<FitPoint>& points) {
  FitError e;
  e.points = points.size();
  double sum = 0;
  for (const auto& p : points) {
    sum += std::abs(p.error_percent);
    e.max_abs_percent = std::max(e.max_abs_percent, std::abs(p.error_percent));
  }
  e.mean_abs_percent = points.empty() ? 0 : sum / static_cast<double>(points.size());
  return e;
}

int NodesOf(const RunResult& run) {
  std::set<std::string> hosts;
  for (const auto& r : run.ranks) {
    if (r.hostname.empty()) return 0;
    hosts.insert(r.hostname);
  }
  return static_cast<int>(hosts.size());
}

std::vector<FitPoint> CompareWithMeasured(const CollectiveModel& model, const RunResult& measured,
                                          Placement placement, size_t min_size) {
  std::vector<FitPoint> points;
  for (const auto& row : measured.rows) {
    const PlacementResult* half = PlacementOf(row, placement);
    if (half == nullptr || row.size < min_size || row.size == 0) continue;
    const CollectiveSpec* spec = nullptr;
    for (const auto& s : Collectives()) {
      if (s.name == row.collective) spec = &s;
    }
    if (spec == nullptr) continue;
    const Prediction p = model.Predict(spec->id, row.size);
    FitPoint point;
    point.collective = row.collective;
    point.size = row.size;
    point.placement = placement;
    point.measured_us = half->time_us;
    point.predicted_us = p.time_us;
    point.measured_busbw = half->busbw;
    point.predicted_busbw = p.busbw;
    point.algorithm = std::string(AlgorithmName(p.algorithm));
    point.protocol = std::string(ProtocolName(p.protocol));
    point.error_percent = 100.0 * (p.time_us - half->time_us) / half->time_us;
    points.push_back(point);
  }
  if (points.empty()) {
    throw UsageError(std::string("the run has no ") +
                     (placement == Placement::kOutOfPlace ? "out-of-place" : "in-place") +
                     " row of a known collective with a time" +
                     (min_size > 0 ? " at or above " + std::to_string(min_size) + " bytes" : "") +
                     " to compare with");
  }
  return points;
}

Calibration Calibrate(const Platform& platform, const ModelOptions& base, const RunResult& measured,
                      const CalibrationOptions& options) {
  Calibration out;
  int nodes = options.nodes > 0 ? options.nodes : NodesOf(measured);
  if (nodes == 0 && measured.nranks > 0 && platform.gpus_per_node > 0 &&
      measured.nranks % platform.gpus_per_node == 0) {
    nodes = measured.nranks / platform.gpus_per_node;
    out.notes.push_back("nodes inferred as ranks / GPUs per node: " + std::to_string(nodes));
  }
  if (nodes == 0) {
    throw UsageError("the run does not say how many nodes it ran on (no host names): give --nodes");
  }
  if (measured.nranks > 0 && measured.nranks != nodes * platform.gpus_per_node) {
    throw UsageError("the run has " + std::to_string(measured.nranks) + " ranks, but " +
                     std::to_string(nodes) + " nodes of " + platform.name + " make " +
                     std::to_string(nodes * platform.gpus_per_node) +
                     ": check --nodes and --platform (or --gpus-per-node)");
  }
  out.nodes = nodes;
  ModelOptions options_at_scale = base;
  options_at_scale.nodes = nodes;
  options_at_scale.params.reset();
  const ModelParams prior = PriorParams(platform, options_at_scale);
  options_at_scale.net_efficiency.reset();  // folded into the prior; the fit may move it

  const bool multi_node = nodes > 1;
  auto with = [&](double scale, double efficiency, double net_latency) {
    ModelParams p = prior;
    p.latency_scale = scale;
    p.net_latency_us = net_latency;
    (multi_node ? p.net_efficiency : p.intra_efficiency) = efficiency;
    return p;
  };
  if (options.placements.empty()) throw UsageError("calibration needs a placement to read");
  auto points_for = [&](const ModelParams& p) {
    ModelOptions o = options_at_scale;
    o.params = p;
    const CollectiveModel model(platform, o);
    std::vector<FitPoint> points;
    for (Placement placement : options.placements) {
      auto half = CompareWithMeasured(model, measured, placement, options.min_size);
      points.insert(points.end(), half.begin(), half.end());
    }
    return points;
  };
  auto cost = [&](const ModelParams& p) {
    double sum = 0;
    for (const auto& point : points_for(p)) {
      const double r = std::log(point.predicted_us / point.measured_us);
      sum += r * r;
    }
    return sum;
  };

  // Which terms the run can tell apart: latency needs small sizes, efficiency large ones.
  const std::vector<FitPoint> prior_points = points_for(prior);
  std::set<size_t> sizes;
  bool latency_seen = false;
  bool bandwidth_seen = false;
  {
    ModelOptions o = options_at_scale;
    o.params = prior;
    const CollectiveModel model(platform, o);
    for (const auto& point : prior_points) {
      sizes.insert(point.size);
      const CollectiveSpec& spec = FindCollective(point.collective);
      const Prediction p = model.Predict(spec.id, point.size);
      const double latency_share = p.candidates.front().latency_us / p.time_us;
      latency_seen = latency_seen || latency_share > 0.05;
      bandwidth_seen = bandwidth_seen || latency_share < 0.95;
    }
  }
  bool fit_latency = latency_seen && sizes.size() >= 2;
  bool fit_efficiency = bandwidth_seen;
  if (!fit_latency && !fit_efficiency) fit_latency = true;
  if (!fit_latency) {
    out.notes.push_back(
        "latency kept at its prior: every row is bandwidth-bound (or one size only)");
  }
  if (!fit_efficiency) {
    out.notes.push_back("efficiency kept at its prior: every row is latency-bound");
  }

  const double prior_eff = multi_node ? prior.net_efficiency : prior.intra_efficiency;
  // The per-step network latency moves the protocols' latencies apart (Simple pays it twice,
  // LL and LL128 once, against different base latencies): fit it too when the run spans
  // nodes and shows latency.
  const bool fit_net_latency = fit_latency && multi_node;
  double scale = prior.latency_scale;
  double eff = prior_eff;
  double net_latency = prior.net_latency_us;
  // Coarse grids in log space (from the prior's network latency and from none), then
  // alternating golden-section refinement of each term.
  const double scale_lo = std::log(0.02);
  const double scale_hi = std::log(50.0);
  const double eff_lo = std::log(0.02);
  const double eff_hi = std::log(1.5);
  const double net_hi = 2 * (prior.net_latency_us + 30);
  if (fit_latency && fit_efficiency) {
    double best = std::numeric_limits<double>::infinity();
    constexpr int kGrid = 25;
    std::vector<double> starts = {prior.net_latency_us};
    if (fit_net_latency && prior.net_latency_us > 0) starts.push_back(0);
    for (double lx : starts) {
      for (int i = 0; i <= kGrid; ++i) {
        for (int j = 0; j <= kGrid; ++j) {
          const double s = std::exp(scale_lo + (scale_hi - scale_lo) * i / kGrid);
          const double e = std::exp(eff_lo + (eff_hi - eff_lo) * j / kGrid);
          const double c = cost(with(s, e, lx));
          if (c < best) {
            best = c;
            scale = s;
            eff = e;
            net_latency = lx;
          }
        }
      }
    }
  }
  for (int round = 0; round < 8; ++round) {
    if (fit_efficiency) {
      eff = std::exp(GoldenMin(
          [&](double x) { return cost(with(scale, std::exp(x), net_latency)); }, eff_lo, eff_hi));
    }
    if (fit_latency) {
      scale = std::exp(GoldenMin(
          [&](double x) { return cost(with(std::exp(x), eff, net_latency)); }, scale_lo, scale_hi));
    }
    if (fit_net_latency) {
      net_latency = GoldenMin([&](double x) { return cost(with(scale, eff, x)); }, 0.0, net_hi);
    }
    if (!(fit_latency && fit_efficiency)) break;
  }
  if (fit_latency) out.fitted.push_back("latency_scale");
  if (fit_net_latency) out.fitted.push_back("net_latency_us");
  if (fit_efficiency) out.fitted.push_back(multi_node ? "net_efficiency" : "intra_efficiency");

  out.params = with(scale, eff, net_latency);
  out.options = base;
  out.options.nodes = nodes;
  out.options.params = out.params;
  out.options.net_efficiency.reset();
  out.points = points_for(out.params);
  out.error = SummarizeFit(out.points);
  return out;
}

}  // namespace fabricscope
