// The check: gather the tests, judge each against the platform with every rule, and take
// the worst finding as the test's verdict and the worst test as the check's.
#include "fabricscope/check.h"

#include <algorithm>

#include "check/bandwidth.h"
#include "check/evidence.h"
#include "check/rules.h"
#include "core/joined.h"

namespace fabricscope {

std::string_view StatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "PASS";
    case CheckStatus::kWarn:
      return "WARN";
    case CheckStatus::kFail:
      return "FAIL";
    case CheckStatus::kNotApplicable:
      break;
  }
  return "n/a";
}

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
      std::optional<CheckFinding> finding = rule.evaluate(context);
      if (!finding) continue;
      finding->rule = std::string(rule.name);
      verdict.status = std::max(verdict.status, finding->status);
      verdict.findings.push_back(std::move(*finding));
    }
    if (verdict.status == CheckStatus::kNotApplicable) {
      // Every rule stood aside: saying PASS would claim a judgement nobody made.
      verdict.status = CheckStatus::kWarn;
      verdict.findings.push_back(
          {"verdict", CheckStatus::kWarn, "nothing in these results could be judged", {}});
    }
    report.status = std::max(report.status, verdict.status);
    report.tests.push_back(std::move(verdict));
  }
  if (report.tests.empty()) {
    report.status = CheckStatus::kWarn;
    report.notes.push_back("the results hold no test: nothing to judge");
  }
  return report;
}

}  // namespace fabricscope
