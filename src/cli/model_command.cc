#include "cli/model_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#include "core/joined.h"
#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/fabric_sim.h"
#include "fabricscope/model.h"
#include "fabricscope/parse.h"
#include "fabricscope/platform.h"
#include "fabricscope/plot.h"
#include "fabricscope/report.h"
#include "fabricscope/sizes.h"

namespace fabricscope::cli {
namespace {

using nlohmann::json;

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// "NAME=FACTOR" -> (NAME, FACTOR); the flag names the option in errors.
std::pair<std::string, double> NameAndFactor(const std::string& text, const char* flag) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UsageError(std::string(flag) + " '" + text + "' must be NAME=FACTOR, e.g. " +
                     (std::string(flag) == "--slow-node" ? "17=0.5" : "leaf0-spine1=0.5"));
  }
  try {
    size_t used = 0;
    const double factor = std::stod(text.substr(eq + 1), &used);
    if (used != text.size() - eq - 1) throw std::invalid_argument("trailing");
    return {text.substr(0, eq), factor};
  } catch (const std::exception&) {
    throw UsageError(std::string(flag) + " '" + text + "': '" + text.substr(eq + 1) +
                     "' is not a number (the fraction of capacity left, 0 to 1)");
  }
}

bool GenericGiven(const ModelFlags& f) {
  return f.gpus_per_node > 0 || f.intra_node_busbw > 0 || f.nics > 0 || f.nic_rate > 0 ||
         f.latency_floor > 0;
}

Platform ResolvePlatform(const ModelFlags& f) {
  if (!f.platform.empty()) {
    if (GenericGiven(f)) {
      throw UsageError("--platform " + f.platform +
                       " already describes the node: drop --gpus-per-node, --intra-node-busbw, "
                       "--nics, --nic-rate and --latency-floor, or drop --platform");
    }
    return Catalog::Builtin().Get(f.platform);
  }
  if (!GenericGiven(f)) {
    throw UsageError("give --platform NAME (one of " + Joined(Catalog::Builtin().Names()) +
                     ") or describe the node with --gpus-per-node, --intra-node-busbw, --nics "
                     "and --nic-rate");
  }
  GenericPlatformOptions g;
  g.gpus_per_node = f.gpus_per_node;
  g.intra_node_busbw = f.intra_node_busbw;
  g.nics = f.nics;
  g.nic_rate_gbps = f.nic_rate;
  g.transport = f.transport;
  if (f.net_efficiency > 0) g.ring_efficiency = std::min(1.0, f.net_efficiency);
  if (f.latency_floor > 0) g.latency_floor_us = f.latency_floor;
  return GenericPlatform(g);
}

ModelOptions ToModelOptions(const ModelFlags& f) {
  ModelOptions o;
  if (f.nodes < 1) throw UsageError("--nodes must be at least 1");
  o.nodes = f.nodes;
  if (!f.gpu_arch.empty()) o.arch = ParseArch(f.gpu_arch);
  o.cpu = ParseCpuVendor(f.cpu);
  o.nvlink = !f.pcie;
  if (f.channels < 0 || f.channels > 256)
    throw UsageError("--channels must be 1 to 256 (0 = derived)");
  o.channels = f.channels;
  if (f.net_efficiency < 0 || f.net_efficiency > 1.5) {
    throw UsageError("--net-efficiency must be a fraction of NIC line rate, in (0, 1.5]");
  }
  if (f.net_efficiency > 0) o.net_efficiency = f.net_efficiency;
  o.in_network_reduction = f.in_network;
  for (const auto& a : SplitList(f.algo)) o.algorithms.push_back(ParseAlgorithm(a));
  for (const auto& p : SplitList(f.proto)) o.protocols.push_back(ParseProtocol(p));
  return o;
}

std::vector<size_t> Sizes(const ModelFlags& f) {
  if (f.step_factor < 1 || f.step_factor > (1 << 20)) {
    throw UsageError("-f/--stepfactor must be 1 (use -i) to 1048576");
  }
  return SizeSweep(ParseSize(f.min_bytes, "-b/--minbytes"), ParseSize(f.max_bytes, "-e/--maxbytes"),
                   ParseSize(f.step_bytes, "-i/--stepbytes"), static_cast<uint64_t>(f.step_factor));
}

void CheckFormat(const std::string& format) {
  if (format != "text" && format != "json") {
    throw UsageError("--format '" + format + "' is unknown: use text or json");
  }
}

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

std::string RowText(size_t size, double time_us, double algbw, double busbw, std::string_view algo,
                    std::string_view proto) {
  return fmt::format("{:>12}  {}  {}  {}  {:<13} {}\n", size, FormatNumber(time_us, 10),
                     FormatNumber(algbw, 7), FormatNumber(busbw, 7), algo, proto);
}

const char* kTableHeader =
    "#       size        time    algbw    busbw  algo          proto\n"
    "#        (B)        (us)   (GB/s)   (GB/s)\n";

std::string Describe(const Platform& p, const CollectiveModel& m) {
  return fmt::format(
      "{} x {} ({} ranks, {} GPUs per node, {} x {:g} Gb/s {}{})", m.nodes(), p.name, m.nranks(),
      m.ranks_per_node(), p.nics, p.nic_rate_gbps, p.transport,
      m.nvlink_domain() ? "; the nodes share one NVLink domain: NVLink, not the NICs" : "");
}

// What a model was calibrated on, as the report's JSON member and its header lines.
struct CalibrationReport {
  json doc;
  std::string text;
};

int Predict(const ModelFlags& f, const Platform& platform, const ModelOptions& options,
            const std::vector<Collective>& collectives, const std::vector<size_t>& sizes,
            const CalibrationReport* calibration = nullptr) {
  const CollectiveModel model(platform, options);
  const ModelParams& p = model.params();
  if (f.format == "json") {
    json rows = json::array();
    for (Collective c : collectives) {
      for (const Prediction& r : model.Sweep(c, sizes)) {
        rows.push_back(RowJson(c, r.size, r.time_us, r.algbw, r.busbw, AlgorithmName(r.algorithm),
                               ProtocolName(r.protocol)));
      }
    }
    json doc = {{"mode", "predict"},
                {"platform", platform.name},
                {"nodes", model.nodes()},
                {"gpus_per_node", model.ranks_per_node()},
                {"nranks", model.nranks()},
                {"gpu_arch", std::string(ArchName(model.arch()))},
                {"channels", model.channels()},
                {"intra_busbw", model.intra_busbw()},
                {"net_busbw", model.net_busbw()},
                {"nccl_tuning", NcclTuningSource()},
                {"params", ParamsJson(p)},
                {"rows", rows}};
    if (calibration != nullptr) doc["calibration"] = calibration->doc;
    std::cout << doc.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "# fabricscope model: predicted on " << Describe(platform, model) << "\n"
            << fmt::format(
                   "# NCCL {} tuning model; {} GPUs; NIC efficiency {:.3f}, latency x {:.2f}, "
                   "+{:.1f} us per network step\n",
                   NcclTuningVersion(), ArchName(model.arch()), p.net_efficiency, p.latency_scale,
                   p.net_latency_us);
  if (calibration != nullptr) std::cout << calibration->text;
  for (Collective c : collectives) {
    std::cout << "#\n# " << SpecOf(c).name << "\n" << kTableHeader;
    for (const Prediction& r : model.Sweep(c, sizes)) {
      std::cout << RowText(r.size, r.time_us, r.algbw, r.busbw, AlgorithmName(r.algorithm),
                           ProtocolName(r.protocol));
    }
  }
  return kExitOk;
}

sim::FabricOptions FabricFor(const ModelFlags& f, const Platform& platform,
                             const CollectiveModel& model) {
  sim::FabricOptions fo;
  fo.nodes = model.nodes();
  fo.gpus_per_node = platform.gpus_per_node;
  fo.nics_per_node = platform.nics;
  if (platform.nics < 1) throw UsageError("--simulate needs NICs: the platform has none");
  fo.nic_gbs = platform.nic_rate_gbps / 8.0 * model.params().net_efficiency;
  fo.uplink_gbs = fo.nic_gbs;
  fo.nvlink_gbs = platform.gpus_per_node > 1 ? model.intra_busbw() : 0;
  fo.tiers = f.tiers;
  fo.design = sim::ParseDesign(f.design);
  fo.leaf_ports = f.leaf_ports;
  fo.leaf_oversubscription = f.oversubscription;
  fo.leaves_per_pod = f.leaves_per_pod;
  fo.pod_oversubscription = f.pod_oversubscription;
  return fo;
}

// The latency the analytic model gives the algorithm the simulator runs.
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

int Simulate(const ModelFlags& f, const Platform& platform, ModelOptions options,
             const std::vector<Collective>& requested, const std::vector<size_t>& sizes) {
  const CollectiveModel model(platform, options);
  sim::Fabric fabric(FabricFor(f, platform, model));
  for (const auto& name : f.fail_links) fabric.DegradeLink(name, 0.0);
  for (const auto& text : f.degrade_links) {
    const auto [name, factor] = NameAndFactor(text, "--degrade-link");
    fabric.DegradeLink(name, factor);
  }
  for (const auto& text : f.slow_nodes) {
    const auto [node, factor] = NameAndFactor(text, "--slow-node");
    int index = -1;
    try {
      index = std::stoi(node);
    } catch (const std::exception&) {
      throw UsageError("--slow-node '" + text + "': '" + node + "' is not a node number");
    }
    fabric.SlowNode(index, factor);
  }
  if (f.top_links < 0) throw UsageError("--top-links must be 0 or more");

  std::vector<Collective> collectives;
  std::vector<std::string> skipped;
  for (Collective c : requested) {
    const bool ok = c == Collective::kAllReduce || c == Collective::kAllGather ||
                    c == Collective::kReduceScatter || c == Collective::kBroadcast ||
                    c == Collective::kReduce || c == Collective::kSendRecv;
    if (ok) {
      collectives.push_back(c);
    } else {
      skipped.emplace_back(SpecOf(c).name);
    }
  }
  if (collectives.empty()) {
    throw UsageError(
        "--simulate breaks all_reduce, all_gather, reduce_scatter, broadcast, "
        "reduce and sendrecv into flows; choose one of them with --collective");
  }
  if (f.in_network && requested.size() != 1) {
    throw UsageError(
        "--in-network with --simulate models all_reduce: give --collective all_reduce");
  }

  sim::SimOptions so;
  so.routing = sim::ParseRouting(f.routing);
  so.seed = f.seed;
  so.qps_per_connection = f.qps;
  so.channels = f.channels;
  so.peer_shift = f.peer_shift;
  so.in_network_reduction = f.in_network;
  so.bytes = sizes.back();
  const auto& fo = fabric.options();
  const std::string shape = fmt::format(
      "{}-tier {} fat-tree, leaves of {} ports at {:g}:1{}, {} routing (seed {}), {} QP(s)",
      fo.tiers, sim::DesignName(fo.design), fo.leaf_ports, fo.leaf_oversubscription,
      fo.tiers == 3
          ? fmt::format(", pods of {} leaves at {:g}:1", fo.leaves_per_pod, fo.pod_oversubscription)
          : std::string(),
      sim::RoutingName(so.routing), so.seed, so.qps_per_connection);

  // Every simulation first: a bad option must not leave half a report on stdout.
  std::vector<sim::SimResult> results;
  for (Collective c : collectives) {
    so.collective = c;
    so.latency_us = 0;  // fair shares do not depend on the size: the latency comes per row
    results.push_back(sim::Simulate(fabric, so));
  }

  json docs = json::array();
  bool stalled = false;
  std::ostringstream text;
  if (f.format == "text") {
    text << "# fabricscope model --simulate: " << Describe(platform, model) << "\n# " << shape
         << "\n# " << fabric.switch_count() << " switches, " << fabric.link_count()
         << " links; NICs at " << fmt::format("{:.1f}", fo.nic_gbs) << " GB/s, NVLink ring at "
         << fmt::format("{:.0f}", fo.nvlink_gbs) << " GB/s per GPU\n";
    if (!skipped.empty()) {
      text << "# skipped " << Joined(skipped) << ": the simulator does not break them into flows\n";
    }
  }
  for (size_t ci = 0; ci < collectives.size(); ++ci) {
    const Collective c = collectives[ci];
    const sim::SimResult& r = results[ci];
    stalled = stalled || r.stalled;
    json rows = json::array();
    std::string table;
    for (size_t size : sizes) {
      const double latency = LatencyFor(model, c, size, f.in_network);
      const double time =
          latency + r.transfer_us * static_cast<double>(size) / static_cast<double>(so.bytes);
      const double algbw = r.stalled ? 0 : static_cast<double>(size) / (1e3 * time);
      const double busbw = algbw * SpecOf(c).bus_factor(model.nranks());
      const std::string_view algo = c == Collective::kSendRecv ? "P2P"
                                    : f.in_network             ? "CollNet"
                                                               : "Ring";
      rows.push_back(RowJson(c, size, r.stalled ? -1 : time, algbw, busbw, algo, "Simple"));
      table += RowText(size, r.stalled ? 0 : time, algbw, busbw, algo, "Simple");
    }
    const size_t top = std::min(r.links.size(), static_cast<size_t>(f.top_links));
    if (f.format == "json") {
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
      docs.push_back({{"collective", std::string(SpecOf(c).name)},
                      {"stalled", r.stalled},
                      {"stall_reason", r.stall_reason},
                      {"simulated_size", so.bytes},
                      {"flows", r.flows},
                      {"connections", r.connections},
                      {"link_uses", r.link_uses},
                      {"events", r.events},
                      {"transfer_busbw", r.busbw},
                      {"rows", rows},
                      {"tiers", tiers},
                      {"links", links}});
      continue;
    }
    text << "#\n# " << SpecOf(c).name << ": " << r.flows << " flows, " << r.connections
         << " connections, " << r.link_uses << " link uses, " << r.events
         << " events; busbw of the transfer alone " << fmt::format("{:.1f}", r.busbw) << " GB/s\n";
    if (r.stalled) text << "# STALLED: " << r.stall_reason << "\n";
    text << kTableHeader << table;
    text << "#  tier         links    used  max-util  mean-util  max-conn\n";
    for (const auto& t : r.tiers) {
      text << fmt::format("#  {:<10} {:>7} {:>7}  {:>8.2f}  {:>9.2f}  {:>8.2f}\n",
                          sim::TierName(t.tier), t.links, t.used, t.max_utilization,
                          t.mean_utilization, t.max_connections);
    }
    if (top > 0) text << "#  busiest links (utilization at peak, connections):\n";
    for (size_t i = 0; i < top; ++i) {
      const auto& l = r.links[i];
      text << fmt::format("#    {:<36} {:>5.2f}  {:>5.2f}\n", l.name, l.utilization, l.connections);
    }
  }
  if (f.format == "json") {
    json doc = {{"mode", "simulate"},
                {"platform", platform.name},
                {"nodes", model.nodes()},
                {"gpus_per_node", model.ranks_per_node()},
                {"nranks", model.nranks()},
                {"fabric",
                 {{"tiers", fo.tiers},
                  {"design", std::string(sim::DesignName(fo.design))},
                  {"leaf_ports", fo.leaf_ports},
                  {"oversubscription", fo.leaf_oversubscription},
                  {"leaves_per_pod", fo.leaves_per_pod},
                  {"pod_oversubscription", fo.pod_oversubscription},
                  {"routing", std::string(sim::RoutingName(so.routing))},
                  {"seed", so.seed},
                  {"switches", fabric.switch_count()},
                  {"links", fabric.link_count()},
                  {"nic_gbs", fo.nic_gbs},
                  {"nvlink_gbs", fo.nvlink_gbs}}},
                {"params", ParamsJson(model.params())},
                {"results", docs}};
    std::cout << doc.dump(2) << "\n";
  }
  std::cout << text.str();
  if (stalled) {
    std::cerr << "fabricscope model: the simulated collective cannot complete (see STALLED)\n";
    return kExitFailed;
  }
  return kExitOk;
}

// ---- measured runs: --calibrate and --compare ----

// A results file as the model is set against it: its runs merged (they must share a
// scale), the rows of collectives the model covers, and the node count.
struct MeasuredRun {
  std::string flag;  // "--calibrate" or "--compare", to name the file in errors
  std::string path;
  RunResult run;
  int nodes = 0;
  std::vector<Collective> collectives;  // in order of first appearance
};

const CollectiveSpec* SpecNamed(const std::string& name) {
  for (const auto& spec : Collectives()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string_view PlacementName(Placement placement) {
  return placement == Placement::kOutOfPlace ? "out-of-place" : "in-place";
}

std::vector<Placement> WantedPlacements(const std::string& placement) {
  if (placement == "both") return {Placement::kOutOfPlace, Placement::kInPlace};
  if (placement == "out") return {Placement::kOutOfPlace};
  if (placement == "in") return {Placement::kInPlace};
  throw UsageError("--placement '" + placement + "': choose both, out or in");
}

// The node count: the run's host names, else --measured-nodes; the ranks must fit the
// platform. A rank count alone is not taken for one: ranks / GPUs per node assumes full
// nodes, which a log without host names cannot confirm (4 nodes of 4 GPUs would pass for 2
// of 8 and be fitted at the wrong scale), so the error suggests it and the user confirms.
int NodeCountOf(const MeasuredRun& m, const ModelFlags& f, const Platform& platform) {
  const std::string where = m.flag + " " + m.path;
  if (f.measured_nodes < 0) throw UsageError("--measured-nodes must be at least 1");
  const int named = NodesOf(m.run);
  if (named > 0 && f.measured_nodes > 0 && named != f.measured_nodes) {
    throw UsageError(where + ": the run names " + std::to_string(named) +
                     " hosts, but --measured-nodes says " + std::to_string(f.measured_nodes) +
                     ": drop --measured-nodes");
  }
  const int nodes = named > 0 ? named : f.measured_nodes;
  const int gpus = platform.gpus_per_node;
  if (nodes == 0) {
    std::string hint;
    if (m.run.nranks > 0 && gpus > 0 && m.run.nranks % gpus == 0) {
      hint = fmt::format(" (its {} ranks on full nodes of {} GPUs: --measured-nodes {})",
                         m.run.nranks, gpus, m.run.nranks / gpus);
    }
    throw UsageError(where +
                     ": the run does not say how many nodes it ran on (no '#  Rank N ... on "
                     "HOST' device lines): give --measured-nodes N" +
                     hint);
  }
  if (m.run.nranks > 0 && m.run.nranks != nodes * gpus) {
    throw UsageError(where + ": the run has " + std::to_string(m.run.nranks) + " ranks, but " +
                     std::to_string(nodes) + " nodes of " + platform.name + " (" +
                     std::to_string(gpus) + " GPUs each) make " + std::to_string(nodes * gpus) +
                     ": check --platform (or --gpus-per-node) and --measured-nodes");
  }
  return nodes;
}

MeasuredRun ReadMeasured(const std::string& flag, const std::string& path, const ModelFlags& f,
                         const Platform& platform) {
  // One --collective also names the collective of a log that does not say it, as the
  // reader's warning advises.
  ParseOptions parse;
  if (f.collective_given) {
    const std::vector<Collective> named = ParseCollectives(f.collective);
    if (named.size() == 1) parse.collective = std::string(SpecOf(named.front()).name);
  }
  ParsedResults parsed = ReadResultsFile(path, parse);
  for (const Diagnostic& d : parsed.diagnostics) std::cerr << d.ToString() << "\n";
  MeasuredRun m;
  m.flag = flag;
  m.path = path;
  const std::string where = flag + " " + path;
  if (parsed.RowCount() == 0) {
    throw UsageError(where +
                     ": no result rows could be read (see above); expected an nccl-tests or "
                     "rccl-tests log, nccl-tests JSON (-J), rccl-tests JSON or CSV (-Z), or "
                     "fabricscope's JSON or CSV");
  }
  bool first = true;
  for (RunResult& run : parsed.runs) {
    if (run.rows.empty()) continue;
    if (first) {
      m.run = std::move(run);
      first = false;
      continue;
    }
    if (run.nranks != m.run.nranks || NodesOf(run) != NodesOf(m.run)) {
      throw UsageError(where + ": its runs have " + std::to_string(m.run.nranks) + " and " +
                       std::to_string(run.nranks) +
                       " ranks: the model is set against one scale at a time, so give one "
                       "file per scale");
    }
    m.run.rows.insert(m.run.rows.end(), run.rows.begin(), run.rows.end());
  }

  // Rows of collectives the model does not cover are left out, and said so.
  std::vector<Collective> only;
  if (f.collective_given && flag == "--compare") only = ParseCollectives(f.collective);
  std::vector<std::string> uncovered;
  std::vector<std::string> unwanted;
  std::vector<ResultRow> kept;
  for (ResultRow& row : m.run.rows) {
    const CollectiveSpec* spec = SpecNamed(row.collective);
    if (spec == nullptr) {
      if (std::find(uncovered.begin(), uncovered.end(), row.collective) == uncovered.end()) {
        uncovered.push_back(row.collective);
      }
      continue;
    }
    if (!only.empty() && std::find(only.begin(), only.end(), spec->id) == only.end()) {
      if (std::find(unwanted.begin(), unwanted.end(), row.collective) == unwanted.end()) {
        unwanted.push_back(row.collective);
      }
      continue;
    }
    if (std::find(m.collectives.begin(), m.collectives.end(), spec->id) == m.collectives.end()) {
      m.collectives.push_back(spec->id);
    }
    kept.push_back(std::move(row));
  }
  if (kept.empty() && !uncovered.empty() && unwanted.empty()) {
    std::vector<std::string> names;
    for (const auto& spec : Collectives()) names.emplace_back(spec.name);
    throw UsageError(where + ": its rows are of " + Joined(uncovered) +
                     ", which the model does not cover (it models " + Joined(names) + ")");
  }
  if (kept.empty()) {
    throw UsageError(where + ": it has no rows of --collective " + f.collective + " (it has " +
                     Joined(unwanted) + (uncovered.empty() ? "" : ", " + Joined(uncovered)) + ")");
  }
  if (!uncovered.empty()) {
    std::cerr << path << ": warning: the rows of " << Joined(uncovered)
              << " are left out: the model does not cover them\n";
  }
  m.run.rows = std::move(kept);
  m.nodes = NodeCountOf(m, f, platform);
  return m;
}

// The wanted placements the run has timed rows of (rccl-tests -O 0 has in-place only).
std::vector<Placement> PlacementsOf(const ModelFlags& f, const MeasuredRun& m, size_t min_size) {
  std::vector<Placement> out;
  for (Placement placement : WantedPlacements(f.placement)) {
    for (const ResultRow& row : m.run.rows) {
      const auto& half = placement == Placement::kOutOfPlace ? row.out_of_place : row.in_place;
      if (half && half->time_us > 0 && row.size > 0 && row.size >= min_size) {
        out.push_back(placement);
        break;
      }
    }
  }
  if (out.empty()) {
    throw UsageError(
        m.flag + " " + m.path + ": no " +
        (f.placement == "both" ? std::string("row") : "--placement " + f.placement + " row") +
        " with a time" + (min_size > 0 ? " at or above --min-size " + f.min_size : std::string()) +
        " to read");
  }
  return out;
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

// Fits the model to the --calibrate run and reports what moved.
std::pair<Calibration, CalibrationReport> CalibrateOn(const ModelFlags& f, const Platform& platform,
                                                      const ModelOptions& base,
                                                      const MeasuredRun& m, size_t min_size) {
  CalibrationOptions co;
  co.placements = PlacementsOf(f, m, min_size);
  co.min_size = min_size;
  co.nodes = m.nodes;
  Calibration cal;
  ModelParams prior;
  try {
    cal = Calibrate(platform, base, m.run, co);
    ModelOptions at_scale = base;
    at_scale.nodes = m.nodes;
    at_scale.params.reset();
    prior = PriorParams(platform, at_scale);
  } catch (const UsageError& e) {
    throw UsageError(m.flag + " " + m.path + ": " + e.what());
  }
  std::vector<std::string> placements;
  for (Placement p : co.placements) placements.emplace_back(PlacementName(p));
  json points = json::array();
  for (const FitPoint& p : cal.points) points.push_back(PointJson(p));
  CalibrationReport report;
  report.doc = {{"source", m.path},
                {"nodes", cal.nodes},
                {"placements", placements},
                {"min_size", min_size},
                {"fitted", cal.fitted},
                {"prior", ParamsJson(prior)},
                {"params", ParamsJson(cal.params)},
                {"notes", cal.notes},
                {"error", ErrorJson(cal.error)},
                {"points", points}};
  std::string terms;
  for (const std::string& term : cal.fitted) {
    terms += fmt::format("{}{} {:.3f} (prior {:.3f})", terms.empty() ? "" : ", ", term,
                         TermValue(cal.params, term), TermValue(prior, term));
  }
  report.text = fmt::format("# calibrated on {}: {} x {}, {} rows ({})\n# fitted {}\n# fit {}\n",
                            m.path, cal.nodes, platform.name, cal.error.points, Joined(placements),
                            terms, ErrorText(cal.error));
  for (const std::string& note : cal.notes) report.text += "# note: " + note + "\n";
  return {std::move(cal), std::move(report)};
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

const char* kCompareHeader =
    "#       size  place      time (us)            busbw (GB/s)         error  algo          "
    "proto\n"
    "#        (B)         measured  predicted    measured  predicted   time %\n";

// The model at the run's scale, size by size against the run.
int CompareRun(const ModelFlags& f, const Platform& platform, ModelOptions options,
               const MeasuredRun& m, size_t min_size, const CalibrationReport* calibration) {
  options.nodes = m.nodes;
  const std::vector<Placement> placements = PlacementsOf(f, m, min_size);
  std::vector<FitPoint> points;
  std::optional<CollectiveModel> built;
  try {
    built.emplace(platform, options);
    for (Placement placement : placements) {
      auto half = CompareWithMeasured(*built, m.run, placement, min_size);
      points.insert(points.end(), half.begin(), half.end());
    }
  } catch (const UsageError& e) {
    throw UsageError(m.flag + " " + m.path + ": " + e.what());
  }
  const CollectiveModel& model = *built;
  auto rank = [&](const FitPoint& p) {
    const auto at =
        std::find(m.collectives.begin(), m.collectives.end(), FindCollective(p.collective).id);
    return std::make_tuple(at - m.collectives.begin(), p.size, p.placement);
  };
  std::stable_sort(points.begin(), points.end(),
                   [&](const FitPoint& a, const FitPoint& b) { return rank(a) < rank(b); });
  const FitError error = SummarizeFit(points);

  // The picture first: a path that cannot be written must not leave half a report.
  if (!f.svg.empty()) {
    WriteFile(f.svg, OverlaySvg(points, m, placements,
                                fmt::format("measured and predicted busbw, {} x {}", m.nodes,
                                            platform.name)));
  }
  const ModelParams& p = model.params();
  if (f.format == "json") {
    json rows = json::array();
    for (const FitPoint& point : points) rows.push_back(PointJson(point));
    json doc = {{"mode", "compare"},
                {"source", m.path},
                {"platform", platform.name},
                {"nodes", model.nodes()},
                {"gpus_per_node", model.ranks_per_node()},
                {"nranks", model.nranks()},
                {"gpu_arch", std::string(ArchName(model.arch()))},
                {"channels", model.channels()},
                {"nccl_tuning", NcclTuningSource()},
                {"params", ParamsJson(p)},
                {"min_size", min_size},
                {"rows", rows},
                {"error", ErrorJson(error)}};
    if (calibration != nullptr) doc["calibration"] = calibration->doc;
    if (!f.svg.empty()) doc["svg"] = f.svg;
    std::cout << doc.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "# fabricscope model --compare " << m.path << ": measured on "
            << Describe(platform, model) << "\n"
            << fmt::format(
                   "# predicted by NCCL {} tuning model; {} GPUs; NIC efficiency {:.3f}, latency "
                   "x {:.2f}, +{:.1f} us per network step\n",
                   NcclTuningVersion(), ArchName(model.arch()), p.net_efficiency, p.latency_scale,
                   p.net_latency_us);
  if (calibration != nullptr) std::cout << calibration->text;
  for (Collective c : m.collectives) {
    const std::string name(SpecOf(c).name);
    std::vector<FitPoint> mine;
    for (const FitPoint& point : points) {
      if (point.collective == name) mine.push_back(point);
    }
    if (mine.empty()) continue;
    std::cout << "#\n# " << name << "\n" << kCompareHeader;
    for (const FitPoint& point : mine) {
      std::cout << fmt::format(
          "{:>12}  {:<4} {} {}  {} {}  {:>+7.1f}  {:<13} {}\n", point.size,
          point.placement == Placement::kOutOfPlace ? "out" : "in",
          FormatNumber(point.measured_us, 10), FormatNumber(point.predicted_us, 10),
          FormatNumber(point.measured_busbw, 10), FormatNumber(point.predicted_busbw, 10),
          point.error_percent, point.algorithm, point.protocol);
    }
    if (m.collectives.size() > 1) {
      std::cout << "# " << name << ": " << ErrorText(SummarizeFit(mine)) << "\n";
    }
  }
  std::cout << "#\n# " << ErrorText(error) << " ((predicted - measured) / measured)\n";
  if (!f.svg.empty()) std::cout << "# plot: " << f.svg << "\n";
  return kExitOk;
}

int Measured(const ModelFlags& f, const Platform& platform, const ModelOptions& options,
             const std::vector<size_t>& sizes) {
  if (f.simulate) {
    throw UsageError(std::string(f.calibrate.empty() ? "--compare" : "--calibrate") +
                     " sets the analytic model against a run; --simulate does not use it. To "
                     "simulate with a calibrated NIC efficiency, give --simulate "
                     "--net-efficiency F with the F --calibrate prints");
  }
  if (f.nodes_given && !f.compare.empty()) {
    throw UsageError(
        "--nodes with --compare: the comparison is at the measured run's scale; to predict "
        "another scale, use --calibrate FILE --nodes N without --compare");
  }
  const size_t min_size = ParseSize(f.min_size, "--min-size");
  WantedPlacements(f.placement);  // a bad value is refused before any file is read

  std::optional<Calibration> cal;
  CalibrationReport report;
  std::vector<Collective> measured_collectives;
  if (!f.calibrate.empty()) {
    const MeasuredRun m = ReadMeasured("--calibrate", f.calibrate, f, platform);
    auto fitted = CalibrateOn(f, platform, options, m, min_size);
    cal = std::move(fitted.first);
    report = std::move(fitted.second);
    measured_collectives = m.collectives;
  }
  const CalibrationReport* shown = cal ? &report : nullptr;
  if (!f.compare.empty()) {
    const MeasuredRun m = ReadMeasured("--compare", f.compare, f, platform);
    return CompareRun(f, platform, cal ? cal->options : options, m, min_size, shown);
  }
  ModelOptions at = cal->options;
  at.nodes = f.nodes_given ? f.nodes : cal->nodes;
  const std::vector<Collective> collectives =
      f.collective_given ? ParseCollectives(f.collective) : measured_collectives;
  return Predict(f, platform, at, collectives, sizes, shown);
}

}  // namespace

int ExecuteModel(const ModelFlags& f) {
  CheckFormat(f.format);
  if (!f.fabric.empty()) {
    fabric::PredictOptions on;
    on.collective = f.collective;
    if (f.net_efficiency > 0) on.efficiency = f.net_efficiency;
    const auto p = fabric::PredictOnFabric(fabric::ParseFabric(fabric::ReadSaved(f.fabric)), on);
    std::cout << (f.format == "json" ? fabric::FormatPredictionJson(p)
                                     : fabric::FormatPredictionText(p));
    return kExitOk;
  }
  const Platform platform = ResolvePlatform(f);
  const ModelOptions options = ToModelOptions(f);
  const std::vector<Collective> collectives = ParseCollectives(f.collective);
  const std::vector<size_t> sizes = Sizes(f);
  if (!f.calibrate.empty() || !f.compare.empty()) return Measured(f, platform, options, sizes);
  if (f.placement != "both" || f.min_size != "0" || f.measured_nodes != 0) {
    throw UsageError(
        "--placement, --min-size and --measured-nodes read a measured run: give --calibrate "
        "FILE or --compare FILE");
  }
  if (!f.simulate) return Predict(f, platform, options, collectives, sizes);
  return Simulate(f, platform, options, collectives, sizes);
}

CommandAction SetupModelCommand(CLI::App& app) {
  auto f = std::make_shared<ModelFlags>();
  app.add_option("--platform", f->platform,
                 "catalog platform (docs/catalog.md), e.g. gcp-a3-ultragpu-8g, dgx-h100");
  app.add_option("--gpus-per-node", f->gpus_per_node, "generic platform: GPUs per node");
  app.add_option("--intra-node-busbw", f->intra_node_busbw,
                 "generic platform: GB/s busbw of a healthy single-node ring");
  app.add_option("--nics", f->nics, "generic platform: GPU-fabric NICs per node");
  app.add_option("--nic-rate", f->nic_rate, "generic platform: line rate of one NIC, Gb/s");
  app.add_option("--transport", f->transport, "generic platform: IB, RoCE, EFA, TCPX, TCPXO or TCP")
      ->capture_default_str();
  app.add_option("--latency-floor", f->latency_floor,
                 "generic platform: measured 2-node small-message time, us (sets the latency)");
  CLI::Option* nodes =
      app.add_option("--nodes", f->nodes,
                     "node count to predict or simulate (with --calibrate: the run's, unless "
                     "given)")
          ->capture_default_str();
  CLI::Option* collective =
      app.add_option("--collective", f->collective,
                     "a collective, a comma-separated list, or all (with --calibrate: the run's; "
                     "with --compare: only these of the run's)")
          ->capture_default_str();
  app.add_option("-b,--minbytes", f->min_bytes, "smallest size (K/M/G suffixes)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", f->max_bytes, "largest size")->capture_default_str();
  app.add_option("-i,--stepbytes", f->step_bytes, "additive step (when -f is 1)")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", f->step_factor, "multiplicative step")->capture_default_str();
  app.add_option("--algo", f->algo,
                 "like NCCL_ALGO: only these (Ring,Tree,NVLS,NVLSTree,CollNetDirect,"
                 "CollNetChain,PAT)");
  app.add_option("--proto", f->proto, "like NCCL_PROTO: only these (LL,LL128,Simple)");
  app.add_option("--gpu-arch", f->gpu_arch,
                 "volta, ampere, hopper or blackwell (default: from the platform's GPU)");
  app.add_option("--cpu", f->cpu, "intel or amd: NCCL's LL cap and network overhead")
      ->capture_default_str();
  app.add_flag("--pcie", f->pcie, "GPUs joined by PCIe, not NVLink (no LL128, no NVLS)");
  app.add_option("--channels", f->channels, "NCCL channels (0: two per NIC)")
      ->capture_default_str();
  app.add_option("--net-efficiency", f->net_efficiency,
                 "fraction of NIC line rate a ring carries (default: the catalog's band, else "
                 "the transport's)");
  app.add_flag("--in-network", f->in_network,
               "in-network reduction (SHARP): CollNet algorithms, multi-node NVLS; with "
               "--simulate, all_reduce through switch aggregation trees");
  app.add_option("--format", f->format, "text or json")->capture_default_str();

  auto* measured = app.add_option_group(
      "measured runs",
      "any file `fabricscope analyze` reads: nccl-tests/rccl-tests logs, JSON, CSV");
  measured
      ->add_option("--calibrate", f->calibrate,
                   "fit the model's latency and NIC efficiency to this run, print the fit and "
                   "predict with the fitted terms at --nodes")
      ->type_name("FILE");
  CLI::Option* compare =
      measured
          ->add_option("--compare", f->compare,
                       "predicted against measured for every row of this run, at its scale "
                       "(with --calibrate: the calibrated model)")
          ->type_name("FILE");
  measured
      ->add_option("--svg", f->svg,
                   "write the measured (solid) and predicted (dashed) busbw curves to this SVG")
      ->type_name("FILE")
      ->needs(compare);
  measured
      ->add_option("--placement", f->placement, "the halves of each row to read: both, out or in")
      ->capture_default_str();
  measured
      ->add_option("--min-size", f->min_size, "leave measured rows below this size out (e.g. 1M)")
      ->type_name("SIZE")
      ->capture_default_str();
  measured
      ->add_option("--measured-nodes", f->measured_nodes,
                   "node count of a run whose log names no hosts")
      ->type_name("N");

  app.add_option("--fabric", f->fabric,
                 "predict all_reduce (ring) or alltoall busbw on a discovered InfiniBand fabric, "
                 "as routed now and with balanced routes: a directory of saved infiniband-diags "
                 "outputs (fabricscope fabric --save DIR; docs/fabric.md)")
      ->type_name("DIR");
  auto* sim = app.add_option_group("fabric simulator", "with --simulate");
  CLI::Option* simulate = sim->add_flag(
      "--simulate", f->simulate, "simulate the fabric flow by flow instead of the analytic model");
  sim->add_option("--tiers", f->tiers, "2 (leaf-spine) or 3 (leaf-aggregation-core in pods)")
      ->capture_default_str();
  sim->add_option("--design", f->design, "classic (top-of-rack), rail-optimized or rail-only")
      ->capture_default_str();
  sim->add_option("--leaf-ports", f->leaf_ports, "NIC-facing ports per leaf")
      ->capture_default_str();
  sim->add_option("--oversubscription", f->oversubscription, "leaf down:up ratio (2 = 2:1)")
      ->capture_default_str();
  sim->add_option("--leaves-per-pod", f->leaves_per_pod, "3 tiers: leaves per pod")
      ->capture_default_str();
  sim->add_option("--pod-oversubscription", f->pod_oversubscription,
                  "3 tiers: aggregation down:up ratio")
      ->capture_default_str();
  sim->add_option("--routing", f->routing, "ecmp (seeded hash) or balanced (adaptive)")
      ->capture_default_str();
  sim->add_option("--seed", f->seed, "ECMP hash seed")->capture_default_str();
  sim->add_option("--qps", f->qps, "queue pairs per connection, each hashed on its own")
      ->capture_default_str();
  sim->add_option("--peer-shift", f->peer_shift, "sendrecv: node i sends to node i + shift")
      ->capture_default_str();
  sim->add_option("--fail-link", f->fail_links, "fail a link: 'a-b' (both ways) or 'a->b'");
  sim->add_option("--degrade-link", f->degrade_links, "LINK=FACTOR: capacity left, 0 to 1");
  sim->add_option("--slow-node", f->slow_nodes, "NODE=FACTOR: the node's NICs at FACTOR");
  sim->add_option("--top-links", f->top_links, "busiest links to list")->capture_default_str();
  // Every simulator option but --simulate itself needs it.
  for (CLI::Option* option : sim->get_options()) {
    if (option != simulate) option->needs(simulate);
  }
  return [f, nodes, collective](const CommandContext&) {
    f->nodes_given = nodes->count() > 0;
    f->collective_given = collective->count() > 0;
    return ExecuteModel(*f);
  };
}

}  // namespace fabricscope::cli
