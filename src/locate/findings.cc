// locate's verdict as findings of the one model every diagnosis reports in
// (fabricscope/finding.h): the report keeps its detail (pairs, samples, suspects), the
// findings say what it comes to, and the exit code follows from them by the one rule.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/finding.h"
#include "fabricscope/locate.h"
#include "fabricscope/strings.h"
#include "locate/matrix.h"

namespace fabricscope {
namespace {

// What to look at for each kind of culprit, in SuspectKind's order.
constexpr std::array<std::string_view, 9> kFixes = {
    // kNode
    "take it out of the job and look at it: `fabricscope doctor` on it (NICs, PCIe, GPU, "
    "firmware), then its cables",
    // kNic
    "look at that NIC, its cable and its switch port: `fabricscope doctor` on the node, "
    "`fabricscope fabric` for the port's errors and speed",
    // kLink
    "look at the path between the two (both ends fine with other peers): their cables and "
    "ports and the switches between them (`fabricscope fabric`)",
    // kIntraNode
    "look at the node's own interconnect (NVLink, PCIe, NUMA placement): `fabricscope doctor` "
    "on it",
    // kUplink
    "look at what is named (a leaf: all its uplinks; leaf-spine: that cable and its two "
    "ports), their errors and speeds (`fabricscope fabric`)",
    // kSpineLink
    "look at that cable and its two ports (`fabricscope fabric`)",
    // kSomeUplinks
    "find which of the leaf's uplinks: give --topology the fabric's saved outputs with "
    "dump_fts.txt (the routes), or look at its uplinks' errors (`fabricscope fabric`)",
    // kRail
    "look at that rail's switch or plane (`fabricscope fabric`)",
    // kSpine
    "look at that spine switch and its links (`fabricscope fabric`)",
};

// The what to do of a kind of suspect.
std::string FixOf(SuspectKind kind) { return std::string(NameOf(kind, kFixes)); }

// The noise every pair was judged against: the largest rail's (sd of log bandwidth between
// repeats of one pair).
double NoiseOf(const LocateReport& report) {
  double sigma = 0;
  for (const RailBaseline& b : report.baselines) {
    if (std::isfinite(b.sigma)) sigma = std::max(sigma, b.sigma);
  }
  return sigma;
}

// "fs3", "fs2-fs5", "fs3 rail 1", "leaf3-spine1", "rail 2": the suspect without its kind,
// which is the finding's source.
std::string WhereOf(const LocateReport& report, const Suspect& s) {
  switch (s.kind) {
    case SuspectKind::kUplink:
    case SuspectKind::kSpineLink:
    case SuspectKind::kSomeUplinks:
    case SuspectKind::kSpine:
      return s.element;
    case SuspectKind::kRail:
      return "rail " + std::to_string(s.rails.empty() ? 0 : s.rails.front());
    default:
      break;
  }
  const std::string described = locate::Describe(report, s);  // "node fs3"
  return described.substr(described.find(' ') + 1);
}

// The numbers behind a suspect; a ratio that is not a number (a node never measured) is left
// out.
std::map<std::string, double> FiguresOf(const LocateReport& report, const Suspect& s) {
  std::map<std::string, double> figures = {{"confidence", s.confidence},
                                           {"agreeing", static_cast<double>(s.agreeing)},
                                           {"measurements", static_cast<double>(s.measurements)},
                                           {"noise", NoiseOf(report)}};
  if (std::isfinite(s.ratio)) figures["ratio"] = s.ratio;
  return figures;
}

// The element kind of a suspect, in the finding model's words (fabricscope/finding.h).
std::string ElementOf(SuspectKind kind) {
  switch (kind) {
    case SuspectKind::kNode:
    case SuspectKind::kIntraNode:
      return "node";
    case SuspectKind::kNic:
      return "nic";
    case SuspectKind::kLink:
    case SuspectKind::kSpineLink:
      return "link";
    case SuspectKind::kRail:
      return "rail";
    default:
      return "switch";  // an uplink, a leaf's uplinks, a spine
  }
}

// The host names of a suspect's nodes (a node's ranks may share one host with others when
// processes are the nodes: --group-by process), each once.
std::vector<std::string> HostsOf(const LocateReport& report, const Suspect& s) {
  std::vector<std::string> hosts;
  for (const int node : s.nodes) {
    const std::string host = report.HostOfNode(node);
    if (!host.empty() && std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
      hosts.push_back(host);
    }
  }
  return hosts;
}

Finding Culprit(const LocateReport& report, const Suspect& s) {
  return {.severity = Severity::kCritical,
          .source = std::string(NameOf(s.kind)),
          .what = fmt::format("{} (confidence {:.2f}: {} of {} measurements agree)", s.evidence,
                              s.confidence, s.agreeing, s.measurements),
          .where = WhereOf(report, s),
          .fix = FixOf(s.kind),
          .figures = FiguresOf(report, s),
          .element = ElementOf(s.kind),
          .nodes = HostsOf(report, s)};
}

// What decides a suspect that is not decided: the report's own next step when it has one.
std::string NextStep(const LocateReport& report) {
  return report.next_step.empty()
             ? std::string("measure more: raise --max-sweeps or --budget, or -n/--iters")
             : report.next_step;
}

Finding Undecided(const LocateReport& report, const Suspect& s) {
  // A node's evidence states the noise already; a link's does not.
  const bool says_noise = s.evidence.find("noise") != std::string::npos;
  return {.severity = Severity::kWarn,
          .source = std::string(NameOf(s.kind)),
          .what = says_noise ? s.evidence
                             : fmt::format("{}; the noise is {:.2f} (sd of log bandwidth between "
                                           "repeats of one pair)",
                                           s.evidence, NoiseOf(report)),
          .where = WhereOf(report, s),
          .fix = NextStep(report),
          .figures = FiguresOf(report, s),
          .decided = false,
          .element = ElementOf(s.kind),
          .nodes = HostsOf(report, s)};
}

// The verdict itself when no culprit carries it: cleared (OK), or nobody named and nobody
// cleared (undecided, the noise and what would decide).
void AddVerdict(const LocateReport& report, std::vector<Finding>& out) {
  const std::map<std::string, double> figures = {{"noise", NoiseOf(report)},
                                                 {"sweeps", static_cast<double>(report.sweeps)},
                                                 {"threshold", report.options.threshold},
                                                 {"confidence", report.options.confidence}};
  switch (report.status) {
    case LocateStatus::kFound:
      return;  // the culprits say it
    case LocateStatus::kClear:
      out.push_back({.severity = Severity::kOk,
                     .source = "verdict",
                     .what = locate::Verdict(report),
                     .figures = figures});
      return;
    case LocateStatus::kInconclusive:
    case LocateStatus::kAmbiguous:
      break;
  }
  const bool ambiguous = report.status == LocateStatus::kAmbiguous;
  out.push_back({.severity = Severity::kWarn,
                 .source = "verdict",
                 .what = (ambiguous ? "ambiguous: " : "nobody named: ") + report.unknown,
                 .fix = NextStep(report),
                 .figures = figures,
                 .decided = false});
}

Finding StragglerFinding(const LocateReport& report, const Straggler& s) {
  const std::string node =
      s.node >= 0 ? report.layout.names[static_cast<size_t>(s.node)] : std::string("?");
  return {.severity = Severity::kWarn,
          .source = "straggler",
          .what = fmt::format(
              "{:.0f} us in the all_reduce over every rank, {:.2f}x the median rank: "
              "{}",
              s.time_us, s.ratio,
              s.late ? "arrives late (every other rank waits for it)" : "held up inside the call"),
          .where = fmt::format("rank {} on {}", s.rank, node),
          .fix = s.late ? "look at that rank's compute, data loading and GPU (`fabricscope doctor` "
                          "on its node)"
                        : "look at that rank's path: its NIC and GPU (`fabricscope doctor` on its "
                          "node)",
          .figures = {
              {"rank", static_cast<double>(s.rank)}, {"time_us", s.time_us}, {"ratio", s.ratio}}};
}

}  // namespace

std::string LocateReport::HostOfNode(int node) const {
  const auto n = static_cast<size_t>(node);
  if (node < 0 || n >= layout.ranks.size() || layout.ranks[n].empty()) return "";
  const auto rank = static_cast<size_t>(layout.ranks[n].front());
  return rank < ranks.size() ? ranks[rank].hostname : "";
}

std::vector<Finding> LocateFindings(const LocateReport& report) {
  std::vector<Finding> out;
  for (const Suspect& s : report.suspects) out.push_back(Culprit(report, s));
  for (const Suspect& s : report.undecided) out.push_back(Undecided(report, s));
  AddVerdict(report, out);
  for (const Straggler& s : report.stragglers) out.push_back(StragglerFinding(report, s));
  for (const std::string& note : report.notes) {
    out.push_back({.severity = Severity::kInfo, .source = "note", .what = note});
  }
  return out;
}

}  // namespace fabricscope
