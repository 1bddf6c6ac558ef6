// The one finding model's names, writers and exit rule.
#include "fabricscope/finding.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

constexpr std::array<std::string_view, 4> kSeverityNames = {"OK", "INFO", "WARN", "CRITICAL"};

constexpr size_t kSeverityWidth = 14;  // "INCONCLUSIVE" and two spaces

bool IsProblem(const Finding& f) { return f.severity >= Severity::kWarn || !f.decided; }

bool Shown(const Finding& f, const FindingTextStyle& style) {
  return !style.problems_only || IsProblem(f);
}

}  // namespace

std::string_view SeverityName(Severity severity) { return NameOf(severity, kSeverityNames); }

Severity Worst(const std::vector<Finding>& findings, Severity floor) {
  Severity worst = floor;
  for (const Finding& f : findings) worst = std::max(worst, f.severity);
  return worst;
}

bool AnyUndecided(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return !f.decided; });
}

Outcome OutcomeOf(Severity worst, bool undecided, bool strict) {
  if (worst == Severity::kCritical || (strict && worst == Severity::kWarn)) {
    return Outcome::kFailed;
  }
  return undecided ? Outcome::kInconclusive : Outcome::kClear;
}

Outcome OutcomeOf(const std::vector<Finding>& findings, bool strict) {
  return OutcomeOf(Worst(findings), AnyUndecided(findings), strict);
}

std::string FindingsText(const std::vector<Finding>& findings, const FindingTextStyle& style) {
  size_t source_width = style.source_width;
  if (source_width == 0) {
    for (const Finding& f : findings) {
      if (Shown(f, style)) source_width = std::max(source_width, f.source.size());
    }
  }
  const std::string under = style.indent + std::string(kSeverityWidth + source_width + 2, ' ');
  std::string out;
  for (const Finding& f : findings) {
    if (!Shown(f, style)) continue;
    const std::string_view severity = f.decided ? SeverityName(f.severity) : "INCONCLUSIVE";
    out += fmt::format("{}{:<{}}{:<{}}  {}{}\n", style.indent, severity, kSeverityWidth, f.source,
                       source_width, f.where.empty() ? "" : f.where + ": ", f.what);
    if (!style.details || (!IsProblem(f) && !style.ok_details)) continue;
    for (const std::string& e : f.evidence) out += fmt::format("{}evidence: {}\n", under, e);
    if (!f.fix.empty()) out += fmt::format("{}fix: {}\n", under, f.fix);
  }
  return out;
}

nlohmann::ordered_json FindingJson(const Finding& finding) {
  return {{"severity", SeverityName(finding.severity)},
          {"source", finding.source},
          {"what", finding.what},
          {"where", finding.where},
          {"evidence", finding.evidence},
          {"fix", finding.fix},
          {"figures", finding.figures.empty() ? nlohmann::ordered_json::object()
                                              : nlohmann::ordered_json(finding.figures)},
          {"decided", finding.decided},
          {"element", finding.element},
          {"nodes", finding.nodes}};
}

nlohmann::ordered_json FindingsJson(const std::vector<Finding>& findings) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Finding& f : findings) list.push_back(FindingJson(f));
  return list;
}

Finding FindingFromJson(const nlohmann::ordered_json& j) {
  Finding f;
  f.severity =
      ParseName<Severity>(j.at("severity").get<std::string>(), kSeverityNames, "finding severity");
  f.source = j.at("source").get<std::string>();
  f.what = j.at("what").get<std::string>();
  f.where = j.at("where").get<std::string>();
  f.evidence = j.at("evidence").get<std::vector<std::string>>();
  f.fix = j.at("fix").get<std::string>();
  f.figures = j.at("figures").get<std::map<std::string, double>>();
  f.decided = j.at("decided").get<bool>();
  // Version 1 had neither (a finding read from an older document).
  f.element = j.value("element", std::string());
  f.nodes = j.value("nodes", std::vector<std::string>());
  return f;
}

}  // namespace fabricscope
