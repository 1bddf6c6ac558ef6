#include "doctor/report_json.h"

#include <map>

#include "fabricscope/error.h"
#include "fabricscope/version.h"

namespace fabricscope::doctor {
namespace {

using json = nlohmann::ordered_json;

Severity SeverityFromName(const std::string& name) {
  for (Severity s : {Severity::kOk, Severity::kSkipped, Severity::kWarn, Severity::kCritical}) {
    if (SeverityName(s) == name) return s;
  }
  throw UsageError("unknown status '" + name + "' in a doctor report");
}

}  // namespace

json ToJson(const NodeReport& report) {
  json checks = json::array();
  std::map<std::string, int> summary;
  for (Severity s : {Severity::kOk, Severity::kSkipped, Severity::kWarn, Severity::kCritical}) {
    summary[std::string(SeverityName(s))] = 0;
  }
  for (const CheckResult& c : report.checks) {
    json findings = json::array();
    for (const Finding& f : c.findings) {
      findings.push_back({{"status", SeverityName(f.severity)},
                          {"message", f.message},
                          {"evidence", f.evidence},
                          {"fix", f.fix}});
    }
    ++summary[std::string(SeverityName(c.severity()))];
    checks.push_back({{"name", c.name},
                      {"description", c.description},
                      {"status", SeverityName(c.severity())},
                      {"findings", findings}});
  }
  return {{"rank", report.rank},  {"host", report.host},
          {"root", report.root},  {"status", SeverityName(report.severity())},
          {"summary", summary},   {"checks", checks},
          {"facts", report.facts}};
}

json ToJson(const Drift& drift) {
  json outliers = json::array();
  for (const NodeValue& v : drift.outliers) {
    outliers.push_back({{"rank", v.rank}, {"host", v.host}, {"value", v.value}});
  }
  return {{"key", drift.key},
          {"status", SeverityName(drift.severity)},
          {"majority", drift.majority.empty() ? json(nullptr) : json(drift.majority)},
          {"majority_count", drift.majority_count},
          {"node_count", drift.node_count},
          {"outliers", outliers}};
}

json ToJson(const ClusterReport& report) {
  json nodes = json::array();
  for (const NodeReport& n : report.nodes) nodes.push_back(ToJson(n));
  json drift = json::array();
  for (const Drift& d : report.drift) drift.push_back(ToJson(d));
  return {{"tool", "fabricscope doctor"},
          {"version", kVersion},
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
      for (const json& f : c.at("findings")) {
        result.findings.push_back({SeverityFromName(f.at("status").get<std::string>()),
                                   f.at("message").get<std::string>(),
                                   f.at("evidence").get<std::vector<std::string>>(),
                                   f.at("fix").get<std::string>()});
      }
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
