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

namespace {

// The run's scale: options.nodes, else its host names, else its ranks on full nodes (noted).
int CalibrationNodes(const Platform& platform, const RunResult& measured,
                     const CalibrationOptions& options, std::vector<std::string>& notes) {
  int nodes = options.nodes > 0 ? options.nodes : NodesOf(measured);
  if (nodes == 0 && measured.nranks > 0 && platform.gpus_per_node > 0 &&
      measured.nranks % platform.gpus_per_node == 0) {
    nodes = measured.nranks / platform.gpus_per_node;
    notes.push_back("nodes inferred as ranks / GPUs per node: " + std::to_string(nodes));
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
  return nodes;
}

// The terms the fit moves: the latency scale, the bottleneck's efficiency and the per-step
// network latency.
struct Terms {
  double scale = 1;
  double efficiency = 1;
  double net_latency = 0;
};

// Which terms a run can tell apart: latency needs small sizes, efficiency large ones.
struct Identifiable {
  bool latency = false;
  bool efficiency = false;
  bool net_latency = false;
};

// The model at the run's scale as a function of the terms, and its cost against the run.
class Fit {
 public:
  Fit(const Platform& platform, const ModelOptions& at_scale, const RunResult& measured,
      const CalibrationOptions& options, const ModelParams& prior)
      : platform_(platform),
        at_scale_(at_scale),
        measured_(measured),
        options_(options),
        prior_(prior),
        multi_node_(at_scale.nodes > 1) {}

  bool multi_node() const { return multi_node_; }

  ModelParams With(const Terms& t) const {
    ModelParams p = prior_;
    p.latency_scale = t.scale;
    p.net_latency_us = t.net_latency;
    (multi_node_ ? p.net_efficiency : p.intra_efficiency) = t.efficiency;
    return p;
  }

  CollectiveModel Model(const ModelParams& p) const {
    ModelOptions o = at_scale_;
    o.params = p;
    return CollectiveModel(platform_, o);
  }

  std::vector<FitPoint> Points(const ModelParams& p) const {
    const CollectiveModel model = Model(p);
    std::vector<FitPoint> points;
    for (Placement placement : options_.placements) {
      auto half = CompareWithMeasured(model, measured_, placement, options_.min_size);
      points.insert(points.end(), half.begin(), half.end());
    }
    return points;
  }

  // Least squares on log time.
  double Cost(const Terms& t) const {
    double sum = 0;
    for (const auto& point : Points(With(t))) {
      const double r = std::log(point.predicted_us / point.measured_us);
      sum += r * r;
    }
    return sum;
  }

 private:
  const Platform& platform_;
  const ModelOptions& at_scale_;
  const RunResult& measured_;
  const CalibrationOptions& options_;
  const ModelParams& prior_;
  bool multi_node_;
};

Identifiable IdentifiableTerms(const Fit& fit, const ModelParams& prior,
                               std::vector<std::string>& notes) {
  std::set<size_t> sizes;
  bool latency_seen = false;
  bool bandwidth_seen = false;
  const CollectiveModel model = fit.Model(prior);
  for (const auto& point : fit.Points(prior)) {
    sizes.insert(point.size);
    const CollectiveSpec& spec = FindCollective(point.collective);
    const Prediction p = model.Predict(spec.id, point.size);
    const double latency_share = p.candidates.front().latency_us / p.time_us;
    latency_seen = latency_seen || latency_share > 0.05;
    bandwidth_seen = bandwidth_seen || latency_share < 0.95;
  }
  Identifiable fit_terms;
  fit_terms.latency = latency_seen && sizes.size() >= 2;
  fit_terms.efficiency = bandwidth_seen;
  if (!fit_terms.latency && !fit_terms.efficiency) fit_terms.latency = true;
  if (!fit_terms.latency) {
    notes.push_back("latency kept at its prior: every row is bandwidth-bound (or one size only)");
  }
  if (!fit_terms.efficiency) {
    notes.push_back("efficiency kept at its prior: every row is latency-bound");
  }
  // The per-step network latency moves the protocols' latencies apart (Simple pays it twice,
  // LL and LL128 once, against different base latencies): fit it too when the run spans
  // nodes and shows latency.
  fit_terms.net_latency = fit_terms.latency && fit.multi_node();
  return fit_terms;
}

// The search ranges, in log space for the scale and the efficiency.
struct Ranges {
  double scale_lo = std::log(0.02);
  double scale_hi = std::log(50.0);
  double eff_lo = std::log(0.02);
  double eff_hi = std::log(1.5);
  double net_hi = 0;
};

// A coarse grid of scale x efficiency, from the prior's network latency and from none.
Terms GridSearch(const Fit& fit, const Identifiable& terms, const Ranges& r, const Terms& prior) {
  Terms best_terms = prior;
  double best = std::numeric_limits<double>::infinity();
  constexpr int kGrid = 25;
  std::vector<double> starts = {prior.net_latency};
  if (terms.net_latency && prior.net_latency > 0) starts.push_back(0);
  for (double lx : starts) {
    for (int i = 0; i <= kGrid; ++i) {
      for (int j = 0; j <= kGrid; ++j) {
        const Terms t{std::exp(r.scale_lo + (r.scale_hi - r.scale_lo) * i / kGrid),
                      std::exp(r.eff_lo + (r.eff_hi - r.eff_lo) * j / kGrid), lx};
        const double c = fit.Cost(t);
        if (c < best) {
          best = c;
          best_terms = t;
        }
      }
    }
  }
  return best_terms;
}

// Alternating golden-section refinement of each term.
Terms Refine(const Fit& fit, const Identifiable& terms, const Ranges& r, Terms t) {
  for (int round = 0; round < 8; ++round) {
    if (terms.efficiency) {
      t.efficiency = std::exp(GoldenMin(
          [&](double x) {
            return fit.Cost({t.scale, std::exp(x), t.net_latency});
          },
          r.eff_lo, r.eff_hi));
    }
    if (terms.latency) {
      t.scale = std::exp(GoldenMin(
          [&](double x) {
            return fit.Cost({std::exp(x), t.efficiency, t.net_latency});
          },
          r.scale_lo, r.scale_hi));
    }
    if (terms.net_latency) {
      t.net_latency = GoldenMin(
          [&](double x) {
            return fit.Cost({t.scale, t.efficiency, x});
          },
          0.0, r.net_hi);
    }
    if (!(terms.latency && terms.efficiency)) break;
  }
  return t;
}

}  // namespace

Calibration Calibrate(const Platform& platform, const ModelOptions& base, const RunResult& measured,
                      const CalibrationOptions& options) {
  Calibration out;
  const int nodes = CalibrationNodes(platform, measured, options, out.notes);
  out.nodes = nodes;
  ModelOptions options_at_scale = base;
  options_at_scale.nodes = nodes;
  options_at_scale.params.reset();
  const ModelParams prior = PriorParams(platform, options_at_scale);
  options_at_scale.net_efficiency.reset();  // folded into the prior; the fit may move it
  if (options.placements.empty()) throw UsageError("calibration needs a placement to read");
  const Fit fit(platform, options_at_scale, measured, options, prior);

  const Identifiable terms = IdentifiableTerms(fit, prior, out.notes);
  Terms t{prior.latency_scale, fit.multi_node() ? prior.net_efficiency : prior.intra_efficiency,
          prior.net_latency_us};
  Ranges ranges;
  ranges.net_hi = 2 * (prior.net_latency_us + 30);
  if (terms.latency && terms.efficiency) t = GridSearch(fit, terms, ranges, t);
  t = Refine(fit, terms, ranges, t);
  if (terms.latency) out.fitted.push_back("latency_scale");
  if (terms.net_latency) out.fitted.push_back("net_latency_us");
  if (terms.efficiency)
    out.fitted.push_back(fit.multi_node() ? "net_efficiency" : "intra_efficiency");

  out.params = fit.With(t);
  out.options = base;
  out.options.nodes = nodes;
  out.options.params = out.params;
  out.options.net_efficiency.reset();
  out.points = fit.Points(out.params);
  out.error = SummarizeFit(out.points);
  return out;
}

}  // namespace fabricscope
