// The check: gather the tests, judge each against the platform with every rule, and take
// the worst finding that judged as the test's verdict and the worst test as the check's.
#include "fabricscope/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

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

// A platform guessed from the GPU model alone (the log does not say its NICs) judges a run's
// speed against NICs the run may not have: a slow verdict is a WARN that says so, not a
// CRITICAL that would blame a healthy cluster with fewer or slower NICs.
void CapGuessed(std::vector<Finding>& findings, const PlatformChoice& choice) {
  for (Finding& f : findings) {
    if (f.severity != Severity::kCritical || (f.source != "bandwidth" && f.source != "latency")) {
      continue;
    }
    f.severity = Severity::kWarn;
    f.what += fmt::format(
        "; but the log does not say its NICs (no NCCL 'NET/' line), so {} is a guess from the "
        "GPU model: give --platform NAME or describe the NICs (--nics N --nic-rate Gb/s) for a "
        "verdict",
        choice.platform ? choice.platform->name : "the platform");
  }
}

// "file:line" of every line the diagnoses call harmless where it stands.
std::set<std::string> HarmlessLines(const std::vector<PasteDiagnosis>& diagnoses) {
  std::set<std::string> out;
  for (const PasteDiagnosis& d : diagnoses) {
    for (const Finding& f : d.findings) {
      if (f.source != "note") continue;
      for (const std::string& e : f.evidence) {
        const size_t colon = e.find(':', d.source.size() + 1);
        if (colon != std::string::npos) out.insert(e.substr(0, colon));
      }
    }
  }
  return out;
}

// The run errors that are not harmless lines: an NCCL WARN the knowledge base calls a note
// where it stands (a plugin it looked for and did without) does not fail the run.
void DropHarmless(std::vector<std::string>& errors, const std::set<std::string>& harmless) {
  std::erase_if(errors, [&](const std::string& e) {
    const size_t first = e.find(':');
    const size_t second = first == std::string::npos ? first : e.find(':', first + 1);
    return second != std::string::npos && harmless.count(e.substr(0, second)) > 0;
  });
}

// The diagnosis of the input `source` ("file:line" of a run) came from, when it named a cause.
const PasteDiagnosis* DiagnosisOf(const std::vector<PasteDiagnosis>& diagnoses,
                                  const std::vector<std::string>& sources) {
  for (const PasteDiagnosis& d : diagnoses) {
    if (d.cause.empty()) continue;
    for (const std::string& s : sources) {
      if (s.starts_with(d.source + ":")) return &d;
    }
  }
  return nullptr;
}

// The runs read from `source`.
std::vector<RunResult> RunsOf(const std::vector<RunResult>& runs, const std::string& source) {
  std::vector<RunResult> out;
  for (const RunResult& run : runs) {
    if (!run.source.starts_with(source + ":")) continue;
    // The shapes need the run's facts and whether it has rows, not its rows.
    RunResult shape;
    shape.source = run.source;
    shape.nranks = run.nranks;
    shape.ranks = run.ranks;
    shape.errors = run.errors;
    if (!run.rows.empty()) shape.rows.push_back(run.rows.front());
    if (run.rows.size() > 1) shape.rows.push_back(run.rows.back());
    out.push_back(std::move(shape));
  }
  return out;
}

// A paste whose diagnosis named no cause, diagnosed again with the rules that flagged its
// tests: GPUDirect not in use, seen in the numbers (busbw at the platform's figure without
// it) when no line says why, is the cause the platform's transport names.
void Rediagnose(CheckReport& report, const std::vector<RunResult>& runs,
                const std::vector<PasteEvidence>& pastes) {
  for (size_t i = 0; i < pastes.size() && i < report.diagnoses.size(); ++i) {
    PasteDiagnosis& d = report.diagnoses[i];
    if (!d.cause.empty()) continue;
    PasteEvidence flagged = pastes[i];
    for (const TestVerdict& t : report.tests) {
      const bool ours = std::any_of(t.sources.begin(), t.sources.end(), [&](const std::string& s) {
        return s.starts_with(d.source + ":");
      });
      for (const Finding& f : t.findings) {
        if (ours && f.source == "gpudirect" && f.severity >= Severity::kWarn) {
          flagged.rule_flags.push_back(f.source);
        }
      }
    }
    if (flagged.rule_flags.empty()) continue;
    d = DiagnosePaste(flagged, RunsOf(runs, d.source), report.platform);
    if (d.status != Severity::kInfo) report.status = std::max(report.status, d.status);
  }
}

// `hosts` in rank order (empty where a log named none) as a sorted set.
std::vector<std::string> UniqueHosts(const std::vector<std::string>& hosts) {
  std::set<std::string> unique;
  for (const std::string& h : hosts) {
    if (!h.empty()) unique.insert(h);
  }
  return {unique.begin(), unique.end()};
}

// What a test's findings point at: its one node, or the set of nodes it ran on.
void Blame(TestVerdict& verdict) {
  if (verdict.hosts.empty()) return;
  const bool one_node = verdict.hosts.size() == 1 && verdict.nodes <= 1;
  for (Finding& f : verdict.findings) {
    if (!f.element.empty()) continue;
    f.element = one_node ? "node" : "nodes";
    f.nodes = verdict.hosts;
  }
}

}  // namespace

std::vector<CheckRuleInfo> CheckRules() {
  std::vector<CheckRuleInfo> out;
  for (const check::Rule& rule : check::Rules()) out.push_back({rule.name, rule.description});
  return out;
}

CheckReport Check(const std::vector<RunResult>& runs, const PlatformChoice& platform,
                  const CheckOptions& options, const std::vector<PasteEvidence>& pastes) {
  CheckReport report;
  report.platform = platform;
  for (const PasteEvidence& paste : pastes) {
    report.diagnoses.push_back(DiagnosePaste(paste, RunsOf(runs, paste.source), platform));
    if (report.diagnoses.back().status != Severity::kInfo) {
      report.status = std::max(report.status, report.diagnoses.back().status);
    }
  }
  const std::set<std::string> harmless = HarmlessLines(report.diagnoses);
  const std::string known = platform.platform ? "" : Joined(Catalog::Builtin().Names());
  const check::ScaleHints hints{options.nodes,
                                platform.platform ? platform.platform->gpus_per_node : 0};
  for (check::TestEvidence& test : check::GatherTests(runs, hints)) {
    DropHarmless(test.run_errors, harmless);
    // A paste with no table whose diagnosis named the cause: its WARN lines are no test.
    if (test.ranks == 0 && test.sweeps.empty() && DiagnosisOf(report.diagnoses, test.sources)) {
      continue;
    }
    const check::BandwidthJudgement bandwidth = check::JudgeBandwidth(test, platform, options);
    const check::RuleContext context{test, platform, options, bandwidth, known};
    TestVerdict verdict;
    verdict.collective = test.collective;
    verdict.sources = test.sources;
    verdict.ranks = test.ranks;
    verdict.nodes = test.nodes;
    verdict.nodes_from = test.nodes_from;
    verdict.hosts = UniqueHosts(test.hosts);
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
    if (const PasteDiagnosis* d = DiagnosisOf(report.diagnoses, test.sources)) {
      for (Finding& f : verdict.findings) {
        if (f.source != "correctness" || f.severity != Severity::kCritical ||
            test.run_errors.empty()) {
          continue;
        }
        const FailureCause* cause = FailureBase::Builtin().FindCause(d->cause);
        if (d->decided && cause != nullptr) {
          f.evidence.push_back(f.what);
          f.what = "the run failed: " + cause->title + " (the diagnosis of " + d->source +
                   " below has the evidence and the fix)";
        } else {
          f.what += "; the diagnosis of " + d->source + " below ranks its possible causes";
        }
      }
    }
    if (platform.network_guessed && test.nodes != 1) CapGuessed(verdict.findings, platform);
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
    Blame(verdict);
    report.status = std::max(report.status, verdict.status);
    report.tests.push_back(std::move(verdict));
  }
  Rediagnose(report, runs, pastes);
  const bool diagnosed = std::any_of(report.diagnoses.begin(), report.diagnoses.end(),
                                     [](const PasteDiagnosis& d) { return !d.cause.empty(); });
  const bool judged =
      std::any_of(report.diagnoses.begin(), report.diagnoses.end(),
                  [](const PasteDiagnosis& d) { return d.status != Severity::kInfo; });
  if (report.tests.empty() && !diagnosed && !judged) {
    report.status = Severity::kWarn;
    report.notes.push_back("the results hold no test: nothing to judge");
  }
  return report;
}

}  // namespace fabricscope
