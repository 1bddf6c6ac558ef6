// `fabricscope model`: predicted collective performance for a platform and scale, calibrated
// on and compared with measured runs, or (with --simulate) a flow-level simulation of the
// fabric.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/command.h"

namespace fabricscope::cli {

// The flags as typed, before they are checked and converted.
struct ModelFlags {
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

// Declares the flags and returns the action.
CommandAction SetupModelCommand(CLI::App& app);

// Runs the command on parsed flags; returns the exit code (1 when a simulated collective
// cannot complete). Throws UsageError for bad flags.
int ExecuteModel(const ModelFlags& flags);

}  // namespace fabricscope::cli
