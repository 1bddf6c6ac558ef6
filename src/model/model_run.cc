// `fabricscope model` as a library: the request checked and run into one record.
#include "fabricscope/model_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/plot.h"
#include "fabricscope/sizes.h"
#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

// "NAME=FACTOR" -> (NAME, FACTOR); the flag names the option in errors.
std::pair<std::string, double> NameAndFactor(const std::string& text, const char* flag) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UsageError(std::string(flag) + " '" + text + "' must be NAME=FACTOR, e.g. " +
                     (std::string(flag) == "--slow-node" ? "17=0.5" : "leaf0-spine1=0.5"));
  }
  if (const std::optional<double> factor = ToNumber<double>(text.substr(eq + 1))) {
    return {text.substr(0, eq), *factor};
  }
  throw UsageError(std::string(flag) + " '" + text + "': '" + text.substr(eq + 1) +
                   "' is not a number (the fraction of capacity left, 0 to 1)");
}

bool GenericGiven(const ModelRequest& r) {
  return r.gpus_per_node > 0 || r.intra_node_busbw > 0 || r.nics > 0 || r.nic_rate > 0 ||
         r.latency_floor > 0;
}

Platform ResolvePlatform(const ModelRequest& r) {
  if (!r.platform.empty()) {
    if (GenericGiven(r)) {
      throw UsageError("--platform " + r.platform +
                       " already describes the node: drop --gpus-per-node, --intra-node-busbw, "
                       "--nics, --nic-rate and --latency-floor, or drop --platform");
    }
    return Catalog::Builtin().Get(r.platform);
  }
  if (!GenericGiven(r)) {
    throw UsageError("give --platform NAME (one of " + Joined(Catalog::Builtin().Names()) +
                     ") or describe the node with --gpus-per-node, --intra-node-busbw, --nics "
                     "and --nic-rate");
  }
  GenericPlatformOptions g;
  g.gpus_per_node = r.gpus_per_node;
  g.intra_node_busbw = r.intra_node_busbw;
  g.nics = r.nics;
  g.nic_rate_gbps = r.nic_rate;
  g.transport = r.transport;
  if (r.net_efficiency > 0) g.ring_efficiency = std::min(1.0, r.net_efficiency);
  if (r.latency_floor > 0) g.latency_floor_us = r.latency_floor;
  return GenericPlatform(g);
}

ModelOptions ToModelOptions(const ModelRequest& r) {
  ModelOptions o;
  if (r.nodes < 1) throw UsageError("--nodes must be at least 1");
  o.nodes = r.nodes;
  if (!r.gpu_arch.empty()) o.arch = ParseArch(r.gpu_arch);
  o.cpu = ParseCpuVendor(r.cpu);
  o.nvlink = !r.pcie;
  if (r.channels < 0 || r.channels > 256) {
    throw UsageError("--channels must be 1 to 256 (0 = derived)");
  }
  o.channels = r.channels;
  if (r.net_efficiency < 0 || r.net_efficiency > 1.5) {
    throw UsageError("--net-efficiency must be a fraction of NIC line rate, in (0, 1.5]");
  }
  if (r.net_efficiency > 0) o.net_efficiency = r.net_efficiency;
  o.in_network_reduction = r.in_network;
  for (const auto& a : Split(r.algo, ',')) o.algorithms.push_back(ParseAlgorithm(a));
  for (const auto& p : Split(r.proto, ',')) o.protocols.push_back(ParseProtocol(p));
  return o;
}

std::vector<size_t> Sizes(const ModelRequest& r) {
  if (r.step_factor < 1 || r.step_factor > (1 << 20)) {
    throw UsageError("-f/--stepfactor must be 1 (use -i) to 1048576");
  }
  return SizeSweep(ParseSize(r.min_bytes, "-b/--minbytes"), ParseSize(r.max_bytes, "-e/--maxbytes"),
                   ParseSize(r.step_bytes, "-i/--stepbytes"), static_cast<uint64_t>(r.step_factor));
}

PredictionRecord Predict(const Platform& platform, const ModelOptions& options,
                         const std::vector<Collective>& collectives,
                         const std::vector<size_t>& sizes,
                         std::optional<CalibrationSummary> calibration = std::nullopt) {
  PredictionRecord record{platform, CollectiveModel(platform, options), {}, std::move(calibration)};
  for (Collective c : collectives) {
    record.sweeps.push_back({c, record.model.Sweep(c, sizes)});
  }
  return record;
}

// ---- the fabric simulator ----

// Failed and degraded links, slow nodes.
void ApplyFaults(const ModelRequest& r, sim::Fabric& fabric) {
  for (const auto& name : r.fail_links) fabric.DegradeLink(name, 0.0);
  for (const auto& text : r.degrade_links) {
    const auto [name, factor] = NameAndFactor(text, "--degrade-link");
    fabric.DegradeLink(name, factor);
  }
  for (const auto& text : r.slow_nodes) {
    const auto [node, factor] = NameAndFactor(text, "--slow-node");
    const std::optional<int> index = ToNumber<int>(node);
    if (!index) {
      throw UsageError(fmt::format("--slow-node '{}': '{}' is not a node number", text, node));
    }
    fabric.SlowNode(*index, factor);
  }
}

bool BrokenIntoFlows(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kAllGather ||
         c == Collective::kReduceScatter || c == Collective::kBroadcast ||
         c == Collective::kReduce || c == Collective::kSendRecv;
}

// The simulated time of each size: the analytic latency plus the simulated transfer, scaled
// from the size simulated.
std::vector<SimulatedRow> SimulatedRows(const CollectiveModel& model, Collective c,
                                        const sim::SimResult& r, const std::vector<size_t>& sizes,
                                        size_t simulated_bytes, bool in_network) {
  std::vector<SimulatedRow> rows;
  for (size_t size : sizes) {
    SimulatedRow row;
    row.size = size;
    const double latency = LatencyFor(model, c, size, in_network);
    row.time_us =
        latency + r.transfer_us * static_cast<double>(size) / static_cast<double>(simulated_bytes);
    row.algbw = r.stalled ? 0 : static_cast<double>(size) / (1e3 * row.time_us);
    row.busbw = row.algbw * SpecOf(c).bus_factor(model.nranks());
    row.algorithm = c == Collective::kSendRecv ? "P2P" : in_network ? "CollNet" : "Ring";
    rows.push_back(row);
  }
  return rows;
}

SimulationRecord Simulate(const ModelRequest& r, const Platform& platform,
                          const ModelOptions& options, const std::vector<Collective>& requested,
                          const std::vector<size_t>& sizes) {
  SimulationRecord record{.platform = platform, .model = CollectiveModel(platform, options)};
  sim::Fabric fabric(FabricFor(r, platform, record.model));
  ApplyFaults(r, fabric);
  if (r.top_links < 0) throw UsageError("--top-links must be 0 or more");

  std::vector<Collective> collectives;
  for (Collective c : requested) {
    if (BrokenIntoFlows(c)) {
      collectives.push_back(c);
    } else {
      record.skipped.emplace_back(SpecOf(c).name);
    }
  }
  if (collectives.empty()) {
    throw UsageError(
        "--simulate breaks all_reduce, all_gather, reduce_scatter, broadcast, "
        "reduce and sendrecv into flows; choose one of them with --collective");
  }
  if (r.in_network && requested.size() != 1) {
    throw UsageError(
        "--in-network with --simulate models all_reduce: give --collective all_reduce");
  }

  sim::SimOptions so;
  so.routing = sim::ParseRouting(r.routing);
  so.seed = r.seed;
  so.qps_per_connection = r.qps;
  so.channels = r.channels;
  so.peer_shift = r.peer_shift;
  so.in_network_reduction = r.in_network;
  so.bytes = sizes.back();
  record.fabric = fabric.options();
  record.routing = so.routing;
  record.seed = so.seed;
  record.qps_per_connection = so.qps_per_connection;
  record.simulated_bytes = so.bytes;
  record.switches = fabric.switch_count();
  record.links = fabric.link_count();
  record.top_links = static_cast<size_t>(r.top_links);
  for (Collective c : collectives) {
    so.collective = c;
    so.latency_us = 0;  // fair shares do not depend on the size: the latency comes per row
    SimulatedCollective out{c, sim::Simulate(fabric, so), {}};
    out.rows = SimulatedRows(record.model, c, out.result, sizes, so.bytes, r.in_network);
    record.collectives.push_back(std::move(out));
  }
  return record;
}

// ---- measured runs: --calibrate and --compare ----

// Fits the model to the --calibrate run; the summary says what moved.
CalibrationSummary CalibrateOn(const ModelRequest& r, const Platform& platform,
                               const ModelOptions& base, const MeasuredRun& m, size_t min_size) {
  CalibrationOptions co;
  co.placements = PlacementsOf(r, m, min_size);
  co.min_size = min_size;
  co.nodes = m.nodes;
  CalibrationSummary summary;
  summary.source = m.path;
  summary.platform = platform.name;
  summary.placements = co.placements;
  summary.min_size = min_size;
  try {
    summary.calibration = Calibrate(platform, base, m.run, co);
    ModelOptions at_scale = base;
    at_scale.nodes = m.nodes;
    at_scale.params.reset();
    summary.prior = PriorParams(platform, at_scale);
  } catch (const UsageError& e) {
    throw UsageError(m.flag + " " + m.path + ": " + e.what());
  }
  return summary;
}

// Measured and predicted busbw on one plot: per collective one colour, the measurement
// solid (one line per placement), the prediction dashed.
std::string OverlaySvg(const std::vector<FitPoint>& points, const MeasuredRun& m,
                       const std::vector<Placement>& placements, const std::string& title) {
  std::vector<PlotSeries> series;
  for (size_t ci = 0; ci < m.collectives.size(); ++ci) {
    const std::string name(SpecOf(m.collectives[ci]).name);
    const int color = static_cast<int>(ci);
    for (Placement placement : placements) {
      PlotSeries measured;
      measured.label = name + " measured";
      if (placements.size() > 1) {
        measured.label += placement == Placement::kOutOfPlace ? " (out)" : " (in)";
      }
      measured.color = color;
      for (const FitPoint& p : points) {
        if (p.collective == name && p.placement == placement) {
          measured.points.emplace_back(static_cast<double>(p.size), p.measured_busbw);
        }
      }
      series.push_back(std::move(measured));
    }
    PlotSeries predicted;
    predicted.label = name + " predicted";
    predicted.color = color;
    predicted.dashed = true;
    for (const FitPoint& p : points) {
      if (p.collective != name || p.placement != placements.front()) continue;
      predicted.points.emplace_back(static_cast<double>(p.size), p.predicted_busbw);
    }
    series.push_back(std::move(predicted));
  }
  PlotOptions options;
  options.title = title;
  options.y_label = "busbw (GB/s)";
  return RenderSvgPlot(series, options);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  file.close();
  if (!file) {
    throw SystemError("cannot write '" + path +
                      "': check that the directory exists and is writable");
  }
}

// Every point of the run against the model at its scale, in the run's order of collectives,
// then by size and placement.
std::vector<FitPoint> ComparedPoints(const CollectiveModel& model, const MeasuredRun& m,
                                     const std::vector<Placement>& placements, size_t min_size) {
  std::vector<FitPoint> points;
  for (Placement placement : placements) {
    auto half = CompareWithMeasured(model, m.run, placement, min_size);
    points.insert(points.end(), half.begin(), half.end());
  }
  auto rank = [&](const FitPoint& p) {
    const auto at =
        std::find(m.collectives.begin(), m.collectives.end(), FindCollective(p.collective).id);
    return std::make_tuple(at - m.collectives.begin(), p.size, p.placement);
  };
  std::stable_sort(points.begin(), points.end(),
                   [&](const FitPoint& a, const FitPoint& b) { return rank(a) < rank(b); });
  return points;
}

// The model at the run's scale, size by size against the run.
ComparisonRecord CompareRun(const ModelRequest& r, const Platform& platform, ModelOptions options,
                            const MeasuredRun& m, size_t min_size,
                            std::optional<CalibrationSummary> calibration) {
  options.nodes = m.nodes;
  const std::vector<Placement> placements = PlacementsOf(r, m, min_size);
  std::optional<CollectiveModel> built;
  std::vector<FitPoint> points;
  try {
    built.emplace(platform, options);
    points = ComparedPoints(*built, m, placements, min_size);
  } catch (const UsageError& e) {
    throw UsageError(m.flag + " " + m.path + ": " + e.what());
  }
  ComparisonRecord record{.platform = platform,
                          .model = *built,
                          .source = m.path,
                          .collectives = m.collectives,
                          .min_size = min_size};
  record.error = SummarizeFit(points);
  record.points = std::move(points);
  record.calibration = std::move(calibration);
  // The picture first: a path that cannot be written must not leave half a report.
  if (!r.svg.empty()) {
    WriteFile(r.svg, OverlaySvg(record.points, m, placements,
                                fmt::format("measured and predicted busbw, {} x {}", m.nodes,
                                            platform.name)));
    record.svg = r.svg;
  }
  return record;
}

ModelRecord Measured(const ModelRequest& r, const Platform& platform, const ModelOptions& options,
                     const std::vector<size_t>& sizes, std::ostream& warnings) {
  if (r.simulate) {
    throw UsageError(std::string(r.calibrate.empty() ? "--compare" : "--calibrate") +
                     " sets the analytic model against a run; --simulate does not use it. To "
                     "simulate with a calibrated NIC efficiency, give --simulate "
                     "--net-efficiency F with the F --calibrate prints");
  }
  if (r.nodes_given && !r.compare.empty()) {
    throw UsageError(
        "--nodes with --compare: the comparison is at the measured run's scale; to predict "
        "another scale, use --calibrate FILE --nodes N without --compare");
  }
  const size_t min_size = ParseSize(r.min_size, "--min-size");
  WantedPlacements(r.placement);  // a bad value is refused before any file is read

  std::optional<CalibrationSummary> calibration;
  std::vector<Collective> measured_collectives;
  if (!r.calibrate.empty()) {
    const MeasuredRun m = ReadMeasured("--calibrate", r.calibrate, r, platform, warnings);
    calibration = CalibrateOn(r, platform, options, m, min_size);
    measured_collectives = m.collectives;
  }
  if (!r.compare.empty()) {
    const MeasuredRun m = ReadMeasured("--compare", r.compare, r, platform, warnings);
    const ModelOptions at = calibration ? calibration->calibration.options : options;
    return CompareRun(r, platform, at, m, min_size, std::move(calibration));
  }
  ModelOptions at = calibration->calibration.options;
  at.nodes = r.nodes_given ? r.nodes : calibration->calibration.nodes;
  const std::vector<Collective> collectives =
      r.collective_given ? ParseCollectives(r.collective) : measured_collectives;
  return Predict(platform, at, collectives, sizes, std::move(calibration));
}

fabric::FabricPrediction PredictOnSavedFabric(const ModelRequest& r) {
  fabric::PredictOptions on;
  on.collective = r.collective;
  if (r.net_efficiency > 0) on.efficiency = r.net_efficiency;
  return fabric::PredictOnFabric(fabric::ParseFabric(fabric::ReadSaved(r.fabric)), on);
}

}  // namespace

sim::FabricOptions FabricFor(const ModelRequest& r, const Platform& platform,
                             const CollectiveModel& model) {
  sim::FabricOptions fo;
  fo.nodes = model.nodes();
  fo.gpus_per_node = platform.gpus_per_node;
  fo.nics_per_node = platform.nics;
  if (platform.nics < 1) throw UsageError("--simulate needs NICs: the platform has none");
  fo.nic_gbs = platform.nic_rate_gbps / 8.0 * model.params().net_efficiency;
  fo.uplink_gbs = fo.nic_gbs;
  fo.nvlink_gbs = platform.gpus_per_node > 1 ? model.intra_busbw() : 0;
  fo.tiers = r.tiers;
  fo.design = sim::ParseDesign(r.design);
  fo.leaf_ports = r.leaf_ports;
  fo.leaf_oversubscription = r.oversubscription;
  fo.leaves_per_pod = r.leaves_per_pod;
  fo.pod_oversubscription = r.pod_oversubscription;
  return fo;
}

double LatencyFor(const CollectiveModel& model, Collective c, size_t bytes, bool in_network) {
  const Prediction p = model.Predict(c, bytes);
  const NcclAlgorithm wanted = c == Collective::kSendRecv ? NcclAlgorithm::kP2p
                               : in_network               ? NcclAlgorithm::kCollNetDirect
                                                          : NcclAlgorithm::kRing;
  for (const auto& cand : p.candidates) {  // fastest first
    if (cand.algorithm == wanted) return cand.latency_us;
  }
  return p.candidates.front().latency_us;
}

bool SimulationRecord::Stalled() const {
  return std::any_of(collectives.begin(), collectives.end(),
                     [](const SimulatedCollective& c) { return c.result.stalled; });
}

bool Stalled(const ModelRecord& record) {
  const auto* simulation = std::get_if<SimulationRecord>(&record);
  return simulation != nullptr && simulation->Stalled();
}

ModelRecord RunModel(const ModelRequest& r, std::ostream& warnings) {
  if (!r.fabric.empty()) return PredictOnSavedFabric(r);
  const Platform platform = ResolvePlatform(r);
  const ModelOptions options = ToModelOptions(r);
  const std::vector<Collective> collectives = ParseCollectives(r.collective);
  const std::vector<size_t> sizes = Sizes(r);
  if (!r.calibrate.empty() || !r.compare.empty()) {
    return Measured(r, platform, options, sizes, warnings);
  }
  if (r.placement != "both" || r.min_size != "0" || r.measured_nodes != 0) {
    throw UsageError(
        "--placement, --min-size and --measured-nodes read a measured run: give --calibrate "
        "FILE or --compare FILE");
  }
  if (!r.simulate) return Predict(platform, options, collectives, sizes);
  return Simulate(r, platform, options, collectives, sizes);
}

}  // namespace fabricscope
