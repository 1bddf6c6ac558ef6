#include "doctor/report_json.h"

#include <map>

#include "fabricscope/error.h"
#include "fabricscope/version.h"

namespace fabricscope::doctor {

using json = nlohmann::ordered_json;

json ToJson(const NodeReport& report) {
  json checks = json::array();
  std::map<Severity, int> counts;  // checks by their worst finding
  for (const CheckResult& c : report.checks) {
    ++counts[c.severity()];
    checks.push_back({{"name", c.name},
                      {"description", c.description},
                      {"status", SeverityName(c.severity())},
                      {"findings", FindingsJson(c.findings)}});
  }
  json summary = json::object();
  for (Severity s : kSeverities) summary[std::string(SeverityName(s))] = counts[s];
  return {{"rank", report.rank},  {"host", report.host},
          {"root", report.root},  {"status", SeverityName(report.severity())},
          {"summary", summary},   {"checks", checks},
          {"facts", report.facts}};
}

// The finding, then what only drift has: the majority value and each outlier's.
json ToJson(const Drift& drift) {
  json out = FindingJson(DriftFinding(drift));
  json outliers = json::array();
  for (const NodeValue& v : drift.outliers) {
    outliers.push_back({{"rank", v.rank}, {"host", v.host}, {"value", v.value}});
  }
  out["majority"] = drift.majority.empty() ? json(nullptr) : json(drift.majority);
  out["outliers"] = outliers;
  return out;
}

json ToJson(const ClusterReport& report) {
  json nodes = json::array();
  for (const NodeReport& n : report.nodes) nodes.push_back(ToJson(n));
  json drift = json::array();
  for (const Drift& d : report.drift) drift.push_back(ToJson(d));
  return {{"tool", "fabricscope doctor"},
          {"version", kVersion},
          {"findings_version", kFindingsVersion},
          {"status", SeverityName(report.severity())},
          {"nodes", nodes},
          {"drift", drift}};
}

NodeReport NodeFromJson(const json& j) {
  try {
    NodeReport r;
    r.rank = j.at("rank").get<int>();
    r.host = j.at("host").get<std::string>();
    r.root = j.at("root").get<std::string>();
    for (const json& c : j.at("checks")) {
      CheckResult result;
      result.name = c.at("name").get<std::string>();
      result.description = c.at("description").get<std::string>();
      for (const json& f : c.at("findings")) result.findings.push_back(FindingFromJson(f));
      r.checks.push_back(std::move(result));
    }
    r.facts = j.at("facts").get<std::map<std::string, std::string>>();
    return r;
  } catch (const json::exception& e) {
    throw UsageError(std::string("not a doctor node report: ") + e.what());
  }
}

std::string NodeReportToJson(const NodeReport& report) { return ToJson(report).dump(); }

NodeReport NodeReportFromJson(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw UsageError(std::string("not a doctor node report (malformed JSON): ") + e.what());
  }
  return NodeFromJson(j);
}

}  // namespace fabricscope::doctor
