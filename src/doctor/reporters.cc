// The doctor's reporters (the findings' text form, JSON) and the --format registry.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "doctor/report_json.h"
#include "fabricscope/error.h"
#include "fabricscope/find_format.h"
#include "fabricscope/joined.h"
#include "fabricscope/version.h"

namespace fabricscope::doctor {
namespace {

std::map<Severity, int> CountChecks(const NodeReport& node) {
  std::map<Severity, int> counts;
  for (const auto& c : node.checks) ++counts[c.severity()];
  return counts;
}

std::string Tally(const NodeReport& node) {
  auto counts = CountChecks(node);
  std::string out = fmt::format("{} checks:", node.checks.size());
  for (Severity s : kSeverities) out += fmt::format(" {} {},", counts[s], SeverityName(s));
  out.pop_back();
  return out;
}

std::vector<Finding> FindingsOf(const NodeReport& node) {
  std::vector<Finding> out;
  for (const auto& c : node.checks) out.insert(out.end(), c.findings.begin(), c.findings.end());
  return out;
}

// One source column for every block of findings of a report, so that they line up.
size_t SourceWidth(const ClusterReport& report) {
  size_t width = report.drift.empty() ? 0 : std::string_view("drift").size();
  for (const auto& n : report.nodes) {
    for (const auto& c : n.checks) width = std::max(width, c.name.size());
  }
  return width;
}

// The findings in their one text form, between the doctor's own header and tally lines.
class TextReporter : public DoctorReporter {
 public:
  TextReporter(std::ostream& out, const ReportStyle& style) : out_(out), style_(style) {}

  void Write(const ClusterReport& report) override {
    findings_style_.source_width = SourceWidth(report);
    findings_style_.ok_details = style_.verbose;
    if (report.nodes.size() == 1 && report.drift.empty()) {
      const NodeReport& n = report.nodes.front();
      out_ << fmt::format("# fabricscope doctor {} on {} (root {})\n", kVersion, n.host, n.root);
      // One node: every check's line, so that the report also says what is fine.
      findings_style_.problems_only = false;
      out_ << FindingsText(FindingsOf(n), findings_style_);
      out_ << fmt::format("# {}: {}\n", Tally(n), SeverityName(n.severity()));
      return;
    }
    out_ << fmt::format("# fabricscope doctor {}: {} nodes\n", kVersion, report.nodes.size());
    size_t host_width = 4;
    for (const auto& n : report.nodes) host_width = std::max(host_width, n.host.size());
    out_ << fmt::format("{:<6}{:<{}}  {:<10}{:>4}{:>6}{:>6}{:>10}\n", "RANK", "HOST", host_width,
                        "STATUS", "OK", "INFO", "WARN", "CRITICAL");
    for (const auto& n : report.nodes) {
      auto counts = CountChecks(n);
      out_ << fmt::format("{:<6}{:<{}}  {:<10}{:>4}{:>6}{:>6}{:>10}\n", n.rank, n.host, host_width,
                          SeverityName(n.severity()), counts[Severity::kOk],
                          counts[Severity::kInfo], counts[Severity::kWarn],
                          counts[Severity::kCritical]);
    }
    Drifts(report.drift);
    // Many nodes: only their problems, unless asked for everything.
    findings_style_.problems_only = !style_.verbose;
    for (const auto& n : report.nodes) {
      if (n.severity() == Severity::kOk && !style_.verbose) continue;
      out_ << fmt::format("\n# rank {} ({}, root {})\n", n.rank, n.host, n.root);
      out_ << FindingsText(FindingsOf(n), findings_style_);
    }
    out_ << fmt::format("# {} nodes, {} drifted fact(s): {}\n", report.nodes.size(),
                        report.drift.size(), SeverityName(report.severity()));
  }

 private:
  void Drifts(const std::vector<Drift>& drift) {
    if (drift.empty()) {
      out_ << "# drift: every node agrees on every compared fact\n";
      return;
    }
    out_ << fmt::format("\n# drift: {} fact(s) differ between nodes\n", drift.size());
    std::vector<Finding> findings;
    findings.reserve(drift.size());
    for (const Drift& d : drift) findings.push_back(DriftFinding(d));
    out_ << FindingsText(findings, findings_style_);
  }

  std::ostream& out_;
  ReportStyle style_;
  FindingTextStyle findings_style_;
};

// One JSON document: the nodes, their checks and facts, and the drift.
class JsonReporter : public DoctorReporter {
 public:
  explicit JsonReporter(std::ostream& out) : out_(out) {}
  void Write(const ClusterReport& report) override { out_ << ToJson(report).dump(2) << "\n"; }

 private:
  std::ostream& out_;
};

}  // namespace

const std::vector<DoctorReporterEntry>& DoctorReporters() {
  static const std::vector<DoctorReporterEntry> kEntries = {
      {"text", "one line per finding, evidence and fix under each problem (default)",
       [](std::ostream& out, const ReportStyle& style) -> std::unique_ptr<DoctorReporter> {
         return std::make_unique<TextReporter>(out, style);
       }},
      {"json", "one document: nodes, checks, findings, facts and drift",
       [](std::ostream& out, const ReportStyle&) -> std::unique_ptr<DoctorReporter> {
         return std::make_unique<JsonReporter>(out);
       }},
  };
  return kEntries;
}

std::unique_ptr<DoctorReporter> MakeDoctorReporter(std::string_view format, std::ostream& out,
                                                   const ReportStyle& style) {
  return FindFormat(DoctorReporters(), format).make(out, style);
}

}  // namespace fabricscope::doctor
