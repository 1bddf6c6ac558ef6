// `fabricscope model`'s text: nccl-tests-like tables under '#' lines saying what was modelled.
#include <fmt/format.h>

#include <ostream>
#include <string>
#include <string_view>
#include <variant>

#include "fabricscope/joined.h"
#include "fabricscope/report.h"
#include "model/model_reporters.h"

namespace fabricscope::model {
namespace {

constexpr std::string_view kTableHeader =
    "#       size        time    algbw    busbw  algo          proto\n"
    "#        (B)        (us)   (GB/s)   (GB/s)\n";

constexpr std::string_view kCompareHeader =
    "#       size  place      time (us)            busbw (GB/s)         error  algo          "
    "proto\n"
    "#        (B)         measured  predicted    measured  predicted   time %\n";

std::string RowText(size_t size, double time_us, double algbw, double busbw, std::string_view algo,
                    std::string_view proto) {
  return fmt::format("{:>12}  {}  {}  {}  {:<13} {}\n", size, FormatNumber(time_us, 10),
                     FormatNumber(algbw, 7), FormatNumber(busbw, 7), algo, proto);
}

std::string Describe(const Platform& p, const CollectiveModel& m) {
  return fmt::format(
      "{} x {} ({} ranks, {} GPUs per node, {} x {:g} Gb/s {}{})", m.nodes(), p.name, m.nranks(),
      m.ranks_per_node(), p.nics, p.nic_rate_gbps, p.transport,
      m.nvlink_domain() ? "; the nodes share one NVLink domain: NVLink, not the NICs" : "");
}

// "NCCL 2.25.1 tuning model; hopper GPUs; ..." after `lead`.
std::string ModelLine(std::string_view lead, const CollectiveModel& model) {
  const ModelParams& p = model.params();
  return fmt::format(
      "# {}NCCL {} tuning model; {} GPUs; NIC efficiency {:.3f}, latency x {:.2f}, +{:.1f} us "
      "per network step\n",
      lead, NcclTuningVersion(), ArchName(model.arch()), p.net_efficiency, p.latency_scale,
      p.net_latency_us);
}

std::string ErrorText(const FitError& e) {
  return fmt::format("error on time over {} points: mean {:.1f}%, max {:.1f}%", e.points,
                     e.mean_abs_percent, e.max_abs_percent);
}

double TermValue(const ModelParams& p, const std::string& term) {
  if (term == "latency_scale") return p.latency_scale;
  if (term == "net_latency_us") return p.net_latency_us;
  if (term == "net_efficiency") return p.net_efficiency;
  return p.intra_efficiency;
}

void WriteCalibration(const std::optional<CalibrationSummary>& summary, std::ostream& out) {
  if (!summary) return;
  const Calibration& cal = summary->calibration;
  std::string terms;
  for (const std::string& term : cal.fitted) {
    terms += fmt::format("{}{} {:.3f} (prior {:.3f})", terms.empty() ? "" : ", ", term,
                         TermValue(cal.params, term), TermValue(summary->prior, term));
  }
  std::vector<std::string_view> placements;
  placements.reserve(summary->placements.size());
  for (Placement p : summary->placements) placements.push_back(PlacementName(p));
  out << fmt::format("# calibrated on {}: {} x {}, {} rows ({})\n# fitted {}\n# fit {}\n",
                     summary->source, cal.nodes, summary->platform, cal.error.points,
                     Joined(placements), terms, ErrorText(cal.error));
  for (const std::string& note : cal.notes) out << "# note: " << note << "\n";
}

void Write(const PredictionRecord& r, std::ostream& out) {
  out << "# fabricscope model: predicted on " << Describe(r.platform, r.model) << "\n"
      << ModelLine("", r.model);
  WriteCalibration(r.calibration, out);
  for (const PredictedSweep& sweep : r.sweeps) {
    out << "#\n# " << SpecOf(sweep.collective).name << "\n" << kTableHeader;
    for (const Prediction& p : sweep.rows) {
      out << RowText(p.size, p.time_us, p.algbw, p.busbw, AlgorithmName(p.algorithm),
                     ProtocolName(p.protocol));
    }
  }
}

void WriteFabricShape(const SimulationRecord& r, std::ostream& out) {
  const sim::FabricOptions& fo = r.fabric;
  out << "# fabricscope model --simulate: " << Describe(r.platform, r.model) << "\n# "
      << fmt::format(
             "{}-tier {} fat-tree, leaves of {} ports at {:g}:1{}, {} routing (seed {}), {} QP(s)",
             fo.tiers, sim::DesignName(fo.design), fo.leaf_ports, fo.leaf_oversubscription,
             fo.tiers == 3 ? fmt::format(", pods of {} leaves at {:g}:1", fo.leaves_per_pod,
                                         fo.pod_oversubscription)
                           : std::string(),
             sim::RoutingName(r.routing), r.seed, r.qps_per_connection)
      << "\n# " << r.switches << " switches, " << r.links << " links; NICs at "
      << fmt::format("{:.1f}", fo.nic_gbs) << " GB/s, NVLink ring at "
      << fmt::format("{:.0f}", fo.nvlink_gbs) << " GB/s per GPU\n";
  if (!r.skipped.empty()) {
    out << "# skipped " << Joined(r.skipped) << ": the simulator does not break them into flows\n";
  }
}

void WriteSimulated(const SimulatedCollective& c, size_t top_links, std::ostream& out) {
  const sim::SimResult& r = c.result;
  out << "#\n# " << SpecOf(c.collective).name << ": " << r.flows << " flows, " << r.connections
      << " connections, " << r.link_uses << " link uses, " << r.events
      << " events; busbw of the transfer alone " << fmt::format("{:.1f}", r.busbw) << " GB/s\n";
  if (r.stalled) out << "# STALLED: " << r.stall_reason << "\n";
  out << kTableHeader;
  for (const SimulatedRow& row : c.rows) {
    out << RowText(row.size, r.stalled ? 0 : row.time_us, row.algbw, row.busbw, row.algorithm,
                   "Simple");
  }
  out << "#  tier         links    used  max-util  mean-util  max-conn\n";
  for (const auto& t : r.tiers) {
    out << fmt::format("#  {:<10} {:>7} {:>7}  {:>8.2f}  {:>9.2f}  {:>8.2f}\n",
                       sim::TierName(t.tier), t.links, t.used, t.max_utilization,
                       t.mean_utilization, t.max_connections);
  }
  const size_t top = std::min(r.links.size(), top_links);
  if (top > 0) out << "#  busiest links (utilization at peak, connections):\n";
  for (size_t i = 0; i < top; ++i) {
    const auto& l = r.links[i];
    out << fmt::format("#    {:<36} {:>5.2f}  {:>5.2f}\n", l.name, l.utilization, l.connections);
  }
}

void Write(const SimulationRecord& r, std::ostream& out) {
  WriteFabricShape(r, out);
  for (const SimulatedCollective& c : r.collectives) WriteSimulated(c, r.top_links, out);
}

void Write(const ComparisonRecord& r, std::ostream& out) {
  out << "# fabricscope model --compare " << r.source << ": measured on "
      << Describe(r.platform, r.model) << "\n"
      << ModelLine("predicted by ", r.model);
  WriteCalibration(r.calibration, out);
  for (Collective c : r.collectives) {
    const std::string name(SpecOf(c).name);
    std::vector<FitPoint> mine;
    for (const FitPoint& point : r.points) {
      if (point.collective == name) mine.push_back(point);
    }
    if (mine.empty()) continue;
    out << "#\n# " << name << "\n" << kCompareHeader;
    for (const FitPoint& point : mine) {
      out << fmt::format("{:>12}  {:<4} {} {}  {} {}  {:>+7.1f}  {:<13} {}\n", point.size,
                         point.placement == Placement::kOutOfPlace ? "out" : "in",
                         FormatNumber(point.measured_us, 10), FormatNumber(point.predicted_us, 10),
                         FormatNumber(point.measured_busbw, 10),
                         FormatNumber(point.predicted_busbw, 10), point.error_percent,
                         point.algorithm, point.protocol);
    }
    if (r.collectives.size() > 1)
      out << "# " << name << ": " << ErrorText(SummarizeFit(mine)) << "\n";
  }
  out << "#\n# " << ErrorText(r.error) << " ((predicted - measured) / measured)\n";
  if (!r.svg.empty()) out << "# plot: " << r.svg << "\n";
}

void Write(const fabric::FabricPrediction& p, std::ostream& out) {
  out << fabric::FormatPredictionText(p);
}

}  // namespace

void RenderModelText(const ModelRecord& record, std::ostream& out) {
  std::visit([&out](const auto& r) { Write(r, out); }, record);
}

}  // namespace fabricscope::model
