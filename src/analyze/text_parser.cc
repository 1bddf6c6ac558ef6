// nccl-tests and rccl-tests text output inside any log: one pass over the lines, launcher
// prefixes stripped, the table's columns taken from its own header line (so every layout
// since nccl-tests 2.0 reads the same way), and everything else on the line ignored.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analyze/chunked_lines.h"
#include "analyze/collective_inference.h"
#include "analyze/diagnostics.h"
#include "analyze/line_prefix.h"
#include "analyze/lines.h"
#include "analyze/readers.h"
#include "analyze/text_fields.h"
#include "fabricscope/parse.h"
#include "fabricscope/result.h"

namespace fabricscope::analyze {
namespace {

constexpr size_t kMaxFields = 64;
// A row has at most 5 + 2 x 8 (-I) + 2 (-S) + 3 (rccl-tests -A) fields; more is not a row.
constexpr size_t kMaxRowFields = 32;
// NCCL repeats its transport and warning lines for every rank and channel; a run keeps this
// many distinct ones.
constexpr size_t kMaxTransportLines = 32;
constexpr size_t kMaxWarnLines = 20;
constexpr size_t kMaxPlatformLines = 64;

enum class Half { kOutOfPlace, kInPlace };

// The table's columns, as its header line names them.
struct TableSchema {
  bool known = false;  // false: no header seen, columns are inferred row by row
  bool has_redop = true;
  bool has_root = true;
  bool per_iter = false;      // -I: i_min i_max i_p99 i_cv% after each half
  bool error_column = false;  // before 2.13: a maximum deviation, not a count
  bool timestamp = false;     // -S
  size_t halves = 2;
  Half single = Half::kInPlace;  // which half a one-half table (rccl-tests -O 0) holds
  size_t trailing = 0;           // rccl-tests -A: algo proto channels
  size_t half_end[2] = {0, 0};   // where each half's time column ends, to place a lone half
  // Every column the header names and where its name ends on the line: nccl-tests prints
  // names and values right-aligned to the same printf widths, so a row whose field count is
  // off (an empty redop, a value that overflowed its width) is read by where its fields end.
  std::vector<std::string> column_name;
  std::vector<size_t> column_end;
};

// Lines that say the run failed, in nccl-tests', NCCL's and the CUDA/HIP runtimes' words.
constexpr std::string_view kFailureMarks[] = {
    "NCCL failure", "CUDA failure", "Cuda failure", "HIP failure", "Test failure",
    "Test timeout", "CUDA error",   "cudaError",    "NCCL error",
};

// Where the failure's own words start in `body` (at its mark), or npos.
size_t FailureMark(std::string_view body) {
  for (std::string_view mark : kFailureMarks) {
    const size_t at = body.find(mark);
    if (at != std::string_view::npos) return at;
  }
  return std::string_view::npos;
}

// What a row field stands for when the header's column has no value under it: a column that
// nccl-tests leaves blank (the redop of alltoall in old versions) or that says "not checked".
std::string_view BlankValue(std::string_view column) {
  if (column == "redop") return "none";
  if (column == "root") return "-1";
  if (column == "#wrong" || column == "error") return "N/A";
  return {};
}

// One table: the rows under one header, up to its trailer.
struct Block {
  size_t first_row = 0;
  size_t header_line = 0;
  size_t last_row_line = 0;
  std::string collective;  // as the log named it; empty: infer
  bool trailer = false;
  bool has_avg = false;
  TestSummary printed;
};

// A field that cannot be a number: rccl-tests' algorithm and protocol names ("RING", "LL128").
bool IsWord(std::string_view s) {
  const char c = s.empty() ? '0' : s[0];
  return !(IsDigit(c) || c == '-' || c == '+' || c == '.' || c == 'n' || c == 'i' || c == 'N' ||
           c == 'I') ||
         !IsNumber(s);
}

std::string_view AfterColon(std::string_view s) {
  const size_t colon = s.find(':');
  return colon == std::string_view::npos ? std::string_view() : Trim(s.substr(colon + 1));
}

class TextParser {
 public:
  TextParser(const std::string& source, const ParseOptions& options)
      : options_(options), sink_(source, options.max_diagnostics_per_kind) {
    out_.source = source;
    if (options_.observer != nullptr) options_.observer->Begin(source);
  }

  void Feed(std::string_view raw, size_t line_no, bool last_partial) {
    last_partial_ = last_partial;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const std::string_view line = StripLaunchPrefixes(raw);
    std::string_view body = TrimLeft(line);
    if (body.empty()) return;
    bool hashed = false;
    if (body[0] == '#') {
      hashed = true;
      body = TrimLeft(body.substr(1));
      if (body.empty()) return;
    }
    // Other log lines can start with a digit (an IP, a host "10-0-0-1"): they are read as
    // everything else is when they are not rows.
    if (IsDigit(body[0]) && !hashed && Row(line, body, line_no)) return;
    // NCCL's INFO mark, looked for once for the observer and the reader.
    const size_t info = hashed ? std::string_view::npos : FindAnchored(body, "NCCL INFO", 7);
    if (options_.observer != nullptr) {
      options_.observer->Line(line, line_no,
                              info == std::string_view::npos
                                  ? info
                                  : static_cast<size_t>(body.data() - line.data()) + info);
    }
    Keyword(line, TrimRight(body), hashed, line_no, info);
  }

  // Lines longer than the reader keeps (a binary file, a log without line breaks).
  void CutLines(size_t first, size_t count, size_t limit) {
    const std::string size = limit % (1 << 20) == 0 ? std::to_string(limit >> 20) + " MB"
                                                    : std::to_string(limit) + " bytes";
    sink_.Warn("long line", first,
               "a line longer than " + size +
                   (count > 1 ? " (and " + std::to_string(count - 1) + " more such lines)" : "") +
                   ": only its first " + size +
                   " were read, the rest of it was skipped; is this a text log?");
  }

  ParsedResults Finish() {
    CloseRun();
    out_.format = std::string(tool_seen_.empty() ? "nccl-tests" : tool_seen_) + " text";
    if (out_.runs.empty() && !sink_.HasErrors()) {
      sink_.Error("no results", 0, NoResultsMessage("text"));
    }
    out_.diagnostics = sink_.Take();
    return std::move(out_);
  }

 private:
  // ---- runs and blocks ----

  void StartRun(size_t line) {
    // NCCL's and the launcher's lines often come before the run's first header: they belong
    // to the run that header starts, not to a run of their own.
    RunResult before;
    const bool carry = run_open_ && run_.rows.empty() && !has_config_ && blocks_.empty();
    if (carry) {
      before = std::move(run_);
      run_open_ = false;
    }
    CloseRun();
    run_ = RunResult();
    run_.tool = "nccl-tests";
    run_.backend = "nccl";
    run_.version.clear();
    run_.source = sink_.file() + ":" + std::to_string(line);
    run_open_ = true;
    run_line_ = line;
    has_config_ = false;
    announced_ = false;
    blocks_.clear();
    schema_ = TableSchema();
    title_out_ = title_in_ = false;
    pending_collective_.clear();
    transports_.clear();
    warns_.clear();
    failures_.clear();
    platform_seen_.clear();
    first_device_line_ = last_device_line_ = 0;
    if (carry) {
      run_.errors = std::move(before.errors);
      run_.notes = std::move(before.notes);
      run_.transports = std::move(before.transports);
      run_.platform_lines = std::move(before.platform_lines);
      for (const std::string& l : run_.platform_lines)
        platform_seen_.insert(l.substr(l.find(": ") + 2));
      run_.backend = before.backend;
      run_.backend_version = before.backend_version;
      for (const std::string& t : run_.transports) transports_.insert(t);
    }
  }

  void EnsureRun(size_t line) {
    if (!run_open_) StartRun(line);
  }

  // Rows after a trailer, or with no header at all, start a block of their own.
  Block& CurrentBlock(size_t line) {
    if (blocks_.empty() || blocks_.back().trailer) {
      Block block;
      block.first_row = run_.rows.size();
      block.header_line = line;
      block.collective = TakePendingCollective();
      blocks_.push_back(std::move(block));
      if (!schema_.known) {
        sink_.Warn("missing header", line,
                   "table rows without their column header ('#  size  count  type ...'): columns "
                   "are inferred from each row");
      }
    }
    return blocks_.back();
  }

  std::string TakePendingCollective() {
    std::string name = std::move(pending_collective_);
    pending_collective_.clear();
    if (name.empty()) name = options_.collective;
    if (name.empty()) name = command_collective_;
    return name;
  }

  void CloseRun() {
    if (!run_open_) return;
    run_open_ = false;
    if (!run_.ranks.empty()) {
      // A device list cut to its last lines ("Rank 143 ...") still tells the rank count.
      int highest = 0;
      for (const RankInfo& r : run_.ranks) highest = std::max(highest, r.rank);
      run_.nranks = std::max(static_cast<int>(run_.ranks.size()), highest + 1);
      run_.platform_lines.insert(
          run_.platform_lines.begin(),
          sink_.file() + ":" + std::to_string(first_device_line_) +
              (last_device_line_ > first_device_line_ ? "-" + std::to_string(last_device_line_)
                                                      : std::string()) +
              ": " + std::to_string(run_.ranks.size()) + " device line" +
              (run_.ranks.size() == 1 ? "" : "s") + " ('Rank N ... on HOST device N [BUS] GPU')");
    }
    for (size_t b = 0; b < blocks_.size(); ++b) {
      Block& block = blocks_[b];
      const size_t end = b + 1 < blocks_.size() ? blocks_[b + 1].first_row : run_.rows.size();
      const size_t count = end - block.first_row;
      if (count == 0) {
        if (block.trailer) {
          sink_.Warn("empty table", block.header_line,
                     "a table header and trailer with no rows between them");
        }
        continue;
      }
      if (block.collective.empty()) NameFromColumns(block, count);
      if (run_.nranks == 0) {
        run_.nranks = RanksFromColumns(&run_.rows[block.first_row], count, block.collective);
      }
      for (size_t i = block.first_row; i < end; ++i) run_.rows[i].collective = block.collective;
      if (block.trailer) {
        block.printed.collective = block.collective;
        block.printed.rows = count;
        if (block.has_avg) run_.printed.push_back(block.printed);
      } else {
        sink_.Warn("truncated", block.last_row_line,
                   "the table ends after " + std::to_string(count) +
                       " rows without its trailer ('# Avg bus bandwidth'): the run was cut off or "
                       "the log is incomplete; the rows before are kept");
      }
    }
    if (run_.rows.empty()) {
      if (run_.errors.empty() && !has_config_) return;
      // A run that ended before its first row failed, whatever the reason: it is a result.
      if (run_.errors.empty()) {
        run_.errors.push_back(sink_.file() + ":" + std::to_string(run_line_) +
                              ": the run was cut off before its first row (a header, no result "
                              "rows after it): the job died or the log is incomplete");
      }
      run_.announced_collective = pending_collective_;
      if (run_.announced_collective.empty() && !blocks_.empty()) {
        run_.announced_collective = blocks_.back().collective;
      }
      if (run_.announced_collective.empty()) run_.announced_collective = options_.collective;
    }
    out_.runs.push_back(std::move(run_));
  }

  void NameFromColumns(Block& block, size_t count) {
    const Inference guess = InferCollective(&run_.rows[block.first_row], count, run_.nranks);
    if (run_.nranks == 0) run_.nranks = guess.nranks;
    if (guess.collective.empty()) {
      block.collective = "unknown";
      sink_.Warn("collective", block.header_line,
                 "the log does not name the collective and its columns do not tell: reported as "
                 "'unknown' (name it with --collective)");
      return;
    }
    block.collective = guess.collective;
    if (!guess.alternative.empty()) {
      sink_.Warn("collective", block.header_line,
                 "the log does not name the collective; its columns fit " + guess.collective +
                     " and " + guess.alternative + " alike: read as " + guess.collective +
                     " (give --collective " + guess.alternative + " if it was that)");
    }
  }

  // ---- table rows: the hot path ----

  // Returns false when the line is not a row at all.
  bool Row(std::string_view line, std::string_view body, size_t line_no) {
    std::string_view f[kMaxRowFields + 1];
    const size_t n = SplitFields(body, f, kMaxRowFields);
    int64_t size = 0;
    int64_t count = 0;
    // A row starts with two integers.
    if (n < 2 || !ParseInt(f[0], size) || !ParseInt(f[1], count)) return false;
    // A summary table with a column before nccl-tests' own (a node count: "   2   1073741824
    // 268435456  float  sum ..."): three integers before the type; the row starts at the second.
    std::string_view* fields = f;
    size_t fields_n = n;
    if (n > 4 && IsNumber(f[2]) && !IsNumber(f[3]) && ParseInt(f[2], count)) {
      size = count;
      ParseInt(f[1], size);
      ++fields;
      --fields_n;
    }
    EnsureRun(line_no);
    std::string problem;
    ResultRow row;
    if (n > kMaxRowFields) {
      problem = "more than " + std::to_string(kMaxRowFields) + " fields";
    } else if (size < 0 || count < 0) {
      problem = "a negative size or count";
    } else {
      problem = FillRow(line, fields, fields_n, row);
      if (!problem.empty() && schema_.known && !last_partial_)
        problem = ByColumns(line, fields, fields_n, row, problem);
    }
    if (!problem.empty()) {
      if (last_partial_) {
        sink_.Warn("truncated", line_no,
                   "the last line is an incomplete table row (" + problem +
                       "): the log was cut off mid-line; the row is left out");
      } else {
        sink_.Error("malformed row", line_no,
                    "a table row that cannot be read: " + problem + "; the row is left out");
      }
      return true;
    }
    // A last line without its newline that lacks a half the header has was cut mid-row.
    if (last_partial_ && schema_.known && schema_.halves == 2 &&
        !(row.out_of_place.has_value() && row.in_place.has_value())) {
      sink_.Warn("truncated", line_no,
                 "the last line is an incomplete table row (one half of the two the header "
                 "names): the log was cut off mid-line; the row is left out");
      return true;
    }
    row.size = static_cast<size_t>(size);
    row.count = static_cast<size_t>(count);
    row.iterations =
        has_config_ ? static_cast<int64_t>(run_.config.iters) * run_.config.agg_iters : 0;
    Block& block = CurrentBlock(line_no);
    block.last_row_line = line_no;
    run_.rows.push_back(std::move(row));
    return true;
  }

  // A row whose fields do not fit the header by count, read again by position: each field
  // goes to the header column whose right edge is nearest to its own (in order, leaving room
  // for the fields after it), and a column with no field gets the value nccl-tests means by
  // a blank. Returns `problem` when that does not make a row either.
  std::string ByColumns(std::string_view line, const std::string_view* f, size_t n, ResultRow& row,
                        const std::string& problem) {
    const size_t columns = schema_.column_end.size();
    if (n >= columns || columns > kMaxRowFields) return problem;
    std::string_view placed[kMaxRowFields + 1];
    bool filled[kMaxRowFields + 1] = {};
    size_t next = 0;
    for (size_t k = 0; k < n; ++k) {
      const size_t end = static_cast<size_t>(f[k].data() - line.data()) + f[k].size();
      size_t best = next;
      size_t best_distance = SIZE_MAX;
      for (size_t j = next; j + (n - k) <= columns; ++j) {
        const size_t at = schema_.column_end[j];
        const size_t distance = end > at ? end - at : at - end;
        if (distance < best_distance) {
          best = j;
          best_distance = distance;
        }
      }
      placed[best] = f[k];
      filled[best] = true;
      next = best + 1;
    }
    for (size_t j = 0; j < columns; ++j) {
      if (filled[j]) continue;
      placed[j] = BlankValue(schema_.column_name[j]);
      if (placed[j].empty()) {
        return problem + "; read by the header's columns, nothing is under '" +
               schema_.column_name[j] + "' (column " + std::to_string(j + 1) + ")";
      }
    }
    ResultRow again;
    if (!FillRow(line, placed, columns, again).empty()) return problem;
    row = std::move(again);
    return {};
  }

  // Where a row's halves end: before the -S timestamp (returned in `timestamp`) and rccl-tests'
  // -A columns.
  size_t HalvesEnd(const std::string_view* f, size_t n, std::string_view& timestamp) const {
    constexpr size_t kFirst = 3;
    size_t end = n;
    if (end >= kFirst + 2 && IsDate(f[end - 2]) && IsClock(f[end - 1])) {
      timestamp = std::string_view(
          f[end - 2].data(),
          static_cast<size_t>(f[end - 1].data() + f[end - 1].size() - f[end - 2].data()));
      end -= 2;
    }
    // rccl-tests -A: "RING  SIMPLE  16" after the halves. A half always ends in two numbers
    // and a count, so a word just before the last field (or two N/A) marks these columns.
    if (schema_.trailing > 0 && end >= kFirst + schema_.trailing) {
      end -= schema_.trailing;
    } else if (end >= kFirst + 3 && ((IsWord(f[end - 2]) && f[end - 2] != "N/A") ||
                                     (f[end - 2] == "N/A" && f[end - 3] == "N/A"))) {
      end -= 3;
    }
    return end;
  }

  // Reads fields 2.. of a row into `row`; returns what is wrong, or an empty string.
  std::string FillRow(std::string_view line, const std::string_view* f, size_t n, ResultRow& row) {
    if (n < 3 || IsNumber(f[2])) return "no type column";
    row.type = std::string(f[2]);
    size_t i = 3;
    std::string_view timestamp;
    const size_t end = HalvesEnd(f, n, timestamp);
    const bool has_redop = schema_.known ? schema_.has_redop : (i < end && !IsNumber(f[i]));
    if (has_redop) {
      if (i >= end) return "no redop column";
      row.redop = std::string(f[i++]);
    } else {
      row.redop = "none";
    }
    size_t width = schema_.per_iter ? 8 : 4;
    size_t rest = end - i;
    bool has_root = schema_.known ? schema_.has_root : rest % 4 == 1;
    if (!schema_.known && (rest == 16 || rest == 17)) {
      width = 8;
      has_root = rest == 17;
    }
    row.root = -1;
    if (has_root) {
      int64_t root = 0;
      if (i >= end || !ParseInt(f[i], root)) return "the root column is not an integer";
      row.root = static_cast<int>(root);
      ++i;
      --rest;
    }
    if (rest == 0 || rest % width != 0 || rest / width > 2) {
      const size_t lead = 3 + (has_redop ? 1 : 0) + (has_root ? 1 : 0);
      return std::to_string(n) + " fields where the header's columns make " +
             std::to_string(lead + width) + " (one half) or " + std::to_string(lead + 2 * width) +
             " (both)";
    }
    const size_t halves = rest / width;
    for (size_t h = 0; h < halves; ++h) {
      PlacementResult placement;
      std::string problem = FillHalf(f + i + h * width, width, placement);
      if (!problem.empty()) return problem;
      Half which = h == 0 ? Half::kOutOfPlace : Half::kInPlace;
      if (halves == 1) which = LoneHalf(line, f[i]);
      (which == Half::kOutOfPlace ? row.out_of_place : row.in_place) = std::move(placement);
    }
    if (!timestamp.empty()) row.timestamp = std::string(timestamp);
    return {};
  }

  std::string FillHalf(const std::string_view* f, size_t width, PlacementResult& half) {
    if (!ParseDouble(f[0], half.time_us)) return "time '" + std::string(f[0]) + "' is not a number";
    if (!ParseDouble(f[1], half.algbw)) return "algbw '" + std::string(f[1]) + "' is not a number";
    if (!ParseDouble(f[2], half.busbw)) return "busbw '" + std::string(f[2]) + "' is not a number";
    if (f[3] != "N/A") {
      double wrong = 0;
      if (!ParseDouble(f[3], wrong)) return "#wrong '" + std::string(f[3]) + "' is not a number";
      // Before 2.13 this column was the largest deviation ("5e-07"), not a count; without a
      // header, a fraction or exponent tells it.
      const bool deviation = schema_.known ? schema_.error_column
                                           : f[3].find_first_of(".eE") != std::string_view::npos;
      if (!deviation) half.wrong = static_cast<int64_t>(std::llround(wrong));
    }
    if (width == 8) {
      IterationStats stats;
      if (ParseDouble(f[4], stats.min_us) && ParseDouble(f[5], stats.max_us) &&
          ParseDouble(f[6], stats.p99_us) && ParseDouble(f[7], stats.cv_percent)) {
        half.iterations = stats;
      } else if (f[4] != "N/A") {
        return "per-iteration columns that are not numbers";
      }
    }
    return {};
  }

  // A row with one half in a two-half table: the half whose time column it lines up with
  // (nccl-tests blanks a half it did not run, as fabricscope does).
  Half LoneHalf(std::string_view line, std::string_view time_field) {
    if (schema_.halves == 1 || !schema_.known || schema_.half_end[1] == 0) return schema_.single;
    const size_t end = static_cast<size_t>(time_field.data() - line.data()) + time_field.size();
    const auto distance = [end](size_t at) { return end > at ? end - at : at - end; };
    return distance(schema_.half_end[0]) <= distance(schema_.half_end[1]) ? Half::kOutOfPlace
                                                                          : Half::kInPlace;
  }

  // ---- everything else ----

  // "Blocking Enabled", "Per-Iteration Report", "Parallel Init Enabled": run flags printed
  // as header lines.
  bool RunFlagLine(std::string_view body, size_t line_no) {
    if (StartsWith(body, "Blocking Enabled")) {
      EnsureRun(line_no);
      run_.config.blocking = Contains(body, "no barrier") ? 2 : Contains(body, "outer") ? 3 : 1;
      return true;
    }
    if (StartsWith(body, "Per-Iteration Report")) {
      EnsureRun(line_no);
      run_.config.per_iter_timing = 1;
      return true;
    }
    if (StartsWith(body, "Parallel Init Enabled")) {
      EnsureRun(line_no);
      run_.config.parallel_init = 1;
      return true;
    }
    return false;
  }

  // The lines of nccl-tests' own header, table and trailer; false when `body` is none of them.
  bool TableKeyword(std::string_view line, std::string_view body, bool hashed, size_t line_no) {
    switch (body[0]) {
      case 'n':
        if (StartsWith(body, "nThread")) {
          Config(body, line_no);
          return true;
        }
        break;
      case 'R':
        if (StartsWith(body, "Rank ")) {
          RankLine(body, line_no);
          return true;
        }
        if (StartsWith(body, "Reducing maxBytes")) {
          EnsureRun(line_no);
          run_.notes.emplace_back(body);
          return true;
        }
        break;
      case 'C':
        if (StartsWith(body, "Collective test starting:")) {
          EnsureRun(line_no);
          pending_collective_ = CanonicalCollective(AfterColon(body));
          announced_ = true;
          return true;
        }
        if (StartsWith(body, "Collective test concluded:")) {
          if (!blocks_.empty() && blocks_.back().collective.empty()) {
            blocks_.back().collective = CanonicalCollective(AfterColon(body));
          }
          return true;
        }
        break;
      case 'O':
        if (StartsWith(body, "Out of bounds values")) {
          OutOfBounds(body, line_no);
          return true;
        }
        break;
      case 'A':
        if (StartsWith(body, "Avg bus bandwidth")) {
          AvgBusBandwidth(body, line_no);
          return true;
        }
        break;
      case 's':
        if (StartsWith(body, "size ")) {
          ColumnNames(line, body, line_no);
          return true;
        }
        break;
      case 'o':
      case 'i':
        if (Title(body)) return true;
        break;
      case 'B':
      case 'P':
        return RunFlagLine(body, line_no);
      case 'e':
        if (hashed && StartsWith(body, "error:")) {
          EnsureRun(line_no);
          run_.errors.emplace_back(Trim(body.substr(6)));
          return true;
        }
        break;
      case 'E':
        if (StartsWith(body, "Errors with asterisks")) {
          ToolHint("rccl-tests");
          return true;
        }
        break;
      default:
        break;
    }
    return false;
  }

  void Keyword(std::string_view line, std::string_view body, bool hashed, size_t line_no,
               size_t info_at) {
    if (TableKeyword(line, body, hashed, line_no)) return;
    if (IsVersionLine(body)) return VersionLine(body, line_no);
    if (hashed) return;
    // Most lines of a big log are NCCL's INFO lines: each search below is one memchr on a byte
    // that is rare in them, so that a line that holds none of these costs a few passes.
    // The library's own version line, alone or inside an INFO line, behind any prefix
    // ("NCCL version " and "RCCL version " share "CCL version ").
    if (FindAnchored(body, "CCL version ", 4) != std::string_view::npos) {
      for (std::string_view library : {"NCCL version ", "RCCL version "}) {
        const size_t at = body.find(library);
        if (at != std::string_view::npos)
          LibraryVersion(body.substr(at), library[0] == 'N' ? "nccl" : "rccl");
      }
    }
    if (const size_t at = FindAnchored(body, "rccl-tests: Version", 12);
        at != std::string_view::npos) {
      ToolHint("rccl-tests");
      if (run_open_) run_.version = std::string(Trim(body.substr(at + 19)));
      return;
    }
    // Lines of other programs interleaved with the table: NCCL's and nccl-tests' own.
    if (info_at != std::string_view::npos) return NcclInfo(body, info_at, line_no);
    if (Contains(body, "NCCL WARN")) return NcclWarn(body, line_no);
    if (const size_t mark = FailureMark(body); mark != std::string_view::npos) {
      Failure(body, body.substr(mark), line_no);
      return;
    }
    if (const size_t at = FindAnchored(body, "_perf", 2); at != std::string_view::npos) {
      CommandLine(body, at);
    }
  }

  // A pasted command that runs an nccl-tests binary ("mpirun -np 16 ./build/sendrecv_perf
  // -b 8 -e 1G", a shell trace "+ srun ... all_gather_perf ..."): it names the collective of
  // the tables that follow when they do not name it themselves.
  void CommandLine(std::string_view body, size_t at) {
    const size_t end = at + 5;
    if (end < body.size() && body[end] != ' ' && body[end] != '\t') return;
    size_t start = at;
    while (start > 0 && body[start - 1] != ' ' && body[start - 1] != '/' &&
           body[start - 1] != '\t') {
      --start;
    }
    const std::string name = CanonicalCollective(body.substr(start, end - start));
    if (IsKnownCollective(name)) command_collective_ = name;
  }

  // A line that says the run failed: kept in the log's own words with where it is, so that
  // the run is a failed result and not a log without results.
  // `message` is the part of `words` that every rank prints alike (without the host, pid and
  // device prefix): each message is kept once, at its first line.
  void Failure(std::string_view words, std::string_view message, size_t line_no) {
    EnsureRun(line_no);
    if (run_.errors.size() >= kMaxWarnLines) return;
    if (failures_.insert(std::string(message)).second) {
      run_.errors.push_back(sink_.file() + ":" + std::to_string(line_no) + ": " +
                            std::string(words));
    }
  }

  void ToolHint(std::string_view tool) {
    if (run_open_) {
      run_.tool = std::string(tool);
      if (tool == "rccl-tests") run_.backend = "rccl";
    }
    tool_seen_ = tool;
  }

  // "<tool> version <number> ...": a second field "version" and a third after it. Scanned by
  // hand up to the second field: every line of a log comes here.
  static bool IsVersionLine(std::string_view body) {
    size_t i = 0;
    while (i < body.size() && IsBlank(body[i])) ++i;
    const size_t first_start = i;
    while (i < body.size() && !IsBlank(body[i])) ++i;
    const std::string_view first = body.substr(first_start, i - first_start);
    while (i < body.size() && IsBlank(body[i])) ++i;
    const std::string_view rest = body.substr(i);
    if (!StartsWith(rest, "version") || rest.size() == 7 || !IsBlank(rest[7]) ||
        TrimLeft(rest.substr(7)).empty()) {
      return false;
    }
    return first == "fabricscope" ||
           (first.size() > 6 && first.substr(first.size() - 6) == "-tests");
  }

  // "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809", and fabricscope's
  // "# fabricscope version 0.1.0 backend=gloo gloo-library=0.5.0": a new run starts here.
  void VersionLine(std::string_view body, size_t line_no) {
    StartRun(line_no);
    std::string_view f[16];
    const size_t n = std::min<size_t>(SplitFields(body, f, 15), 15);
    run_.tool = std::string(f[0]);
    run_.version = std::string(f[2]);
    tool_seen_ = run_.tool;
    if (run_.tool == "rccl-tests") run_.backend = "rccl";
    if (run_.tool == "fabricscope") run_.backend.clear();
    for (size_t i = 3; i < n; ++i) {
      const size_t eq = f[i].find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view key = f[i].substr(0, eq);
      const std::string_view value = f[i].substr(eq + 1);
      if (key == "backend") {
        run_.backend = std::string(value);
      } else if (key == "nccl-library" || key == "rccl-library") {
        int64_t code = 0;
        run_.backend = std::string(key.substr(0, 4));
        run_.backend_version =
            ParseInt(value, code) ? NcclVersionName(static_cast<long>(code)) : std::string(value);
      } else if (key.size() > 8 && key.substr(key.size() - 8) == "-library") {
        run_.backend_version = std::string(value);
      }
    }
  }

  // "NCCL version 2.26.6+cuda12.8", as NCCL itself prints it.
  void LibraryVersion(std::string_view body, std::string_view backend) {
    if (!run_open_) return;
    std::string_view f[3];
    if (SplitFields(body, f, 3) < 3) return;
    run_.backend = std::string(backend);
    run_.backend_version = std::string(f[2]);
    if (backend == "rccl") ToolHint("rccl-tests");
  }

  // "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters:
  // 20 agg iters: 1 validation: 1 graph: 0 unalign: 0", and older spellings ("nThread: 1",
  // "warmupIters: 5"): words up to a number name it.
  void Config(std::string_view body, size_t line_no) {
    // A second header in one run is the next run of a log that holds several, unless a
    // "Collective test starting" line announced the next test of the same run.
    if (!run_open_ || (has_config_ && !announced_)) StartRun(line_no);
    has_config_ = true;
    announced_ = false;
    schema_ = TableSchema();
    title_out_ = title_in_ = false;
    RunConfig& c = run_.config;
    std::string_view f[kMaxFields + 1];
    const size_t n = std::min(SplitFields(body, f, kMaxFields), kMaxFields);
    std::string key;
    for (size_t i = 0; i < n; ++i) {
      std::string_view word = f[i];
      int64_t value = 0;
      const size_t paren = word.find('(');
      const std::string_view number = word.substr(0, paren);
      if (!ParseInt(number, value)) {
        for (char ch : word) {
          if (ch != ':') key += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
        }
        continue;
      }
      const auto as_int = static_cast<int>(value);
      if (key == "nthread")
        c.nthreads = as_int;
      else if (key == "ngpus")
        c.ngpus = as_int;
      else if (key == "minbytes")
        c.min_bytes = static_cast<size_t>(value);
      else if (key == "maxbytes")
        c.max_bytes = static_cast<size_t>(value);
      else if (key == "step") {
        if (paren != std::string_view::npos && Contains(word, "factor")) {
          c.step_factor = static_cast<uint64_t>(value);
        } else {
          c.step_bytes = static_cast<size_t>(value);
          c.step_factor = 1;
        }
      } else if (key == "warmupiters")
        c.warmup_iters = as_int;
      else if (key == "iters")
        c.iters = as_int;
      else if (key == "aggiters")
        c.agg_iters = as_int;
      else if (key == "validation")
        c.check = as_int;
      else if (key == "graph")
        c.graph = as_int;
      else if (key == "unalign")
        c.unalign = as_int;
      key.clear();
    }
  }

  // "#  Rank  0 Group  0 Pid   7774 on nc-d87e1263-head device  0 [0000:8f:00] NVIDIA H200",
  // and the older forms without "Group" ("[0x3d]" bus ids, rccl-tests' "[0000:c9:00.0]").
  void RankLine(std::string_view body, size_t line_no) {
    std::string_view f[12];
    const size_t n = SplitFields(body, f, 11);
    RankInfo rank;
    int64_t value = 0;
    size_t i = 1;
    bool ok = n >= 8 && ParseInt(f[i++], value);
    rank.rank = static_cast<int>(value);
    if (ok && f[i] == "Group") {
      ok = ParseInt(f[i + 1], value);
      rank.group = static_cast<int>(value);
      i += 2;
    }
    ok = ok && i + 5 < n && f[i] == "Pid" && ParseInt(f[i + 1], value);
    rank.pid = static_cast<int>(value);
    ok = ok && f[i + 2] == "on";
    if (ok) rank.hostname = std::string(f[i + 3]);
    ok = ok && f[i + 4] == "device" && ParseInt(f[i + 5], value);
    rank.device = static_cast<int>(value);
    if (!ok) {
      sink_.Warn("device line", line_no,
                 "a 'Rank' line not in the form '#  Rank N Group N Pid N on HOST device N [BUS] "
                 "NAME': left out of the device list");
      return;
    }
    EnsureRun(line_no);
    const std::string_view after =
        body.substr(static_cast<size_t>(f[i + 5].data() - body.data()) + f[i + 5].size());
    const size_t open = after.find('[');
    const size_t close = after.find(']');
    if (open != std::string_view::npos && close != std::string_view::npos && open < close) {
      rank.device_bus_id = std::string(after.substr(open + 1, close - open - 1));
      rank.device_name = std::string(Trim(after.substr(close + 1)));
    } else {
      rank.device_name = std::string(Trim(after));
    }
    // fabricscope repeats the device lines before each test of a run.
    for (const RankInfo& known : run_.ranks) {
      if (known.rank == rank.rank) return;
    }
    if (first_device_line_ == 0) first_device_line_ = line_no;
    last_device_line_ = line_no;
    run_.ranks.push_back(std::move(rank));
  }

  // "#        out-of-place        in-place": which halves the next table has.
  bool Title(std::string_view body) {
    std::string_view f[8];
    const size_t n = SplitFields(body, f, 7);
    if (n == 0 || n > 7) return false;
    bool out = false;
    bool in = false;
    for (size_t i = 0; i < n; ++i) {
      if (f[i] == "out-of-place") {
        out = true;
      } else if (f[i] == "in-place") {
        in = true;
      } else if (f[i] != "(+" && f[i] != "per-iteration)") {
        return false;
      }
    }
    title_out_ = out;
    title_in_ = in;
    return true;
  }

  // "#       size         count      type   redop    root     time   algbw   busbw #wrong ..."
  void ColumnNames(std::string_view line, std::string_view body, size_t line_no) {
    std::string_view f[kMaxFields + 1];
    const size_t n = std::min(SplitFields(body, f, kMaxFields), kMaxFields);
    if (n < 3 || f[1] != "count" || f[2] != "type") return;
    TableSchema schema;
    schema.known = true;
    for (size_t k = 0; k < n; ++k) {
      schema.column_name.emplace_back(f[k]);
      schema.column_end.push_back(static_cast<size_t>(f[k].data() - line.data()) + f[k].size());
    }
    size_t i = 3;
    schema.has_redop = i < n && f[i] == "redop";
    if (schema.has_redop) ++i;
    schema.has_root = i < n && f[i] == "root";
    if (schema.has_root) ++i;
    schema.halves = 0;
    while (i < n) {
      if ((f[i] == "time" || f[i] == "cputime") && i + 3 < n && f[i + 1] == "algbw" &&
          f[i + 2] == "busbw") {
        if (schema.halves < 2) {
          schema.half_end[schema.halves] =
              static_cast<size_t>(f[i].data() - line.data()) + f[i].size();
        }
        ++schema.halves;
        if (f[i + 3] == "error") schema.error_column = true;
        i += 4;
        if (i + 3 < n && f[i] == "i_min") {
          schema.per_iter = true;
          i += 4;
        }
      } else if (f[i] == "timestamp") {
        schema.timestamp = true;
        ++i;
      } else {
        ++schema.trailing;
        ++i;
      }
    }
    if (schema.halves == 0 || schema.halves > 2) {
      sink_.Warn("header", line_no,
                 "a column header without 'time algbw busbw' groups: ignored; rows are read by "
                 "their own shape");
      return;
    }
    if (schema.halves == 1)
      schema.single = title_out_ && !title_in_ ? Half::kOutOfPlace : Half::kInPlace;
    EnsureRun(line_no);
    schema_ = schema;
    // A header starts a table; one printed twice without rows between is the same table.
    if (blocks_.empty() || blocks_.back().trailer || run_.rows.size() > blocks_.back().first_row) {
      Block block;
      block.first_row = run_.rows.size();
      block.collective = TakePendingCollective();
      blocks_.push_back(std::move(block));
    }
    blocks_.back().header_line = line_no;
    blocks_.back().last_row_line = line_no;
  }

  Block* TrailerBlock(size_t line_no) {
    if (!run_open_ || blocks_.empty()) {
      sink_.Warn("trailer", line_no, "a trailer line with no table before it: ignored");
      return nullptr;
    }
    return &blocks_.back();
  }

  bool BlockCountsWrong(const Block& block) const {
    for (size_t i = block.first_row; i < run_.rows.size(); ++i) {
      const ResultRow& row = run_.rows[i];
      if ((row.out_of_place && row.out_of_place->wrong && *row.out_of_place->wrong > 0) ||
          (row.in_place && row.in_place->wrong && *row.in_place->wrong > 0)) {
        return true;
      }
    }
    return false;
  }

  // "# Out of bounds values : 0 OK"
  void OutOfBounds(std::string_view body, size_t line_no) {
    Block* block = TrailerBlock(line_no);
    if (block == nullptr) return;
    std::string_view f[3];
    const size_t n = SplitFields(AfterColon(body), f, 2);
    int64_t value = 0;
    if (n >= 1 && ParseInt(f[0], value)) {
      block->printed.out_of_bounds = value;
      block->printed.okay = !(n >= 2 && f[1] == "FAILED") && value == 0;
      // Rows that count wrong elements show the failure themselves; rows that do not (an
      // 'error' column of deviations, -c 0) leave the trailer as the only word of it.
      if (!block->printed.okay && !BlockCountsWrong(*block)) {
        Failure(Trim(body), Trim(body), line_no);
      }
    }
  }

  // "# Avg bus bandwidth    : 122.073 " (then OK or FAILED with NCCL_TESTS_MIN_BW): the
  // table is complete.
  void AvgBusBandwidth(std::string_view body, size_t line_no) {
    Block* block = TrailerBlock(line_no);
    if (block == nullptr) return;
    std::string_view f[3];
    const size_t n = SplitFields(AfterColon(body), f, 2);
    double value = 0;
    if (n >= 1 && ParseDouble(f[0], value)) {
      block->printed.avg_busbw = value;
      block->has_avg = true;
      if (n >= 2 && f[1] == "FAILED") block->printed.okay = false;
    } else {
      sink_.Warn("trailer", line_no, "'Avg bus bandwidth' without a number: ignored");
    }
    block->trailer = true;
  }

  // NCCL INFO lines that say which transport NCCL chose: the network plugin and device, and
  // the "via" of each channel connection (reduced to its kind, without channel numbers).
  // `at` is where "NCCL INFO" starts in `body`. Lines that say nothing of it (most) cost a
  // few memchr; a connection already seen costs no allocation.
  void NcclInfo(std::string_view body, size_t at, size_t line_no) {
    if (!run_open_) return;
    const std::string_view text = Trim(body.substr(at + 9));
    EnvLine(text);
    const bool network = StartsWith(text, "NET/") || StartsWith(text, "Using network");
    // "NVLS" and "MNNVL" both have a 'V', which few INFO lines have.
    const bool has_v = std::memchr(text.data(), 'V', text.size()) != nullptr;
    const bool nvls = has_v && Contains(text, "NVLS");
    if (network || nvls || (has_v && Contains(text, "MNNVL"))) PlatformLine(text, line_no);
    if (transports_.size() >= kMaxTransportLines) return;
    std::string& entry = entry_;
    entry.clear();
    const size_t via = FindAnchored(text, " via ", 1);
    if (via != std::string_view::npos) {
      // "Channel 00/0 : 0[0] -> 1[1] via NET/IB/0/GDRDMA" -> "via NET/IB/GDRDMA": one entry
      // per kind of connection, without the channel and device numbers.
      entry = "via ";
      const std::string_view how = Trim(text.substr(via + 5));
      size_t start = 0;
      bool first = true;
      while (start <= how.size()) {
        const size_t slash = how.find('/', start);
        const std::string_view part = how.substr(
            start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        int64_t unused = 0;
        if (!part.empty() && !ParseInt(part, unused)) {
          if (!first) entry += '/';
          entry += part;
          first = false;
        }
        if (slash == std::string_view::npos) break;
        start = slash + 1;
      }
    } else if (network || Contains(text, "GPU Direct RDMA") || nvls ||
               FindAnchored(text, "CollNet", 4) != std::string_view::npos) {
      entry = text;
    }
    if (entry.empty() || transports_.find(entry) != transports_.end()) return;
    transports_.insert(entry);
    run_.transports.push_back(entry);
  }

  // NCCL prints the variables it reads from the environment: "NCCL_ALGO set by environment to
  // Ring" (src/graph/tuning.cc, as NCCL_PROTO), "NCCL_NVLS_ENABLE set by environment to 0." (an
  // integer parameter, src/misc/param.cc, with its period), "NCCL_COLLNET_ENABLE set by
  // environment to 1." (src/init.cc). The run's env keeps NAME=value once, so check knows the
  // algorithm a log forced.
  void EnvLine(std::string_view text) {
    constexpr std::string_view kSet = " set by environment to ";
    if (!StartsWith(text, "NCCL_")) return;
    const size_t set = text.find(kSet);
    if (set == std::string_view::npos) return;
    const std::string name(text.substr(0, set));
    if (name.find(' ') != std::string::npos) return;
    std::string_view value = Trim(text.substr(set + kSet.size()));
    if (!value.empty() && value.back() == '.') value.remove_suffix(1);
    const std::string entry = name + "=" + std::string(value);
    if (std::find(run_.env.begin(), run_.env.end(), entry) == run_.env.end()) {
      run_.env.push_back(entry);
    }
  }

  // Every rank prints these; the run keeps each text once, with where it was first seen.
  void PlatformLine(std::string_view text, size_t line_no) {
    if (platform_seen_.size() >= kMaxPlatformLines) return;
    if (platform_seen_.find(text) != platform_seen_.end()) return;
    platform_seen_.emplace(text);
    run_.platform_lines.push_back(sink_.file() + ":" + std::to_string(line_no) + ": " +
                                  std::string(text));
  }

  void NcclWarn(std::string_view body, size_t line_no) {
    EnsureRun(line_no);
    const std::string text =
        "NCCL WARN " + std::string(Trim(body.substr(body.find("NCCL WARN") + 9)));
    if (warns_.size() >= kMaxWarnLines) return;
    if (warns_.insert(text).second) run_.notes.push_back(text);
    Failure(Trim(body), body.substr(body.find("NCCL WARN")), line_no);
  }

  const ParseOptions& options_;
  DiagnosticSink sink_;
  ParsedResults out_;
  std::string tool_seen_;
  bool last_partial_ = false;

  RunResult run_;
  bool run_open_ = false;
  size_t run_line_ = 0;
  bool has_config_ = false;
  bool announced_ = false;
  std::vector<Block> blocks_;
  TableSchema schema_;
  bool title_out_ = false;
  bool title_in_ = false;
  std::string pending_collective_;
  // The collective of the last nccl-tests command pasted (CommandLine); "" none.
  std::string command_collective_;
  std::unordered_set<std::string, ViewHash, std::equal_to<>> transports_;
  std::unordered_set<std::string> warns_;
  std::unordered_set<std::string> failures_;
  std::unordered_set<std::string, ViewHash, std::equal_to<>> platform_seen_;
  std::string entry_;  // NcclInfo's transport entry, reused from line to line
  size_t first_device_line_ = 0;
  size_t last_device_line_ = 0;
};

}  // namespace

std::string NcclVersionName(long code) {
  if (code <= 0) return std::to_string(code);
  // NCCL 2.8 and older encoded major x 1000 + minor x 100 + patch.
  if (code < 10000)
    return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 100) + "." +
           std::to_string(code % 100);
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

std::string NoResultsMessage(std::string_view what_was_read) {
  return "no benchmark results found in this " + std::string(what_was_read) +
         ": expected nccl-tests or rccl-tests output (a table under '#  size  count  type  redop "
         "...' with its rows), nccl-tests -J JSON, rccl-tests -Z json/csv, or fabricscope JSON/CSV";
}

ParsedResults ParseTextResults(std::string_view text, const std::string& source,
                               const ParseOptions& options) {
  TextParser parser(source, options);
  ForEachLine(text, [&](std::string_view line, size_t line_no, bool last) {
    parser.Feed(line, line_no, last);
  });
  return parser.Finish();
}

ParsedResults ParseTextLines(ChunkedLineReader& reader, size_t skip_first,
                             const std::string& source, const ParseOptions& options) {
  TextParser parser(source, options);
  reader.ForEachLine([&](std::string_view line, size_t line_no, bool last) {
    if (line_no == 1) line.remove_prefix(std::min(skip_first, line.size()));
    parser.Feed(line, line_no, last);
  });
  if (reader.cut_lines() > 0) {
    parser.CutLines(reader.first_cut_line(), reader.cut_lines(), reader.max_line_bytes());
  }
  return parser.Finish();
}

}  // namespace fabricscope::analyze
