// The summary as text, Markdown, JSON and CSV.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analyze/table.h"
#include "fabricscope/analyze.h"
#include "fabricscope/error.h"
#include "fabricscope/find_format.h"
#include "fabricscope/joined.h"

namespace fabricscope {
namespace {

using analyze::Trimmed;

std::string Avg(double value) { return fmt::format("{:g}", value); }

std::string OptionalBytes(const std::optional<size_t>& bytes) {
  return bytes.has_value() ? FormatBytes(*bytes) : "-";
}

std::string OptionalUs(const std::optional<double>& us) {
  return us.has_value() ? Trimmed(*us, 2) + " us" : "-";
}

std::string Printed(const TestAnalysis& test) {
  if (!test.avg_busbw_printed.has_value()) return "-";
  return Avg(*test.avg_busbw_printed) + (test.avg_busbw_consistent ? "" : " (!)");
}

std::string Wrong(const TestAnalysis& test) {
  return test.wrong.has_value() ? std::to_string(*test.wrong) : "N/A";
}

analyze::TableRows SummaryRows(const std::vector<TestAnalysis>& tests) {
  analyze::TableRows rows = {{"source", "collective", "type", "op", "ranks", "nodes", "rows",
                              "avg busbw", "printed", "peak busbw", "at", "half peak from",
                              "latency floor", "#wrong", "status"}};
  for (const TestAnalysis& t : tests) {
    rows.push_back({t.source, t.collective, t.type, t.op,
                    t.ranks > 0 ? std::to_string(t.ranks) : "-",
                    t.nodes > 0 ? std::to_string(t.nodes) : "-", std::to_string(t.rows),
                    Avg(t.avg_busbw), Printed(t), Trimmed(t.peak_busbw, 2),
                    FormatBytes(t.peak_size), OptionalBytes(t.half_peak_size),
                    OptionalUs(t.latency_floor_us), Wrong(t), std::string(t.status())});
  }
  return rows;
}

std::string RenderText(const std::vector<TestAnalysis>& tests, const std::vector<Diagnostic>&) {
  if (tests.empty()) return "no tests\n";
  std::string out =
      "busbw in GB/s (nccl-tests' bus bandwidth); avg = mean of every busbw value, "
      "both placements\n";
  out +=
      analyze::AlignedTable(SummaryRows(tests), {false, false, false, false, true, true, true, true,
                                                 true, true, true, true, true, true, false});
  for (const TestAnalysis& t : tests) {
    const std::string who = t.source + " " + t.collective;
    if (!t.transports.empty()) {
      out += who + ": transports:";
      for (const auto& line : t.transports) out += "\n    " + line;
      out += "\n";
    }
    for (const auto& failure : t.failures) out += fmt::format("{}: FAILED: {}\n", who, failure);
    for (const auto& note : t.notes) out += fmt::format("{}: note: {}\n", who, note);
  }
  return out;
}

std::string RenderMarkdown(const std::vector<TestAnalysis>& tests,
                           const std::vector<Diagnostic>& diagnostics) {
  std::string out = "busbw in GB/s; avg = mean of every busbw value, both placements.\n\n";
  out += analyze::MarkdownTable(SummaryRows(tests));
  for (const TestAnalysis& t : tests) {
    if (t.transports.empty() && t.notes.empty() && t.failures.empty()) continue;
    out += "\n**" + t.source + " " + t.collective + "**\n\n";
    for (const auto& failure : t.failures) out += "- FAILED: " + failure + "\n";
    for (const auto& line : t.transports) out += "- transport: `" + line + "`\n";
    for (const auto& note : t.notes) out += "- note: " + note + "\n";
  }
  if (!diagnostics.empty()) {
    out += "\n**Reading problems**\n\n";
    for (const Diagnostic& d : diagnostics) out += "- `" + d.ToString() + "`\n";
  }
  return out;
}

nlohmann::ordered_json Optional(const std::optional<double>& value) {
  return value.has_value() ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

std::string RenderJson(const std::vector<TestAnalysis>& tests,
                       const std::vector<Diagnostic>& diagnostics) {
  using Json = nlohmann::ordered_json;
  Json out;
  Json list = Json::array();
  for (const TestAnalysis& t : tests) {
    Json j;
    j["source"] = t.source;
    j["tool"] = t.tool;
    j["collective"] = t.collective;
    j["type"] = t.type;
    j["op"] = t.op;
    j["ranks"] = t.ranks;
    j["nodes"] = t.nodes;
    j["rows"] = t.rows;
    j["avg_busbw"] = t.avg_busbw;
    j["avg_busbw_printed"] = Optional(t.avg_busbw_printed);
    j["avg_busbw_consistent"] = t.avg_busbw_consistent;
    j["peak_busbw"] = t.peak_busbw;
    j["peak_size"] = t.peak_size;
    j["latency_floor_us"] = Optional(t.latency_floor_us);
    j["half_peak_size"] = t.half_peak_size.has_value() ? Json(*t.half_peak_size) : Json(nullptr);
    j["wrong"] = t.wrong.has_value() ? Json(*t.wrong) : Json(nullptr);
    j["out_of_bounds"] = t.out_of_bounds;
    j["transports"] = t.transports;
    j["notes"] = t.notes;
    j["status"] = t.status();
    j["failures"] = t.failures;
    list.push_back(std::move(j));
  }
  out["tests"] = std::move(list);
  Json problems = Json::array();
  for (const Diagnostic& d : diagnostics) {
    problems.push_back(
        {{"file", d.file},
         {"line", d.line},
         {"severity", d.severity == Diagnostic::Severity::kError ? "error" : "warning"},
         {"message", d.message}});
  }
  out["diagnostics"] = std::move(problems);
  // Hostnames and log lines come from outside; a stray byte must not lose the summary.
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string Number(const std::optional<double>& value) {
  return value.has_value() ? fmt::format("{}", *value) : "";
}

std::string RenderCsv(const std::vector<TestAnalysis>& tests, const std::vector<Diagnostic>&) {
  std::string out = analyze::CsvLine({"source",
                                      "tool",
                                      "collective",
                                      "type",
                                      "op",
                                      "ranks",
                                      "nodes",
                                      "rows",
                                      "avg_busbw",
                                      "avg_busbw_printed",
                                      "avg_busbw_consistent",
                                      "peak_busbw",
                                      "peak_size",
                                      "latency_floor_us",
                                      "half_peak_size",
                                      "wrong",
                                      "out_of_bounds",
                                      "transports",
                                      "notes",
                                      "status",
                                      "failures"});
  for (const TestAnalysis& t : tests) {
    std::string transports;
    for (const auto& line : t.transports) transports += (transports.empty() ? "" : "; ") + line;
    std::string notes;
    for (const auto& note : t.notes) notes += (notes.empty() ? "" : "; ") + note;
    std::string failures;
    for (const auto& f : t.failures) failures += (failures.empty() ? "" : "; ") + f;
    out += analyze::CsvLine({t.source,
                             t.tool,
                             t.collective,
                             t.type,
                             t.op,
                             std::to_string(t.ranks),
                             std::to_string(t.nodes),
                             std::to_string(t.rows),
                             fmt::format("{}", t.avg_busbw),
                             Number(t.avg_busbw_printed),
                             t.avg_busbw_consistent ? "true" : "false",
                             fmt::format("{}", t.peak_busbw),
                             std::to_string(t.peak_size),
                             Number(t.latency_floor_us),
                             t.half_peak_size.has_value() ? std::to_string(*t.half_peak_size) : "",
                             t.wrong.has_value() ? std::to_string(*t.wrong) : "",
                             std::to_string(t.out_of_bounds),
                             transports,
                             notes,
                             std::string(t.status()),
                             failures});
  }
  return out;
}

const std::vector<AnalysisFormat> kFormats = {
    {"text", "aligned columns, then each test's transports and notes", RenderText},
    {"md", "a Markdown table, ready to paste into an issue", RenderMarkdown},
    {"json", "{\"tests\": [...], \"diagnostics\": [...]}", RenderJson},
    {"csv", "one line per test", RenderCsv},
};

}  // namespace

const std::vector<AnalysisFormat>& AnalysisFormats() { return kFormats; }

const AnalysisFormat& FindAnalysisFormat(std::string_view name) {
  return FindFormat(kFormats, name);
}

}  // namespace fabricscope
