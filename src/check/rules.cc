// The registry of verdict rules and the number formats their reasons share.
#include "check/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope::check {

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = {
      {"correctness", "wrong elements or errors in the run: CRITICAL whatever the speed",
       CorrectnessRule},
      {"platform",
       "whether the platform's figures apply: none chosen, or a host-memory run against a GPU "
       "platform",
       PlatformRule},
      {"gpu_model", "the run's GPUs against the platform's", GpuModelRule},
      {"ranks_per_node", "fewer ranks per node than the platform has GPUs", RanksPerNodeRule},
      {"algorithm",
       "busbw above the node's NIC total: Tree/NVLS on two nodes, not a network measurement",
       AlgorithmRule},
      {"bandwidth",
       "large-size busbw against the expected band (catalog, else model): percentage of "
       "expected, per-NIC wire rate and percentage of line rate, confidence with repeats",
       BandwidthRule},
      {"fabric",
       "with --fabric DIR: a run below its expectation pointed at the link or switch on its "
       "routes that explains it, against the busbw the fabric allows as routed",
       FabricRule},
      {"gpudirect",
       "NCCL's transport: Socket or RDMA without GDRDMA where the platform needs GPUDirect",
       GpuDirectRule},
      {"latency", "small-message time against the platform's floor (model beyond 2 nodes)",
       LatencyRule},
  };
  return rules;
}

bool Mentions(const std::vector<std::string>& lines, std::string_view word) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return line.find(word) != std::string::npos; });
}

std::string Gbs(double value) {
  // Host-memory and latency-bound runs are far below 1 GB/s: keep three significant digits.
  if (std::fabs(value) < 1) return fmt::format("{:.3g} GB/s", value);
  return fmt::format("{:.1f} GB/s", value);
}

std::string Percent(double fraction) { return fmt::format("{:.0f}%", 100.0 * fraction); }

std::string Micros(double us) {
  if (us >= 1000) return fmt::format("{:.2f} ms", us / 1000);
  return fmt::format("{:.1f} us", us);
}

}  // namespace fabricscope::check
