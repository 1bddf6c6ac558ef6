// Private: the verdict rules as a registry. Each rule looks at one test and, when it applies,
// gives OK, WARN or CRITICAL (INFO: it stands aside) with its reason; the worst finding that
// judged is the test's verdict.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check/bandwidth.h"
#include "check/evidence.h"
#include "fabricscope/check.h"

namespace fabricscope::check {

// What a rule sees.
struct RuleContext {
  const TestEvidence& test;
  const PlatformChoice& choice;
  const CheckOptions& options;
  const BandwidthJudgement& bandwidth;
  std::string known_platforms;  // "gcp-a3-highgpu-8g, ...", for messages without a platform
};

// One named rule. `evaluate` returns nothing when the rule does not apply to the test.
struct Rule {
  std::string_view name;
  std::string_view description;
  std::optional<Finding> (*evaluate)(const RuleContext& context);
};

// Every rule, in the order findings are listed.
const std::vector<Rule>& Rules();

// The rules, one function each, grouped by concern in run_rules.cc, bandwidth_rules.cc,
// transport_rule.cc, latency_rule.cc and fabric_rule.cc.
std::optional<Finding> CorrectnessRule(const RuleContext& context);
std::optional<Finding> PlatformRule(const RuleContext& context);
std::optional<Finding> GpuModelRule(const RuleContext& context);
std::optional<Finding> RanksPerNodeRule(const RuleContext& context);
std::optional<Finding> AlgorithmRule(const RuleContext& context);
std::optional<Finding> BandwidthRule(const RuleContext& context);
std::optional<Finding> GpuDirectRule(const RuleContext& context);
std::optional<Finding> LatencyRule(const RuleContext& context);
std::optional<Finding> FabricRule(const RuleContext& context);

// Whether `text` names the GPU of `gpu_model` ("H100" of "NVIDIA H100") as a whole token,
// so that "GH100 [H200 SXM 141GB]" names an H200 and not an H100.
bool NamesGpu(const std::string& text, const std::string& gpu_model);

// Whether any of `lines` contains `word`.
bool Mentions(const std::vector<std::string>& lines, std::string_view word);

// Number formats the reasons share: "330.0 GB/s" with one decimal, "101%".
std::string Gbs(double value);
std::string Percent(double fraction);
// "us" times: "28.1 us", or "1.20 ms" from a millisecond up.
std::string Micros(double us);

}  // namespace fabricscope::check
