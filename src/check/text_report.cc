// The text report: the platform and how it was chosen, then each test's verdict and one line
// per finding.
#include <fmt/format.h>

#include "check/reporters.h"
#include "fabricscope/check.h"

namespace fabricscope::check {
namespace {

// One line per fact, however long: terminals wrap, and grep finds a whole reason.
std::string Line(const std::string& lead, const std::string& text) { return lead + text + "\n"; }

std::string PlatformLine(const PlatformChoice& choice) {
  if (!choice.platform) return "no platform: " + choice.unavailable;
  const Platform& p = *choice.platform;
  std::string gpus = choice.generic() ? fmt::format("{} GPUs (ranks) a node", p.gpus_per_node)
                                      : fmt::format("{} x {}", p.gpus_per_node, p.gpu_model);
  if (p.Mnnvl()) gpus += fmt::format(" ({} in one NVLink domain)", p.nvlink_domain_gpus);
  return fmt::format("{} ({}): {}, {} x {:g} Gb/s {}, NIC total {:.1f} GB/s a node", p.name,
                     choice.origin, gpus, p.nics, p.nic_rate_gbps, p.transport, p.NicTotalGBs());
}

}  // namespace

std::string RenderCheckText(const CheckReport& report) {
  std::string out = Line("fabricscope check: ", PlatformLine(report.platform));
  for (const std::string& e : report.platform.evidence) out += Line("  from: ", e);
  for (const std::string& n : report.platform.notes) out += Line("  note: ", n);
  for (const std::string& n : report.notes) out += Line("note: ", n);
  int counts[4] = {};
  for (const TestVerdict& t : report.tests) {
    ++counts[static_cast<int>(t.status)];
    std::string scale = fmt::format("{} rank{}", t.ranks, t.ranks == 1 ? "" : "s");
    scale += t.nodes > 0
                 ? fmt::format(" on {} node{} ({})", t.nodes, t.nodes == 1 ? "" : "s", t.nodes_from)
                 : " on an unknown number of nodes";
    std::string where = fmt::format("{} run{}", t.runs, t.runs == 1 ? "" : "s");
    for (size_t i = 0; i < t.sources.size() && i < 3; ++i) {
      where += (i == 0 ? ": " : ", ") + t.sources[i];
    }
    if (t.sources.size() > 3) where += fmt::format(" and {} more", t.sources.size() - 3);
    out += fmt::format("\n{:<4}  {}: {}, {}\n", StatusName(t.status), t.collective, scale, where);
    for (const CheckFinding& f : t.findings) {
      out += Line(fmt::format("  {:<4}  {:<14} ", StatusName(f.status), f.rule), f.reason);
      for (const std::string& e : f.evidence) out += Line("        evidence: ", e);
    }
  }
  out += fmt::format("\n{}: {} test{}", StatusName(report.status), report.tests.size(),
                     report.tests.size() == 1 ? "" : "s");
  for (CheckStatus s : {CheckStatus::kPass, CheckStatus::kWarn, CheckStatus::kFail}) {
    const int n = counts[static_cast<int>(s)];
    if (n > 0) out += fmt::format(", {} {}", n, StatusName(s));
  }
  return out + "\n";
}

}  // namespace fabricscope::check
