// What `fabricscope model` does, as a library: a request as the command line gives it, run
// into one record (a predicted table, a simulated fabric, a comparison with a measured run, or
// a prediction on a discovered fabric), and the reporters that render that record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fabricscope/fabric.h"
#include "fabricscope/fabric_sim.h"
#include "fabricscope/model.h"
#include "fabricscope/platform.h"
#include "fabricscope/result.h"

namespace fabricscope {

// What to model, as typed: RunModel checks every field and names its flag in errors.
struct ModelRequest {
  // What to model.
  std::string platform;
  int gpus_per_node = 0;
  double intra_node_busbw = 0;
  int nics = 0;
  double nic_rate = 0;
  std::string transport = "IB";
  double latency_floor = 0;
  int nodes = 2;
  std::string collective = "all_reduce";
  std::string min_bytes = "1K";
  std::string max_bytes = "8G";
  std::string step_bytes = "1M";
  int64_t step_factor = 2;
  // NCCL and hardware details.
  std::string algo;
  std::string proto;
  std::string gpu_arch;
  std::string cpu = "intel";
  bool pcie = false;
  int channels = 0;
  double net_efficiency = 0;
  bool in_network = false;
  std::string format = "text";
  // Measured runs (any file `analyze` reads).
  std::string calibrate;  // fit the model to this run, then predict with the fitted terms
  std::string compare;    // set the model's predictions against this run, size by size
  std::string svg;        // with --compare: the measured and predicted busbw curves, overlaid
  std::string placement = "both";  // the halves of each row to read: both, out or in
  std::string min_size = "0";      // measured rows below this size are left out
  int measured_nodes = 0;          // node count of a run that does not name its hosts
  // Whether the flags were typed: with --calibrate, --nodes defaults to the run's scale
  // and --collective to the run's collectives.
  bool nodes_given = false;
  bool collective_given = false;
  // The fabric simulator.
  bool simulate = false;
  std::string fabric;  // --fabric DIR: saved infiniband-diags outputs (docs/fabric.md)
  int tiers = 2;
  std::string design = "rail-optimized";
  int leaf_ports = 32;
  double oversubscription = 1;
  int leaves_per_pod = 32;
  double pod_oversubscription = 1;
  std::string routing = "ecmp";
  uint64_t seed = 1;
  int qps = 1;
  int peer_shift = 1;
  std::vector<std::string> fail_links;
  std::vector<std::string> degrade_links;  // NAME=FACTOR
  std::vector<std::string> slow_nodes;     // NODE=FACTOR
  int top_links = 10;
};

// A results file as the model is set against it: its runs merged (they must share a
// scale), the rows of collectives the model covers, and the node count.
struct MeasuredRun {
  std::string flag;  // "--calibrate" or "--compare", to name the file in errors
  std::string path;
  RunResult run;
  int nodes = 0;
  std::vector<Collective> collectives;  // in order of first appearance
};

// Reads `path` with ReadResultsFile, writing the readers' diagnostics and what is left out to
// `warnings`. One --collective names the collective of a log that does not say it; with
// --compare, --collective keeps only those rows. Throws UsageError naming `flag` and `path`
// when no row the model covers is left, the runs differ in scale, or the node count is unknown.
MeasuredRun ReadMeasured(const std::string& flag, const std::string& path,
                         const ModelRequest& request, const Platform& platform,
                         std::ostream& warnings);

// The run's node count: its host names, else `measured_nodes` (0: not given); the ranks must
// fill that many nodes of the platform. Throws UsageError saying which flag to give.
int NodeCountOf(const MeasuredRun& measured, int measured_nodes, const Platform& platform);

// "out-of-place" or "in-place".
std::string_view PlacementName(Placement placement);
// --placement: both, out or in. Throws UsageError for another value.
std::vector<Placement> WantedPlacements(const std::string& placement);
// The wanted placements the run has timed rows of at or above `min_size` (rccl-tests -O 0
// has in-place only). Throws UsageError when there is none.
std::vector<Placement> PlacementsOf(const ModelRequest& request, const MeasuredRun& measured,
                                    size_t min_size);

// The simulated fabric for the model's platform and scale: NICs at the model's efficiency,
// the shape from the request. Throws UsageError for a platform without NICs.
sim::FabricOptions FabricFor(const ModelRequest& request, const Platform& platform,
                             const CollectiveModel& model);

// The latency the analytic model gives the algorithm the simulator runs (P2P for sendrecv,
// CollNetDirect with in-network reduction, else Ring; the fastest when that one is off).
double LatencyFor(const CollectiveModel& model, Collective collective, size_t bytes,
                  bool in_network);

// What --calibrate fitted, and the prior it moved the terms from.
struct CalibrationSummary {
  std::string source;
  std::string platform;
  std::vector<Placement> placements;
  size_t min_size = 0;
  ModelParams prior;
  Calibration calibration;
};

// One collective's predicted table.
struct PredictedSweep {
  Collective collective = Collective::kAllReduce;
  std::vector<Prediction> rows;
};

// The analytic model's tables (with --calibrate: the calibrated model's).
struct PredictionRecord {
  Platform platform;
  CollectiveModel model;
  std::vector<PredictedSweep> sweeps;
  std::optional<CalibrationSummary> calibration;
};

// One size of a simulated collective: the analytic latency plus the simulated transfer.
struct SimulatedRow {
  size_t size = 0;
  double time_us = 0;  // meaningless when the collective stalled
  double algbw = 0;
  double busbw = 0;
  std::string_view algorithm;  // "Ring", "CollNet" or "P2P"; the protocol is Simple
};

// One collective on the simulated fabric.
struct SimulatedCollective {
  Collective collective = Collective::kAllReduce;
  sim::SimResult result;
  std::vector<SimulatedRow> rows;
};

// --simulate: the fabric, and every collective the simulator breaks into flows.
struct SimulationRecord {
  Platform platform;
  CollectiveModel model;
  sim::FabricOptions fabric{};
  sim::Routing routing = sim::Routing::kEcmp;
  uint64_t seed = 1;
  int qps_per_connection = 1;
  size_t simulated_bytes = 0;  // the size simulated; other sizes scale its transfer
  size_t switches = 0;
  size_t links = 0;
  std::vector<std::string> skipped{};  // collectives the simulator does not break into flows
  std::vector<SimulatedCollective> collectives{};
  size_t top_links = 0;  // busiest links to list
  bool Stalled() const;
};

// --compare: the model at the run's scale, row by row against it.
struct ComparisonRecord {
  Platform platform;
  CollectiveModel model;
  std::string source;
  std::vector<Collective> collectives;  // the run's, in its order
  size_t min_size = 0;
  std::vector<FitPoint> points{};  // by collective, size, placement
  FitError error{};
  std::optional<CalibrationSummary> calibration{};
  std::string svg{};  // the path of the overlay written, if --svg
};

// One run of `fabricscope model`, whatever it was asked.
using ModelRecord =
    std::variant<PredictionRecord, SimulationRecord, ComparisonRecord, fabric::FabricPrediction>;

// Runs the request: checks it (UsageError naming the flag), reads measured runs (their
// diagnostics to `warnings`), models or simulates, and writes the --svg overlay. Every
// computation is done before anything is rendered, so a bad option leaves no half report.
ModelRecord RunModel(const ModelRequest& request, std::ostream& warnings);

// A simulated collective that cannot complete (a failed link with no other path).
bool Stalled(const ModelRecord& record);

// A registry entry: an output format of `fabricscope model`.
struct ModelReporter {
  std::string_view name;
  std::string_view description;
  void (*render)(const ModelRecord& record, std::ostream& out);
};

// text (nccl-tests-like tables, for people) and json (one document, for programs).
const std::vector<ModelReporter>& ModelReporters();
// Throws UsageError listing the formats.
const ModelReporter& FindModelReporter(std::string_view name);

}  // namespace fabricscope
