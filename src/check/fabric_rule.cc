// The `fabric` rule (check --fabric DIR): a run below its expectation is explained by the
// fabric it crossed when a finding lies on its routes (a degraded or down link, error
// counters, a missing uplink, a dead switch) or the routes themselves limit its collective
// (an unused spine, imbalance); the rule names that element with the tools' lines and puts
// the measured busbw against what the fabric allows as routed.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/rules.h"
#include "fabricscope/fabric.h"

namespace fabricscope::check {
namespace {

// Every collective but alltoall runs as a ring across nodes (NCCL's Ring algorithm; sendrecv
// is a ring shift): its traffic is the ring's.
bool RingTraffic(const std::string& collective) { return collective != "alltoall"; }

bool Below(Severity s) { return s == Severity::kWarn || s == Severity::kCritical; }

// "16 hosts (h1, h2, ... h16: the run's host names)" for messages.
std::string HostList(const std::vector<std::string>& hosts, const std::string& from) {
  const std::string names = hosts.size() <= 4
                                ? fmt::format("{}", fmt::join(hosts, ", "))
                                : fmt::format("{}, {}, ... {}", hosts[0], hosts[1], hosts.back());
  return fmt::format("{} hosts ({}: {})", hosts.size(), names, from);
}

// What the fabric allows the collective, as routed and balanced, and what that makes of the
// platform's expectation.
std::string RoutedContext(const fabric::JobImpact& job, const BandwidthJudgement& bw, Finding& f) {
  std::string text;
  const fabric::CollectiveLoad& load = job.load;
  if (!load.unroutable.empty()) {
    text = "a flow of this job cannot be routed: " + load.unroutable;
  } else if (!load.links.empty()) {
    const fabric::LinkLoad& hot = load.links.front();
    text = fmt::format(
        "routed as programmed over {}, {}'s hottest link {} -> {} limits it to 1/{:.2f} of "
        "the host links' rate (balanced routes: 1/{:.2f})",
        HostList(job.hosts, job.hosts_from), job.collective, hot.from, hot.to, load.limit_factor,
        load.balanced_factor);
    f.figures["fabric_limit_factor"] = load.limit_factor;
    f.figures["fabric_balanced_factor"] = load.balanced_factor;
  } else {
    text = "the fabric has no forwarding tables to route this job's traffic (save dump_fts)";
  }
  if (job.prediction) {
    const fabric::FabricPrediction& p = *job.prediction;
    text += fmt::format(
        "; fabricscope model --fabric predicts {:.2f} GB/s as routed and {:.2f} GB/s balanced "
        "on its {:.2f} GB/s host links",
        p.as_routed.busbw_gbs, p.balanced.busbw_gbs, p.host_gbs);
    f.figures["fabric_routed_fraction"] = job.RoutedFraction();
  }
  if (bw.expected && bw.measured && job.prediction) {
    const double allows = bw.expected->typical * job.RoutedFraction();
    f.figures["fabric_expected_busbw"] = allows;
    text += fmt::format(
        ", so this fabric as routed allows {:.0f}% of the expected {}: {}; the measured {} is "
        "{:.0f}% of that",
        100 * job.RoutedFraction(), Gbs(bw.expected->typical), Gbs(allows), Gbs(*bw.measured),
        allows > 0 ? 100 * *bw.measured / allows : 0.0);
  }
  if (!job.missing.empty()) {
    text += fmt::format(
        "; the run's hosts {} are not HCAs of the fabric (give their HCAs in rank order with "
        "--fabric-hosts)",
        fmt::join(job.missing, ", "));
  }
  return text;
}

std::string Brief(const Finding& f) { return f.source + " " + f.where; }

// Findings whose effect the routed model cannot show: errors and retransmissions, two ends
// that disagree, no subnet manager. On the path, they can slow a run the routes do not limit.
bool BeyondTheModel(const Finding& f) {
  const std::string_view category = fabric::CategoryOf(f.source);
  return category == "counters" || category == "subnet-manager" || f.source == "link-mismatch";
}

std::string BriefList(const std::vector<const Finding*>& findings) {
  std::vector<std::string> parts;
  parts.reserve(findings.size());
  for (const Finding* x : findings) parts.push_back(Brief(*x));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// The finding that explains the run: with the routes limiting it, the one on the hottest link
// (ImpactOnJob puts it first) or else the first that costs capacity; without, the first whose
// effect the routes cannot show. nullptr: none.
const Finding* Culprit(const fabric::JobImpact& job, bool limited) {
  for (const Finding& f : job.on_path) {
    if (limited ? !BeyondTheModel(f) : BeyondTheModel(f)) return &f;
  }
  return limited && !job.on_path.empty() ? &job.on_path.front() : nullptr;
}

// The run is below its expectation: name what in the fabric explains it, or say nothing does.
void Explain(const fabric::JobImpact& job, const BandwidthJudgement& bw, Finding& f) {
  const std::string context = RoutedContext(job, bw, f);
  const bool limited = job.load.limit_factor > 1.05 || !job.load.unroutable.empty();
  const Finding* lead = Culprit(job, limited);
  std::vector<const Finding*> others;
  for (const Finding& x : job.on_path) {
    if (&x != lead) others.push_back(&x);
  }
  f.figures["fabric_findings_on_path"] = static_cast<double>(job.on_path.size());
  if (lead == nullptr && !limited) {
    f.severity = Severity::kOk;
    f.what = "the fabric does not explain it: " + context +
             (others.empty() ? "; no finding on this job's links or switches"
                             : "; on its path without limiting it: " + BriefList(others)) +
             ". Look at the nodes instead: fabricscope doctor on each, fabricscope locate to "
             "find the slow one";
    return;
  }
  f.severity = bw.status;
  if (lead == nullptr) {
    // Nothing is broken, the routes alone concentrate the traffic.
    const fabric::LinkLoad& hot = job.load.links.front();
    f.where = hot.from + " -> " + hot.to;
    f.what = "the fabric's routing explains it: " + context;
    f.fix =
        "re-route with a fat-tree aware engine (opensm -R ftree) and check the uplinks of the "
        "switches involved (fabricscope fabric --from DIR -v)";
    return;
  }
  // The element leads the line (`where`) and the fabric finding's fix is the rule's.
  f.where = lead->where;
  f.evidence = lead->evidence;
  f.fix = lead->fix;
  f.what = fmt::format(
      "the fabric {} ({}, {}): {}; {}{}",
      limited ? "explains it" : "may explain it, the routes do not limit it", lead->source,
      SeverityName(lead->severity), lead->what, context,
      others.empty() ? "" : fmt::format(". Also on this job's path: {}", BriefList(others)));
}

}  // namespace

std::optional<Finding> FabricRule(const RuleContext& c) {
  if (c.options.fabric == nullptr) return std::nullopt;
  Finding f;
  if (c.test.nodes == 1) {
    f.severity = Severity::kInfo;  // the rule stands aside, saying why
    f.what = "one node: this test's traffic does not cross the fabric";
    return f;
  }
  const std::vector<std::string>& hosts =
      c.options.fabric_hosts.empty() ? c.test.hosts : c.options.fabric_hosts;
  const fabric::JobImpact job =
      fabric::ImpactOnJob(*c.options.fabric, hosts, RingTraffic(c.test.collective));
  if (Below(c.bandwidth.status)) {
    Explain(job, c.bandwidth, f);
    return f;
  }
  // Healthy (or not judged): the fabric's view, and what lies on the path without limiting it.
  f.severity = c.bandwidth.status == Severity::kOk ? Severity::kOk : Severity::kInfo;
  std::vector<std::string> on_path;
  for (const Finding& x : job.on_path) on_path.push_back(Brief(x));
  f.what = fmt::format("{}{}{}",
                       f.severity == Severity::kOk ? "busbw is healthy on this fabric; "
                                                   : "busbw not judged; the fabric's view: ",
                       RoutedContext(job, c.bandwidth, f),
                       on_path.empty() ? ""
                                       : fmt::format("; on its path without limiting it: {}",
                                                     fmt::join(on_path, "; ")));
  if (!job.elsewhere.empty()) {
    f.what += fmt::format(" ({} other fabric finding{} off this job's path)", job.elsewhere.size(),
                          job.elsewhere.size() == 1 ? "" : "s");
  }
  return f;
}

}  // namespace fabricscope::check
