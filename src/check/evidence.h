// Private: the runs of one test gathered into what the rules judge: its scale, its sweeps
// (one per run and -N cycle), NCCL's transport lines, the environment and the errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabricscope/analyze.h"
#include "fabricscope/result.h"

namespace fabricscope::check {

// One pass over the sizes: per size, the better busbw of the two placements (what the
// fabric can do) and the lower time.
struct Sweep {
  std::string source;
  std::map<size_t, double> busbw;
  std::map<size_t, double> time_us;
};

// Everything the rules know about one test.
struct TestEvidence {
  std::string collective;
  std::vector<std::string> sources;
  size_t runs = 0;
  int ranks = 0;
  int nodes = 0;  // 0: unknown
  std::string nodes_from;
  std::vector<Sweep> sweeps;
  bool host_memory = false;  // ranks computed on host memory (Gloo, MPI), not on GPUs
  std::string backend;
  std::string device_name;              // the first rank's device, as the run names it
  std::vector<std::string> hosts;       // the distinct host names in rank order
  std::vector<std::string> transports;  // NCCL's transport lines, each once
  std::vector<std::string> env;         // NAME=value recorded with the runs
  std::vector<std::string> run_errors;
  std::optional<int64_t> wrong;  // empty: no run counted wrong elements
  int64_t out_of_bounds = 0;
  double peak_busbw = 0;
  size_t peak_size = 0;
  size_t largest_size = 0;

  // The value of an environment variable recorded with the runs; empty when absent.
  std::optional<std::string> Env(const std::string& name) const;
  int ranks_per_node() const { return nodes > 0 && ranks > 0 ? ranks / nodes : 0; }
};

// What the node count is taken from when a run does not name its hosts.
struct ScaleHints {
  std::optional<int> nodes;  // --nodes
  int gpus_per_node = 0;     // the platform's; 0 when there is none
};

// Groups the runs' tests: runs of the same collective on the same ranks and nodes are
// repeats of one test. Order: first appearance.
std::vector<TestEvidence> GatherTests(const std::vector<RunResult>& runs, const ScaleHints& hints);

}  // namespace fabricscope::check
