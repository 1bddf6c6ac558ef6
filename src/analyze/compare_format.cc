// A comparison as text and Markdown (the shape of the published GPUDirect-TCPX table:
// size, busbw of each side, speed-up), JSON and CSV.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/table.h"
#include "fabricscope/analyze.h"
#include "fabricscope/compare.h"
#include "fabricscope/error.h"
#include "fabricscope/find_format.h"
#include "fabricscope/joined.h"

namespace fabricscope {
namespace {

using analyze::Trimmed;

bool AnyRepeats(const TestComparison& test) {
  for (const SizeComparison& s : test.sizes) {
    if (s.a.size() > 1 || s.b.size() > 1) return true;
  }
  return false;
}

std::string Ratio(const SizeComparison& s) {
  // The published table writes "-" where the baseline is 0 GB/s.
  if (!s.ratio.has_value()) return "-";
  return Trimmed(*s.ratio, 2) + " x";
}

std::string PValue(const std::optional<double>& p) {
  if (!p.has_value()) return "-";
  return *p < 0.001 ? "<0.001" : fmt::format("{:.3f}", *p);
}

analyze::TableRows Rows(const Comparison& c, const TestComparison& test) {
  const bool repeats = AnyRepeats(test);
  std::vector<std::string> header = {"Message Size", "busbw " + c.label_a + " (GB/s)",
                                     "busbw " + c.label_b + " (GB/s)", "Speed-up"};
  if (repeats) {
    header.insert(header.end(), {"n A", "n B", "p"});
  }
  header.push_back("Verdict");
  analyze::TableRows rows = {header};
  for (const SizeComparison& s : test.sizes) {
    std::vector<std::string> row = {FormatBytes(s.size), Trimmed(s.a_mean, 2), Trimmed(s.b_mean, 2),
                                    Ratio(s)};
    if (repeats) {
      row.insert(row.end(),
                 {std::to_string(s.a.size()), std::to_string(s.b.size()), PValue(s.p_value)});
    }
    row.emplace_back(NameOf(s.verdict));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Heading(const Comparison& c, const TestComparison& test) {
  return fmt::format("{} {} {}: speed-up = busbw {} / busbw {}", test.collective, test.type,
                     test.op, c.label_b, c.label_a);
}

std::string Footer(const Comparison& c, const TestComparison& test) {
  std::string text = "geometric mean speed-up ";
  text += test.geomean_ratio.has_value() ? Trimmed(*test.geomean_ratio, 3) + " x" : "-";
  text += fmt::format("; {} sizes faster, {} slower (threshold {}%", test.faster, test.slower,
                      Trimmed(c.options.threshold * 100, 2));
  if (test.tested) text += fmt::format(", Welch t-test, Holm-corrected alpha {}", c.options.alpha);
  if (c.options.min_size > 0) text += ", sizes from " + FormatBytes(c.options.min_size);
  return text + ")";
}

std::string Conclusion(const Comparison& c) {
  int slower = 0;
  for (const TestComparison& t : c.tests) slower += t.slower;
  return c.Regressed() ? fmt::format("REGRESSION: {} sizes slower in {} than in {}", slower,
                                     c.label_b, c.label_a)
                       : fmt::format("no regression of {} against {}", c.label_b, c.label_a);
}

std::string RenderText(const Comparison& c) {
  std::string out;
  for (const TestComparison& test : c.tests) {
    const analyze::TableRows rows = Rows(c, test);
    std::vector<bool> right(rows[0].size(), true);
    right.back() = false;
    out += Heading(c, test) + "\n" + analyze::AlignedTable(rows, right) + Footer(c, test) + "\n\n";
  }
  for (const auto& note : c.notes) out += "note: " + note + "\n";
  return out + Conclusion(c) + "\n";
}

std::string RenderMarkdown(const Comparison& c) {
  std::string out;
  for (const TestComparison& test : c.tests) {
    out += "**" + Heading(c, test) + "**\n\n" + analyze::MarkdownTable(Rows(c, test)) + "\n" +
           Footer(c, test) + "\n\n";
  }
  for (const auto& note : c.notes) out += "- note: " + note + "\n";
  return out + "\n**" + Conclusion(c) + "**\n";
}

std::string RenderJson(const Comparison& c) {
  using Json = nlohmann::ordered_json;
  Json out;
  out["a"] = c.label_a;
  out["b"] = c.label_b;
  out["options"] = {{"placement", c.options.placement == PlacementChoice::kBoth         ? "both"
                                  : c.options.placement == PlacementChoice::kOutOfPlace ? "out"
                                                                                        : "in"},
                    {"threshold", c.options.threshold},
                    {"alpha", c.options.alpha},
                    {"min_size", c.options.min_size}};
  Json tests = Json::array();
  for (const TestComparison& test : c.tests) {
    Json t;
    t["collective"] = test.collective;
    t["type"] = test.type;
    t["op"] = test.op;
    Json sizes = Json::array();
    for (const SizeComparison& s : test.sizes) {
      sizes.push_back(
          {{"size", s.size},
           {"a", s.a},
           {"b", s.b},
           {"a_mean", s.a_mean},
           {"b_mean", s.b_mean},
           {"ratio", s.ratio.has_value() ? Json(*s.ratio) : Json(nullptr)},
           {"p_value", s.p_value.has_value() ? Json(*s.p_value) : Json(nullptr)},
           {"verdict", NameOf(s.verdict) == "-" ? "not_judged" : std::string(NameOf(s.verdict))}});
    }
    t["sizes"] = std::move(sizes);
    t["geomean_ratio"] = test.geomean_ratio.has_value() ? Json(*test.geomean_ratio) : Json(nullptr);
    t["faster"] = test.faster;
    t["slower"] = test.slower;
    t["significance_tested"] = test.tested;
    tests.push_back(std::move(t));
  }
  out["tests"] = std::move(tests);
  out["notes"] = c.notes;
  out["regressed"] = c.Regressed();
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string RenderCsv(const Comparison& c) {
  std::string out = analyze::CsvLine({"collective", "type", "op", "size", "a_mean", "b_mean",
                                      "ratio", "n_a", "n_b", "p_value", "verdict"});
  for (const TestComparison& test : c.tests) {
    for (const SizeComparison& s : test.sizes) {
      out += analyze::CsvLine(
          {test.collective, test.type, test.op, std::to_string(s.size), fmt::format("{}", s.a_mean),
           fmt::format("{}", s.b_mean), s.ratio.has_value() ? fmt::format("{}", *s.ratio) : "",
           std::to_string(s.a.size()), std::to_string(s.b.size()),
           s.p_value.has_value() ? fmt::format("{}", *s.p_value) : "",
           NameOf(s.verdict) == "-" ? "not_judged" : std::string(NameOf(s.verdict))});
    }
  }
  return out;
}

const std::vector<ComparisonFormat> kFormats = {
    {"text", "per test: size, busbw of each side, speed-up, verdict; aligned columns", RenderText},
    {"md", "the same as Markdown tables", RenderMarkdown},
    {"json", "every sample, mean, ratio, p-value and verdict", RenderJson},
    {"csv", "one line per test and size", RenderCsv},
};

}  // namespace

const std::vector<ComparisonFormat>& ComparisonFormats() { return kFormats; }

const ComparisonFormat& FindComparisonFormat(std::string_view name) {
  return FindFormat(kFormats, name);
}

}  // namespace fabricscope
