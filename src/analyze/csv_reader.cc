// CSV results: fabricscope's (one line per size and placement) and rccl-tests -Z csv (the
// same shape with its own column names). Columns are found by name, so either order works.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/collective_inference.h"
#include "analyze/diagnostics.h"
#include "analyze/readers.h"
#include "analyze/text_fields.h"
#include "fabricscope/parse.h"
#include "fabricscope/result.h"

namespace fabricscope::analyze {
namespace {

// RFC 4180 fields; rccl-tests separates with ", ", so fields are trimmed.
std::vector<std::string> SplitCsv(std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back(Trim(field));
      field.clear();
    } else {
      field += c;
    }
  }
  fields.emplace_back(Trim(field));
  return fields;
}

// The columns this reader understands, each with the names the writers give it.
enum Column {
  kCollective,
  kSize,
  kCount,
  kType,
  kRedop,
  kRoot,
  kPlacement,
  kInPlace,
  kTime,
  kAlgbw,
  kBusbw,
  kWrong,
  kTimeMin,
  kTimeMax,
  kSlowestRank,
  kTimestamp,
  kRanks,
  kGpus,
  kColumnCount
};

constexpr std::array<std::pair<std::string_view, Column>, 19> kColumnNames = {{
    {"collective", kCollective},
    {"name", kCollective},
    {"size", kSize},
    {"count", kCount},
    {"type", kType},
    {"redop", kRedop},
    {"root", kRoot},
    {"placement", kPlacement},
    {"inplace", kInPlace},
    {"time_us", kTime},
    {"time", kTime},
    {"algbw_gbps", kAlgbw},
    {"algbw", kAlgbw},
    {"busbw_gbps", kBusbw},
    {"busbw", kBusbw},
    {"wrong", kWrong},
    {"#wrong", kWrong},
    {"time_min_us", kTimeMin},
    {"time_max_us", kTimeMax},
}};

std::optional<Column> ColumnOf(const std::string& header) {
  std::string lower;
  for (char c : header) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (const auto& [name, column] : kColumnNames) {
    if (name == lower) return column;
  }
  if (lower == "slowest_rank") return kSlowestRank;
  if (lower == "timestamp") return kTimestamp;
  if (lower == "ranks") return kRanks;
  if (lower == "gpus") return kGpus;
  return std::nullopt;
}

using ColumnIndex = std::array<int, kColumnCount>;

// Reads the header's columns into `index`; false when they are not those of results.
bool ReadHeader(const std::vector<std::string>& fields, ColumnIndex* index) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (const auto column = ColumnOf(fields[i]); column.has_value() && (*index)[*column] < 0) {
      (*index)[*column] = static_cast<int>(i);
    }
  }
  const ColumnIndex& at = *index;
  const bool ours = at[kPlacement] >= 0;
  return at[kSize] >= 0 && at[kTime] >= 0 && at[kAlgbw] >= 0 && at[kBusbw] >= 0 &&
         (ours || at[kInPlace] >= 0);
}

// The fields of one data line by column; empty for a column the file or the line lacks.
class RowFields {
 public:
  RowFields(const std::vector<std::string>& fields, const ColumnIndex& index)
      : fields_(fields), index_(index) {}
  std::string_view operator()(Column column) const {
    const int i = index_[column];
    return i >= 0 && static_cast<size_t>(i) < fields_.size()
               ? std::string_view(fields_[static_cast<size_t>(i)])
               : std::string_view();
  }
  bool Has(Column column) const { return index_[column] >= 0; }

 private:
  const std::vector<std::string>& fields_;
  const ColumnIndex& index_;
};

// One data line: a size and placement with its measurements.
struct CsvHalf {
  size_t bytes = 0;
  bool in_place = false;
  PlacementResult result;
};

// Parses one data line into `out`; returns what is wrong with it, empty when it parses.
std::string ParseHalf(const RowFields& field, CsvHalf* out) {
  int64_t size = 0;
  if (!ParseInt(field(kSize), size) || size < 0) {
    return "size '" + std::string(field(kSize)) + "' is not a byte count";
  }
  out->bytes = static_cast<size_t>(size);
  PlacementResult& half = out->result;
  if (!ParseDouble(field(kTime), half.time_us) || !ParseDouble(field(kAlgbw), half.algbw) ||
      !ParseDouble(field(kBusbw), half.busbw)) {
    return "time, algbw or busbw is not a number";
  }
  if (field.Has(kPlacement)) {
    const std::string_view placement = field(kPlacement);
    if (placement != "in_place" && placement != "out_of_place") {
      return "placement '" + std::string(placement) + "' is neither out_of_place nor in_place";
    }
    out->in_place = placement == "in_place";
  } else {
    out->in_place = field(kInPlace) == "1" || field(kInPlace) == "true";
  }
  double wrong = 0;
  if (ParseDouble(field(kWrong), wrong) && std::isfinite(wrong)) {
    half.wrong = static_cast<int64_t>(std::llround(wrong));
  }
  double value = 0;
  if (ParseDouble(field(kTimeMin), value)) half.ranks.min_us = value;
  if (ParseDouble(field(kTimeMax), value)) half.ranks.max_us = value;
  int64_t rank = 0;
  if (ParseInt(field(kSlowestRank), rank)) half.ranks.max_rank = static_cast<int>(rank);
  return "";
}

// Adds one line's half to the run: the out-of-place line, then the in-place one, of each size
// share a row; any other line starts a new one.
void AddHalf(const RowFields& field, const std::string& collective, CsvHalf half, RunResult* run) {
  const std::string type(field(kType));
  std::vector<ResultRow>& rows = run->rows;
  if (rows.empty() || rows.back().size != half.bytes || rows.back().collective != collective ||
      rows.back().type != type ||
      (half.in_place ? rows.back().in_place : rows.back().out_of_place).has_value()) {
    ResultRow row;
    row.collective = collective;
    row.size = half.bytes;
    row.type = type;
    row.redop = field(kRedop).empty() ? std::string("none") : std::string(field(kRedop));
    int64_t number = 0;
    row.root = ParseInt(field(kRoot), number) ? static_cast<int>(number) : -1;
    row.count = ParseInt(field(kCount), number) && number >= 0
                    ? static_cast<size_t>(number)
                    : CountOf(collective, half.bytes, type, run->nranks);
    row.timestamp = std::string(field(kTimestamp));
    rows.push_back(std::move(row));
  }
  (half.in_place ? rows.back().in_place : rows.back().out_of_place) = std::move(half.result);
}

// A comment line: fabricscope's CSV of a run that ended early ends with why ("# incomplete:
// <error>"), kept as the run's error; other comments are skipped. False for a data line.
bool TakeComment(std::string_view line, RunResult& run) {
  if (!line.starts_with('#')) return false;
  constexpr std::string_view kIncomplete = "# incomplete: ";
  if (line.starts_with(kIncomplete)) run.errors.emplace_back(line.substr(kIncomplete.size()));
  return true;
}

}  // namespace

ParsedResults ParseCsvResults(std::string_view text, const std::string& source,
                              const ParseOptions& options) {
  DiagnosticSink sink(source, options.max_diagnostics_per_kind);
  ParsedResults out;
  out.source = source;
  RunResult run;
  run.source = source + ":1";
  ColumnIndex index;
  index.fill(-1);
  bool have_header = false;
  size_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line_no;
    std::string_view line = text.substr(start, end - start);
    const bool last_partial = end == text.size();
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) continue;
    if (TakeComment(line, run)) continue;
    const std::vector<std::string> fields = SplitCsv(line);
    if (!have_header) {
      if (!ReadHeader(fields, &index)) {
        sink.Error("format", line_no,
                   "a CSV header without the columns of results: expected fabricscope CSV "
                   "(collective,size,count,type,redop,root,placement,time_us,algbw_gbps,"
                   "busbw_gbps,wrong,...) or rccl-tests -Z csv (...,size,type,redop,inplace,time,"
                   "algbw,busbw,#wrong)");
        break;
      }
      const bool ours = index[kPlacement] >= 0;
      run.tool = ours ? "fabricscope" : "rccl-tests";
      run.backend = ours ? "" : "rccl";
      out.format = run.tool + " CSV";
      have_header = true;
      continue;
    }
    const RowFields field(fields, index);
    CsvHalf half;
    if (const std::string problem = ParseHalf(field, &half); !problem.empty()) {
      if (last_partial) {
        sink.Warn("truncated", line_no, "the last line is incomplete (" + problem + "): left out");
      } else {
        sink.Error("malformed row", line_no, problem + ": the line is left out");
      }
      continue;
    }
    int64_t ranks = 0;
    if (ParseInt(field(kRanks), ranks) || ParseInt(field(kGpus), ranks)) {
      if (ranks > run.nranks) run.nranks = static_cast<int>(ranks);
    }
    std::string collective = options.collective;
    if (collective.empty()) collective = CanonicalCollective(field(kCollective));
    AddHalf(field, collective, std::move(half), &run);
  }
  if (!run.rows.empty() || !run.errors.empty()) out.runs.push_back(std::move(run));
  if (out.format.empty()) out.format = "CSV";
  if (out.runs.empty() && !sink.HasErrors())
    sink.Error("no results", 0, NoResultsMessage("CSV file"));
  out.diagnostics = sink.Take();
  return out;
}

}  // namespace fabricscope::analyze
