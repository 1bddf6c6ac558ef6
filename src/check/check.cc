// The check: gather the tests, judge each against the platform with every rule, and take
// the worst finding that judged as the test's verdict and the worst test as the check's.
#include "fabricscope/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "check/bandwidth.h"
#include "check/evidence.h"
#include "check/rules.h"
#include "fabricscope/finding.h"
#include "fabricscope/joined.h"

namespace fabricscope {
namespace {

// The test judged against each other platform the log fits: the same verdict on all of them is
// said once; where they disagree, each is named and --platform asked for.
std::optional<Finding> JudgeCandidates(const check::TestEvidence& test,
                                       const PlatformChoice& choice, const CheckOptions& options,
                                       const check::BandwidthJudgement& judged) {
  if (choice.candidates.empty() || !choice.platform || !judged.measured) return std::nullopt;
  std::vector<std::string> verdicts = {std::string(SeverityName(judged.status)) + " on " +
                                       choice.platform->name};
  bool disagree = false;
  for (const Platform& other : choice.candidates) {
    PlatformChoice alternative;
    alternative.platform = other;
    alternative.origin = choice.origin;
    const check::BandwidthJudgement j = check::JudgeBandwidth(test, alternative, options);
    const std::string status = j.measured ? std::string(SeverityName(j.status)) : "not judged";
    verdicts.push_back(
        fmt::format("{} on {}{}", status, other.name,
                    j.expected ? fmt::format(" (expected {:.1f} GB/s)", j.expected->typical) : ""));
    disagree = disagree || !j.measured || j.status != judged.status;
  }
  Finding f;
  f.source = "platforms";
  if (disagree) {
    f.severity = Severity::kWarn;
    f.what = "the platforms the log fits disagree: " + Joined(verdicts) +
             ": give --platform NAME for the verdict of yours";
  } else {
    f.severity = Severity::kInfo;
    f.what = "the same verdict on every platform the log fits: " + Joined(verdicts);
  }
  return f;
}

// The worst of the findings that judged the test; none when every rule stood aside (INFO):
// INFO ranks above OK on the shared scale, but a rule that did not apply judges nothing.
std::optional<Severity> Judged(const std::vector<Finding>& findings) {
  std::optional<Severity> worst;
  for (const Finding& f : findings) {
    if (f.severity != Severity::kInfo) worst = std::max(worst.value_or(f.severity), f.severity);
  }
  return worst;
}

}  // namespace

std::vector<CheckRuleInfo> CheckRules() {
  std::vector<CheckRuleInfo> out;
  for (const check::Rule& rule : check::Rules()) out.push_back({rule.name, rule.description});
  return out;
}

CheckReport Check(const std::vector<RunResult>& runs, const PlatformChoice& platform,
                  const CheckOptions& options) {
  CheckReport report;
  report.platform = platform;
  const std::string known = platform.platform ? "" : Joined(Catalog::Builtin().Names());
  const check::ScaleHints hints{options.nodes,
                                platform.platform ? platform.platform->gpus_per_node : 0};
  for (const check::TestEvidence& test : check::GatherTests(runs, hints)) {
    const check::BandwidthJudgement bandwidth = check::JudgeBandwidth(test, platform, options);
    const check::RuleContext context{test, platform, options, bandwidth, known};
    TestVerdict verdict;
    verdict.collective = test.collective;
    verdict.sources = test.sources;
    verdict.ranks = test.ranks;
    verdict.nodes = test.nodes;
    verdict.nodes_from = test.nodes_from;
    verdict.runs = test.runs;
    verdict.measured_busbw = bandwidth.measured;
    verdict.expected = bandwidth.expected;
    verdict.confidence = bandwidth.confidence;
    for (const check::Rule& rule : check::Rules()) {
      std::optional<Finding> finding = rule.evaluate(context);
      if (!finding) continue;
      finding->source = std::string(rule.name);
      verdict.findings.push_back(std::move(*finding));
    }
    if (auto finding = JudgeCandidates(test, platform, options, bandwidth)) {
      verdict.findings.push_back(std::move(*finding));
    }
    if (const std::optional<Severity> judged = Judged(verdict.findings)) {
      verdict.status = *judged;
    } else {
      // Every rule stood aside: saying OK would claim a judgement nobody made.
      verdict.status = Severity::kWarn;
      verdict.findings.push_back({.severity = Severity::kWarn,
                                  .source = "verdict",
                                  .what = "nothing in these results could be judged"});
    }
    report.status = std::max(report.status, verdict.status);
    report.tests.push_back(std::move(verdict));
  }
  if (report.tests.empty()) {
    report.status = Severity::kWarn;
    report.notes.push_back("the results hold no test: nothing to judge");
  }
  return report;
}

}  // namespace fabricscope
