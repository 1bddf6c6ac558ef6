// The doctor's reporters (a table, JSON) and the --format registry.
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

constexpr Severity kAll[] = {Severity::kOk, Severity::kWarn, Severity::kCritical,
                             Severity::kSkipped};

std::map<Severity, int> CountChecks(const NodeReport& node) {
  std::map<Severity, int> counts;
  for (const auto& c : node.checks) ++counts[c.severity()];
  return counts;
}

std::string Tally(const NodeReport& node) {
  const auto counts = CountChecks(node);
  std::string out = fmt::format("{} checks:", node.checks.size());
  for (Severity s : kAll) {
    const auto it = counts.find(s);
    out += fmt::format(" {} {},", it == counts.end() ? 0 : it->second, SeverityName(s));
  }
  out.pop_back();
  return out;
}

// One table row per finding; evidence and fix below the problems.
class TextReporter : public DoctorReporter {
 public:
  TextReporter(std::ostream& out, const ReportStyle& style) : out_(out), style_(style) {}

  void Write(const ClusterReport& report) override {
    if (report.nodes.size() == 1 && report.drift.empty()) {
      const NodeReport& n = report.nodes.front();
      out_ << fmt::format("# fabricscope doctor {} on {} (root {})\n", kVersion, n.host, n.root);
      Table(n, /*problems_only=*/false);
      out_ << fmt::format("# {}: {}\n", Tally(n), SeverityName(n.severity()));
      return;
    }
    out_ << fmt::format("# fabricscope doctor {}: {} nodes\n", kVersion, report.nodes.size());
    size_t host_width = 4;
    for (const auto& n : report.nodes) host_width = std::max(host_width, n.host.size());
    out_ << fmt::format("{:<6}{:<{}}  {:<10}{:>4}{:>6}{:>10}{:>9}\n", "RANK", "HOST", host_width,
                        "STATUS", "OK", "WARN", "CRITICAL", "SKIPPED");
    for (const auto& n : report.nodes) {
      auto counts = CountChecks(n);
      out_ << fmt::format("{:<6}{:<{}}  {:<10}{:>4}{:>6}{:>10}{:>9}\n", n.rank, n.host, host_width,
                          SeverityName(n.severity()), counts[Severity::kOk],
                          counts[Severity::kWarn], counts[Severity::kCritical],
                          counts[Severity::kSkipped]);
    }
    Drifts(report.drift);
    for (const auto& n : report.nodes) {
      const bool problems = n.severity() > Severity::kSkipped;
      if (!problems && !style_.verbose) continue;
      out_ << fmt::format("\n# rank {} ({}, root {})\n", n.rank, n.host, n.root);
      Table(n, !style_.verbose);
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
    size_t key_width = 4, majority_width = 8;
    std::vector<std::string> majorities;
    for (const auto& d : drift) {
      key_width = std::max(key_width, d.key.size());
      majorities.push_back(d.majority.empty() ? "(no majority)"
                                              : fmt::format("{} ({}/{})", d.majority,
                                                            d.majority_count, d.node_count));
      majority_width = std::max(majority_width, majorities.back().size());
    }
    out_ << fmt::format("{:<{}}  {:<10}{:<{}}  {}\n", "FACT", key_width, "STATUS", "MAJORITY",
                        majority_width, "DIFFERS ON");
    for (size_t i = 0; i < drift.size(); ++i) {
      const Drift& d = drift[i];
      std::string differs;
      for (const auto& o : d.outliers) {
        differs +=
            fmt::format("{}rank {} ({}): {}", differs.empty() ? "" : "; ", o.rank, o.host, o.value);
      }
      out_ << fmt::format("{:<{}}  {:<10}{:<{}}  {}\n", d.key, key_width, SeverityName(d.severity),
                          majorities[i], majority_width, differs);
    }
  }

  void Table(const NodeReport& n, bool problems_only) {
    size_t name_width = 5;
    for (const auto& c : n.checks) name_width = std::max(name_width, c.name.size());
    const std::string indent(name_width + 2 + 10, ' ');
    out_ << fmt::format("{:<{}}  {:<10}{}\n", "CHECK", name_width, "STATUS", "FINDING");
    for (const auto& c : n.checks) {
      bool first = true;
      for (const Finding& f : c.findings) {
        const bool problem = f.severity > Severity::kSkipped;
        if (problems_only && !problem) continue;
        out_ << fmt::format("{:<{}}  {:<10}{}\n", first ? c.name : "", name_width,
                            SeverityName(f.severity), f.message);
        first = false;
        if (!problem && !style_.verbose) continue;
        for (const auto& e : f.evidence) out_ << indent << "evidence: " << e << "\n";
        if (!f.fix.empty()) out_ << indent << "fix: " << f.fix << "\n";
      }
    }
  }

  std::ostream& out_;
  ReportStyle style_;
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
      {"text", "a table: one line per finding, evidence and fix under each problem (default)",
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
