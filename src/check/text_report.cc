// The text report: the platform and how it was chosen, then each test's verdict and its
// findings in the one text form of findings (finding.h), then the tally.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "check/reporters.h"
#include "fabricscope/check.h"
#include "fabricscope/finding.h"

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

// "OK        all_gather: 16 ranks on 2 nodes (host names), 2 runs: a.log:5, b.log:5".
std::string TestLine(const TestVerdict& t) {
  std::string scale = t.ranks > 0 ? fmt::format("{} rank{}", t.ranks, t.ranks == 1 ? "" : "s")
                                  : std::string("an unknown number of ranks");
  scale += t.nodes > 0
               ? fmt::format(" on {} node{} ({})", t.nodes, t.nodes == 1 ? "" : "s", t.nodes_from)
               : " on an unknown number of nodes";
  std::string where = fmt::format("{} run{}", t.runs, t.runs == 1 ? "" : "s");
  for (size_t i = 0; i < t.sources.size() && i < 3; ++i) {
    where += (i == 0 ? ": " : ", ") + t.sources[i];
  }
  if (t.sources.size() > 3) where += fmt::format(" and {} more", t.sources.size() - 3);
  return fmt::format("{:<10}{}: {}, {}\n", SeverityName(t.status), t.collective, scale, where);
}

// The source column as wide as the longest rule name, so that every test's findings line up.
size_t RuleWidth() {
  size_t width = std::string_view("platforms").size();  // the two that are not in the registry
  width = std::max(width, std::string_view("verdict").size());
  for (const CheckRuleInfo& rule : CheckRules()) width = std::max(width, rule.name.size());
  return width;
}

}  // namespace

std::string RenderCheckText(const CheckReport& report) {
  std::string out = Line("fabricscope check: ", PlatformLine(report.platform));
  for (const std::string& e : report.platform.evidence) out += Line("  from: ", e);
  for (const std::string& n : report.platform.notes) out += Line("  note: ", n);
  for (const std::string& n : report.notes) out += Line("note: ", n);
  const FindingTextStyle style{.indent = "  ", .source_width = RuleWidth()};
  std::array<int, 4> counts{};  // by Severity's value
  for (const TestVerdict& t : report.tests) {
    ++counts.at(static_cast<size_t>(t.status));
    out += "\n" + TestLine(t) + FindingsText(t.findings, style);
  }
  for (const PasteDiagnosis& d : report.diagnoses) {
    if (d.findings.empty()) continue;
    const std::string head =
        d.cause.empty() ? "nothing in it names a cause"
                        : (d.decided ? "cause " : "most likely cause (not decided) ") + d.cause;
    out += fmt::format("\n{:<10}diagnosis of {}: {}\n", SeverityName(d.status), d.source, head);
    out += FindingsText(d.findings, style);
  }
  out += fmt::format("\n{}: {} test{}", SeverityName(report.status), report.tests.size(),
                     report.tests.size() == 1 ? "" : "s");
  const auto named = std::count_if(report.diagnoses.begin(), report.diagnoses.end(),
                                   [](const PasteDiagnosis& d) { return !d.cause.empty(); });
  if (named > 0) out += fmt::format(", {} diagnos{}", named, named == 1 ? "is" : "es");
  for (Severity s : {Severity::kOk, Severity::kWarn, Severity::kCritical}) {
    const int n = counts.at(static_cast<size_t>(s));
    if (n > 0) out += fmt::format(", {} {}", n, SeverityName(s));
  }
  return out + "\n";
}

}  // namespace fabricscope::check
