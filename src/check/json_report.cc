// The JSON report: the same facts as the text, every figure a number, for programs and CI.
#include <nlohmann/json.hpp>
#include <string>

#include "check/reporters.h"
#include "fabricscope/check.h"
#include "fabricscope/finding.h"

namespace fabricscope {
namespace check {
namespace {

// In the order written, as the findings' keys are (finding.h).
using json = nlohmann::ordered_json;

// The document's own version (docs/check.md lists the changes); the findings in it carry
// kFindingsVersion.
constexpr int kCheckJsonVersion = 3;

json PlatformJson(const PlatformChoice& choice) {
  json j = {{"origin", choice.origin},
            {"evidence", choice.evidence},
            {"notes", choice.notes},
            {"name", nullptr}};
  if (!choice.unavailable.empty()) j["unavailable"] = choice.unavailable;
  std::vector<std::string> candidates;
  for (const Platform& p : choice.candidates) candidates.push_back(p.name);
  j["candidates"] = candidates;
  if (!choice.platform) return j;
  const Platform& p = *choice.platform;
  j["name"] = p.name;
  j["description"] = p.description;
  j["gpu_model"] = p.gpu_model;
  j["gpus_per_node"] = p.gpus_per_node;
  j["intra_fabric"] = p.intra_fabric;
  j["nvlink_domain_gpus"] = p.nvlink_domain_gpus;
  j["nics"] = p.nics;
  j["nic_rate_gbps"] = p.nic_rate_gbps;
  j["transport"] = p.transport;
  j["nic_total_gbs"] = p.NicTotalGBs();
  j["nvls"] = p.nvls;
  j["sharp"] = p.sharp;
  j["latency_floor_us"] = p.latency_floor_us ? json(*p.latency_floor_us) : json(nullptr);
  return j;
}

json TestJson(const TestVerdict& t) {
  json j = {{"collective", t.collective},
            {"sources", t.sources},
            {"ranks", t.ranks},
            {"nodes", t.nodes},
            {"nodes_from", t.nodes_from},
            {"hosts", t.hosts},
            {"runs", t.runs},
            {"verdict", SeverityName(t.status)},
            {"measured_busbw", t.measured_busbw ? json(*t.measured_busbw) : json(nullptr)},
            {"expected", nullptr},
            {"confidence", nullptr}};
  if (t.expected) {
    const ExpectedBusbw& e = *t.expected;
    j["expected"] = {{"typical_busbw", e.typical},
                     {"healthy_busbw", e.healthy},
                     {"fail_below_busbw", e.fail_below},
                     {"from_size", e.from_size},
                     {"algorithm", e.algorithm},
                     {"basis", e.basis},
                     {"source", e.source}};
  }
  if (t.confidence) {
    const VerdictConfidence& c = *t.confidence;
    j["confidence"] = {{"method", "Student t interval of the mean"},
                       {"samples", c.samples},
                       {"mean", c.mean},
                       {"stddev", c.stddev},
                       {"level", c.level},
                       {"low", c.low},
                       {"high", c.high},
                       {"probability_healthy", c.probability_healthy},
                       {"probability_verdict", c.probability_verdict},
                       {"cv_percent", c.cv_percent}};
  }
  j["findings"] = FindingsJson(t.findings);
  return j;
}

}  // namespace

std::string RenderCheckJson(const CheckReport& report) {
  json tests = json::array();
  // A test's verdict is OK, WARN or CRITICAL (never INFO: a test nothing judged is a WARN).
  json counts = {{"OK", 0}, {"WARN", 0}, {"CRITICAL", 0}};
  for (const TestVerdict& t : report.tests) {
    tests.push_back(TestJson(t));
    const std::string name(SeverityName(t.status));
    if (counts.contains(name)) counts[name] = counts[name].get<int>() + 1;
  }
  json diagnoses = json::array();
  for (const PasteDiagnosis& d : report.diagnoses) {
    diagnoses.push_back({{"source", d.source},
                         {"verdict", SeverityName(d.status)},
                         {"cause", d.cause},
                         {"decided", d.decided},
                         {"findings", FindingsJson(d.findings)}});
  }
  const json doc = {{"version", kCheckJsonVersion},
                    {"verdict", SeverityName(report.status)},
                    {"platform", PlatformJson(report.platform)},
                    {"findings_version", kFindingsVersion},
                    {"tests", tests},
                    {"diagnoses", diagnoses},
                    {"counts", counts},
                    {"notes", report.notes}};
  return doc.dump(2) + "\n";
}

}  // namespace check
}  // namespace fabricscope
