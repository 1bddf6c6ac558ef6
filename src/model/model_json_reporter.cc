// `fabricscope model`'s JSON: one document per run, its "mode" saying which.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "model/model_reporters.h"

namespace fabricscope::model {
namespace {

using nlohmann::json;

json ParamsJson(const ModelParams& p) {
  return {{"latency_scale", p.latency_scale},
          {"net_latency_us", p.net_latency_us},
          {"net_efficiency", p.net_efficiency},
          {"intra_efficiency", p.intra_efficiency}};
}

json RowJson(Collective c, size_t size, double time_us, double algbw, double busbw,
             std::string_view algo, std::string_view proto) {
  return {{"collective", std::string(SpecOf(c).name)},
          {"size", size},
          {"time_us", time_us},
          {"algbw", algbw},
          {"busbw", busbw},
          {"algo", std::string(algo)},
          {"proto", std::string(proto)}};
}

json PointJson(const FitPoint& p) {
  return {{"collective", p.collective},
          {"size", p.size},
          {"placement", std::string(PlacementName(p.placement))},
          {"measured_us", p.measured_us},
          {"predicted_us", p.predicted_us},
          {"measured_busbw", p.measured_busbw},
          {"predicted_busbw", p.predicted_busbw},
          {"error_percent", p.error_percent},
          {"algo", p.algorithm},
          {"proto", p.protocol}};
}

json ErrorJson(const FitError& e) {
  return {{"points", e.points},
          {"mean_abs_percent", e.mean_abs_percent},
          {"max_abs_percent", e.max_abs_percent}};
}

json CalibrationJson(const CalibrationSummary& s) {
  const Calibration& cal = s.calibration;
  std::vector<std::string> placements;
  for (Placement p : s.placements) placements.emplace_back(PlacementName(p));
  json points = json::array();
  for (const FitPoint& p : cal.points) points.push_back(PointJson(p));
  return {{"source", s.source},
          {"nodes", cal.nodes},
          {"placements", placements},
          {"min_size", s.min_size},
          {"fitted", cal.fitted},
          {"prior", ParamsJson(s.prior)},
          {"params", ParamsJson(cal.params)},
          {"notes", cal.notes},
          {"error", ErrorJson(cal.error)},
          {"points", points}};
}

// What the predict and compare documents share: the mode, and the model the platform set up.
json ModelJson(std::string_view mode, const Platform& platform, const CollectiveModel& model) {
  return {{"mode", std::string(mode)},
          {"platform", platform.name},
          {"nodes", model.nodes()},
          {"gpus_per_node", model.ranks_per_node()},
          {"nranks", model.nranks()},
          {"gpu_arch", std::string(ArchName(model.arch()))},
          {"channels", model.channels()},
          {"nccl_tuning", NcclTuningSource()},
          {"params", ParamsJson(model.params())}};
}

json ToJson(const PredictionRecord& r) {
  const CollectiveModel& model = r.model;
  json rows = json::array();
  for (const PredictedSweep& sweep : r.sweeps) {
    for (const Prediction& p : sweep.rows) {
      rows.push_back(RowJson(sweep.collective, p.size, p.time_us, p.algbw, p.busbw,
                             AlgorithmName(p.algorithm), ProtocolName(p.protocol)));
    }
  }
  json doc = ModelJson("predict", r.platform, model);
  doc["intra_busbw"] = model.intra_busbw();
  doc["net_busbw"] = model.net_busbw();
  doc["rows"] = std::move(rows);
  if (r.calibration) doc["calibration"] = CalibrationJson(*r.calibration);
  return doc;
}

json SimulatedJson(const SimulatedCollective& c, size_t simulated_bytes, size_t top_links) {
  const sim::SimResult& r = c.result;
  json rows = json::array();
  for (const SimulatedRow& row : c.rows) {
    rows.push_back(RowJson(c.collective, row.size, r.stalled ? -1 : row.time_us, row.algbw,
                           row.busbw, row.algorithm, "Simple"));
  }
  json tiers = json::array();
  for (const auto& t : r.tiers) {
    tiers.push_back({{"tier", std::string(sim::TierName(t.tier))},
                     {"links", t.links},
                     {"used", t.used},
                     {"max_utilization", t.max_utilization},
                     {"mean_utilization", t.mean_utilization},
                     {"max_connections", t.max_connections}});
  }
  json links = json::array();
  const size_t top = std::min(r.links.size(), top_links);
  for (size_t i = 0; i < top; ++i) {
    const auto& l = r.links[i];
    links.push_back({{"link", l.name},
                     {"tier", std::string(sim::TierName(l.tier))},
                     {"capacity_gbs", l.capacity_gbs},
                     {"peak_gbs", l.peak_gbs},
                     {"utilization", l.utilization},
                     {"gigabytes", l.gigabytes},
                     {"connections", l.connections}});
  }
  return {{"collective", std::string(SpecOf(c.collective).name)},
          {"stalled", r.stalled},
          {"stall_reason", r.stall_reason},
          {"simulated_size", simulated_bytes},
          {"flows", r.flows},
          {"connections", r.connections},
          {"link_uses", r.link_uses},
          {"events", r.events},
          {"transfer_busbw", r.busbw},
          {"rows", rows},
          {"tiers", tiers},
          {"links", links}};
}

json ToJson(const SimulationRecord& r) {
  const sim::FabricOptions& fo = r.fabric;
  json results = json::array();
  for (const SimulatedCollective& c : r.collectives) {
    results.push_back(SimulatedJson(c, r.simulated_bytes, r.top_links));
  }
  return {{"mode", "simulate"},
          {"platform", r.platform.name},
          {"nodes", r.model.nodes()},
          {"gpus_per_node", r.model.ranks_per_node()},
          {"nranks", r.model.nranks()},
          {"fabric",
           {{"tiers", fo.tiers},
            {"design", std::string(sim::DesignName(fo.design))},
            {"leaf_ports", fo.leaf_ports},
            {"oversubscription", fo.leaf_oversubscription},
            {"leaves_per_pod", fo.leaves_per_pod},
            {"pod_oversubscription", fo.pod_oversubscription},
            {"routing", std::string(sim::RoutingName(r.routing))},
            {"seed", r.seed},
            {"switches", r.switches},
            {"links", r.links},
            {"nic_gbs", fo.nic_gbs},
            {"nvlink_gbs", fo.nvlink_gbs}}},
          {"params", ParamsJson(r.model.params())},
          {"results", results}};
}

json ToJson(const ComparisonRecord& r) {
  const CollectiveModel& model = r.model;
  json rows = json::array();
  for (const FitPoint& point : r.points) rows.push_back(PointJson(point));
  json doc = ModelJson("compare", r.platform, model);
  doc["source"] = r.source;
  doc["min_size"] = r.min_size;
  doc["rows"] = std::move(rows);
  doc["error"] = ErrorJson(r.error);
  if (r.calibration) doc["calibration"] = CalibrationJson(*r.calibration);
  if (!r.svg.empty()) doc["svg"] = r.svg;
  return doc;
}

void Write(const fabric::FabricPrediction& p, std::ostream& out) {
  out << fabric::FormatPredictionJson(p);
}

template <typename Record>
void Write(const Record& r, std::ostream& out) {
  out << ToJson(r).dump(2) << "\n";
}

}  // namespace

void RenderModelJson(const ModelRecord& record, std::ostream& out) {
  std::visit([&out](const auto& r) { Write(r, out); }, record);
}

}  // namespace fabricscope::model
