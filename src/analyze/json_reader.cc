// JSON results: nccl-tests -J (versions 2 and 3), fabricscope's JSON (the same document plus
// its own fields), and rccl-tests -Z json (a flat list of per-placement records, or one
// record per line in older releases).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/collective_inference.h"
#include "analyze/diagnostics.h"
#include "analyze/readers.h"
#include "analyze/text_fields.h"
#include "fabricscope/collective.h"
#include "fabricscope/parse.h"
#include "fabricscope/result.h"

namespace fabricscope::analyze {
namespace {

using Json = nlohmann::json;

// ---- scanning the raw text, for line numbers and cut-off documents ----

// Offsets of the elements of the top-level array, or of the array under `key` in the
// top-level object; empty when there is none. The DOM keeps no positions, and a diagnostic
// without a line is little help in a file of 10,000 lines.
std::vector<size_t> ElementOffsets(std::string_view text, std::string_view key) {
  std::vector<size_t> offsets;
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  size_t string_start = 0;
  std::string_view last_string;
  bool in_target = false;
  bool expect_element = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        last_string = text.substr(string_start, i - string_start);
      }
      continue;
    }
    if (IsBlank(c) || c == '\n') continue;
    if (in_target && expect_element && depth == (key.empty() ? 1 : 2) && c != ']') {
      offsets.push_back(i);
      expect_element = false;
    }
    switch (c) {
      case '"':
        in_string = true;
        string_start = i + 1;
        break;
      case '{':
      case '[':
        ++depth;
        if (c == '[' &&
            ((key.empty() && depth == 1) || (!key.empty() && depth == 2 && last_string == key))) {
          in_target = true;
          expect_element = true;
        }
        break;
      case '}':
      case ']':
        if (in_target && depth == (key.empty() ? 1 : 2)) return offsets;
        --depth;
        break;
      case ',':
        if (in_target && depth == (key.empty() ? 1 : 2)) expect_element = true;
        break;
      default:
        break;
    }
  }
  return offsets;
}

// A document cut off mid-write (nccl-tests writes its JSON as the run goes, so a killed run
// leaves one): the text up to the last complete element of an array, with the brackets
// still open closed. Empty when nothing complete is found.
std::string CloseCutDocument(std::string_view text) {
  std::string stack;
  std::string safe_stack;
  size_t safe = std::string_view::npos;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      stack += c;
    } else if (c == '}' || c == ']') {
      if (stack.empty()) return {};
      stack.pop_back();
      if (!stack.empty() && stack.back() == '[') {
        safe = i + 1;
        safe_stack = stack;
      }
    }
  }
  if (safe == std::string_view::npos) return {};
  std::string closed(text.substr(0, safe));
  for (auto it = safe_stack.rbegin(); it != safe_stack.rend(); ++it)
    closed += *it == '[' ? ']' : '}';
  return closed;
}

// ---- reading values the way the writers write them ----

// A number, or a string holding one: nccl-tests writes NaN as "nan", root as "    -1".
std::optional<double> Number(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
    double value = 0;
    if (ParseDouble(Trim(text), value)) return value;
  }
  return std::nullopt;
}

// A JSON number as an integer type: `fallback` unless it is finite and in range (a cast of
// 1e300 or NaN to an integer is undefined behaviour, and files come from anywhere).
template <typename T>
T Whole(const std::optional<double>& value, T fallback) {
  if (!value.has_value() || !std::isfinite(*value)) return fallback;
  const double v = std::trunc(*value);
  if (v < static_cast<double>(std::numeric_limits<T>::lowest()) ||
      v >= static_cast<double>(std::numeric_limits<T>::max())) {
    return fallback;
  }
  return static_cast<T>(v);
}

std::string String(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

// nccl-tests writes its booleans as "true" / "false".
bool Flag(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_number()) return it->get<double>() != 0;
  return it->is_string() && it->get_ref<const std::string&>() == "true";
}

int Int(const Json& object, const char* key, int fallback = 0) {
  return Whole<int>(Number(object, key), fallback);
}

// The environment nccl-tests dumps whole; only what shapes a run is worth keeping.
bool RelevantEnv(std::string_view entry) {
  for (std::string_view prefix : {"NCCL_", "RCCL_", "FI_", "UCX_",
                                  "CUDA_VISIBLE_DEVICES=", "HIP_VISIBLE_DEVICES=", "OMPI_MCA_"}) {
    if (StartsWith(entry, prefix)) return true;
  }
  return false;
}

class JsonReader {
 public:
  JsonReader(std::string_view text, const std::string& source, const ParseOptions& options)
      : text_(text), options_(options), sink_(source, options.max_diagnostics_per_kind) {
    out_.source = source;
  }

  ParsedResults Read() {
    Json doc;
    if (!Parse(doc)) return Finish();
    if (doc.is_object() && doc.contains("results")) {
      ReadNcclTests(doc);
    } else if (doc.is_array()) {
      ReadRcclTests(doc, /*lines=*/false);
    } else {
      sink_.Error("format", 1,
                  "JSON, but not a results document: expected nccl-tests -J or fabricscope JSON "
                  "(an object with \"results\"), or rccl-tests -Z json (a list of {\"name\", "
                  "\"size\", \"busBw\", ...})");
    }
    return Finish();
  }

 private:
  ParsedResults Finish() {
    if (out_.runs.empty() && !sink_.HasErrors()) {
      sink_.Error("no results", 0, NoResultsMessage(out_.format.empty() ? "JSON" : out_.format));
    }
    if (out_.format.empty()) out_.format = "JSON";
    out_.diagnostics = sink_.Take();
    return std::move(out_);
  }

  bool Parse(Json& doc) {
    try {
      doc = Json::parse(text_.begin(), text_.end());
      return true;
    } catch (const Json::parse_error& e) {
      const size_t at = e.byte > 0 ? e.byte - 1 : 0;
      if (at + 1 >= TrimRight(text_).size()) {
        // Cut off: keep what was complete.
        const std::string closed = CloseCutDocument(text_);
        if (!closed.empty()) {
          try {
            doc = Json::parse(closed);
            sink_.Warn("truncated", LineOfOffset(text_, at),
                       "the JSON document ends early (the run was cut off while writing it): "
                       "the complete results before this point are read");
            return true;
          } catch (const Json::exception&) {
          }
        }
      }
      // Older rccl-tests write one record per line, not a list.
      if (TrimLeft(text_).substr(0, 1) == "{" && ReadRecordLines()) return false;
      std::string what = e.what();
      const size_t bracket = what.find("] ");
      if (bracket != std::string::npos) what = what.substr(bracket + 2);
      sink_.Error("syntax", LineOfOffset(text_, at),
                  "not valid JSON (" + what + "); fix or re-export the file");
      return false;
    } catch (const Json::out_of_range& e) {
      // A number beyond a double ("2.4e527"): it escaped as a bare exception before (found
      // by tests/fuzz json_fuzz).
      sink_.Error("syntax", 1,
                  std::string("not valid JSON (") + e.what() + "); fix or re-export the file");
      return false;
    }
  }

  // ---- nccl-tests -J and fabricscope ----

  // The strings of the list `key` that `keep` accepts; nothing when `key` is not a list.
  template <typename Keep>
  static void AppendStrings(const Json& doc, const char* key, Keep keep,
                            std::vector<std::string>& out) {
    const auto it = doc.find(key);
    if (it == doc.end() || !it->is_array()) return;
    for (const Json& item : *it) {
      if (item.is_string() && keep(item.get_ref<const std::string&>())) {
        out.push_back(item.get<std::string>());
      }
    }
  }

  // Everything of the run but its results: versions, times, arguments, environment, notes,
  // errors and the configuration.
  void ReadRunHeader(const Json& doc, bool ours, RunResult& run) {
    run.version = String(doc, "fabricscope_version");
    run.backend = ours ? String(doc, "backend") : "nccl";
    run.backend_version = String(doc, "backend_version");
    if (const auto code = Number(doc, "nccl_version");
        code.has_value() && run.backend_version.empty()) {
      run.backend_version = NcclVersionName(Whole<long>(code, 0));
    }
    run.mpi_thread_level = String(doc, "mpi_thread_level");
    run.start_time = String(doc, "start_time");
    run.end_time = String(doc, "end_time");
    const auto any = [](const std::string&) { return true; };
    AppendStrings(doc, "args", any, run.args);
    AppendStrings(
        doc, "env", [](const std::string& e) { return RelevantEnv(e); }, run.env);
    AppendStrings(doc, "notes", any, run.notes);
    AppendStrings(
        doc, "errors", [](const std::string& e) { return !e.empty(); }, run.errors);
    if (const auto it = doc.find("config"); it != doc.end() && it->is_object())
      ReadConfig(*it, run);
    run.nranks = Int(doc, "nranks", static_cast<int>(run.ranks.size()));
    // fabricscope's file of a run that ended early (one that had not ended at all has a null
    // end_time, which is warned of on its own).
    if (const auto it = doc.find("complete");
        it != doc.end() && it->is_boolean() && !*it && !run.end_time.empty()) {
      sink_.Warn("incomplete", 1,
                 String(doc, "incomplete") + ": the rows are those measured until then");
    }
  }

  void ReadNcclTests(const Json& doc) {
    RunResult run;
    run.source = sink_.file() + ":1";
    const bool ours = doc.contains("fabricscope_version") || String(doc, "tool") == "fabricscope";
    run.tool = ours ? "fabricscope" : "nccl-tests";
    out_.format = run.tool + " JSON";
    ReadRunHeader(doc, ours, run);

    // One nccl-tests binary runs one collective: its name is argv[0].
    std::string collective = options_.collective;
    if (collective.empty() && !run.args.empty()) {
      const std::string name = CanonicalCollective(run.args[0]);
      for (const CollectiveSpec& spec : Collectives()) {
        if (spec.name == name) collective = name;
      }
    }
    const Json& results = doc["results"];
    if (!results.is_array()) {
      sink_.Error("format", 1, "\"results\" is not a list: not an nccl-tests -J document");
      return;
    }
    const std::vector<size_t> offsets = ElementOffsets(text_, "results");
    for (size_t i = 0; i < results.size(); ++i) {
      const size_t line = i < offsets.size() ? LineOfOffset(text_, offsets[i]) : 1;
      ReadResult(results[i], i, line, run, collective);
    }
    if (collective.empty() && !run.rows.empty()) {
      bool unnamed = std::all_of(run.rows.begin(), run.rows.end(),
                                 [](const ResultRow& row) { return row.collective.empty(); });
      if (unnamed) NameFromColumns(run, offsets.empty() ? 1 : LineOfOffset(text_, offsets[0]));
    }
    ReadTrailers(doc, run, ours);
    if (ours && doc.contains("end_time") && doc["end_time"].is_null()) {
      sink_.Warn("truncated", 1,
                 "end_time is null: the run had not finished when this file was written; its " +
                     std::to_string(run.rows.size()) + " rows are read");
    }
    if (run.rows.empty() && run.errors.empty()) return;
    out_.runs.push_back(std::move(run));
  }

  void ReadConfig(const Json& config, RunResult& run) {
    RunConfig& c = run.config;
    c.nthreads = Int(config, "nthreads", 1);
    c.ngpus = Int(config, "ngpus", 1);
    c.min_bytes = Whole<size_t>(Number(config, "minimum_bytes"), 0);
    c.max_bytes = Whole<size_t>(Number(config, "maximum_bytes"), 0);
    c.step_factor = Whole<uint64_t>(Number(config, "step_factor"), 1);
    c.step_bytes = Whole<size_t>(Number(config, "step_bytes"), 0);
    c.warmup_iters = Int(config, "warmup_iters");
    c.iters = Int(config, "iterations");
    c.agg_iters = Int(config, "aggregated_iterations", 1);
    c.check = Int(config, "validation", 1);
    c.graph = Int(config, "graph");
    c.blocking = Flag(config, "blocking_collectives") ? 1 : 0;
    c.per_iter_timing = Flag(config, "per_iter_timing") ? 1 : 0;
    c.per_iter_skip = Int(config, "per_iter_skip");
    c.parallel_init = Flag(config, "parallel_init") ? 1 : 0;
    if (const auto it = config.find("devices"); it != config.end() && it->is_array()) {
      for (const Json& device : *it) {
        if (!device.is_object()) continue;
        RankInfo rank;
        rank.rank = Int(device, "rank");
        rank.group = Int(device, "group");
        rank.pid = Int(device, "pid");
        rank.hostname = String(device, "hostname");
        rank.device = Int(device, "device");
        rank.device_bus_id = String(device, "device_hex");
        if (rank.device_bus_id == "host") rank.device_bus_id.clear();
        rank.device_name = String(device, "device_info");
        run.ranks.push_back(std::move(rank));
      }
    }
  }

  void ReadResult(const Json& result, size_t index, size_t line, RunResult& run,
                  const std::string& collective) {
    const std::string where = "results[" + std::to_string(index) + "]";
    if (!result.is_object()) {
      sink_.Error("malformed result", line, where + " is not an object: left out");
      return;
    }
    const auto size = Number(result, "size");
    const auto count = Number(result, "count");
    if (Whole<int64_t>(size, -1) < 0 || Whole<int64_t>(count, -1) < 0) {
      sink_.Error("malformed result", line,
                  where + " lacks a numeric \"size\" and \"count\": left out");
      return;
    }
    ResultRow row;
    row.collective = String(result, "collective");
    if (row.collective.empty()) row.collective = collective;
    row.size = static_cast<size_t>(Whole<int64_t>(size, 0));
    row.count = static_cast<size_t>(Whole<int64_t>(count, 0));
    row.type = String(result, "type");
    row.redop = String(result, "redop");
    row.root = Whole<int>(Number(result, "root"), -1);
    row.iterations = Whole<int64_t>(Number(result, "actual_iterations"), 0);
    row.timestamp = String(result, "timestamp");
    const char* halves[2] = {"out_of_place", "in_place"};
    for (int h = 0; h < 2; ++h) {
      const auto it = result.find(halves[h]);
      if (it == result.end() || it->is_null()) continue;
      PlacementResult half;
      std::string problem = ReadHalf(*it, half);
      if (problem.empty()) {
        const auto per_iter = result.find(std::string(halves[h]) + "_per_iter");
        if (per_iter != result.end() && per_iter->is_object()) {
          half.iterations = ReadPerIteration(*per_iter);
        }
        (h == 0 ? row.out_of_place : row.in_place) = std::move(half);
      } else {
        sink_.Error("malformed result", line,
                    fmt::format("{}.{}: {}; the half is left out", where, halves[h], problem));
      }
    }
    if (!row.out_of_place.has_value() && !row.in_place.has_value()) {
      sink_.Error("malformed result", line, where + " has neither half: left out");
      return;
    }
    run.rows.push_back(std::move(row));
  }

  // The numbers of an array, 0 where an element is not one; empty for a non-array.
  static std::vector<double> Numbers(const Json& array) {
    std::vector<double> values;
    if (!array.is_array()) return values;
    for (const Json& value : array) values.push_back(value.is_number() ? value.get<double>() : 0.0);
    return values;
  }

  static std::vector<double> Numbers(const Json& json, const char* key) {
    const auto it = json.find(key);
    return it == json.end() ? std::vector<double>{} : Numbers(*it);
  }

  // nccl-tests' -I object (src/util.cu:571-603 at 2.19.6), which fabricscope writes too.
  static IterationStats ReadPerIteration(const Json& json) {
    IterationStats stats;
    stats.skipped_iterations = Int(json, "skipped_iterations");
    stats.min_us = Number(json, "min_us").value_or(0);
    stats.max_us = Number(json, "max_us").value_or(0);
    stats.avg_us = Number(json, "avg_us").value_or(0);
    stats.p50_us = Number(json, "p50_us").value_or(0);
    stats.p95_us = Number(json, "p95_us").value_or(0);
    stats.p99_us = Number(json, "p99_us").value_or(0);
    stats.stdev_us = Number(json, "stdev_us").value_or(0);
    stats.cv_percent = Number(json, "cv_pct").value_or(0);
    stats.times_us = Numbers(json, "times_us");
    if (const auto rows = json.find("per_process_max_times_us");
        rows != json.end() && rows->is_array()) {
      for (const Json& row : *rows) {
        if (row.is_array()) stats.per_process_max_times_us.push_back(Numbers(row));
      }
    }
    return stats;
  }

  static std::string ReadHalf(const Json& json, PlacementResult& half) {
    if (!json.is_object()) return "not an object";
    // -C writes "cpu_time" where the time goes.
    const auto time = json.contains("time") ? Number(json, "time") : Number(json, "cpu_time");
    const auto algbw = Number(json, "alg_bw");
    const auto busbw = Number(json, "bus_bw");
    if (!time.has_value() || !algbw.has_value() || !busbw.has_value()) {
      return "\"time\", \"alg_bw\" and \"bus_bw\" must be numbers";
    }
    half.time_us = *time;
    half.algbw = *algbw;
    half.busbw = *busbw;
    if (const auto wrong = Number(json, "nwrong"); wrong.has_value() && std::isfinite(*wrong)) {
      half.wrong = Whole<int64_t>(std::round(*wrong), 0);
    }
    if (const auto it = json.find("rank_times"); it != json.end() && it->is_object()) {
      RankTimes& ranks = half.ranks;
      ranks.min_us = Number(*it, "min_us").value_or(0);
      ranks.avg_us = Number(*it, "avg_us").value_or(0);
      ranks.max_us = Number(*it, "max_us").value_or(0);
      ranks.min_rank = Int(*it, "min_rank");
      ranks.max_rank = Int(*it, "max_rank");
      ranks.per_rank_us = Numbers(*it, "per_rank_us");
    }
    // Files fabricscope wrote before it wrote nccl-tests' "*_per_iter" objects.
    if (const auto it = json.find("iteration_stats"); it != json.end() && it->is_object()) {
      IterationStats stats;
      stats.min_us = Number(*it, "min_us").value_or(0);
      stats.max_us = Number(*it, "max_us").value_or(0);
      stats.p99_us = Number(*it, "p99_us").value_or(0);
      stats.cv_percent = Number(*it, "cv_percent").value_or(0);
      half.iterations = stats;
    }
    return {};
  }

  static std::optional<TestSummary> Trailer(const Json& object) {
    const auto avg = object.find("average_bus_bandwidth");
    if (avg == object.end() || !avg->is_object()) return std::nullopt;
    const auto bandwidth = Number(*avg, "bandwidth");
    if (!bandwidth.has_value()) return std::nullopt;
    TestSummary summary;
    summary.avg_busbw = *bandwidth;
    if (const auto oob = object.find("out_of_bounds"); oob != object.end() && oob->is_object()) {
      summary.out_of_bounds = Whole<int64_t>(Number(*oob, "count"), 0);
    }
    summary.okay = summary.out_of_bounds == 0 && String(*avg, "okay") != "false";
    return summary;
  }

  void ReadTrailers(const Json& doc, RunResult& run, bool ours) {
    if (ours) {
      if (const auto it = doc.find("tests"); it != doc.end() && it->is_array()) {
        for (const Json& test : *it) {
          if (!test.is_object()) continue;
          if (auto summary = Trailer(test)) {
            summary->collective = String(test, "collective");
            summary->rows = Whole<size_t>(Number(test, "rows"), 0);
            run.printed.push_back(std::move(*summary));
          }
        }
        return;
      }
    }
    if (auto summary = Trailer(doc)) {
      summary->collective = run.rows.empty() ? std::string() : run.rows.front().collective;
      summary->rows = run.rows.size();
      run.printed.push_back(std::move(*summary));
    }
  }

  void NameFromColumns(RunResult& run, size_t line) {
    const Inference guess = InferCollective(run.rows.data(), run.rows.size(), run.nranks);
    if (run.nranks == 0) run.nranks = guess.nranks;
    std::string name = guess.collective.empty() ? "unknown" : guess.collective;
    if (guess.collective.empty()) {
      sink_.Warn("collective", line,
                 "the file does not name the collective (no args[0]) and its columns do not tell: "
                 "reported as 'unknown' (name it with --collective)");
    } else if (!guess.alternative.empty()) {
      sink_.Warn("collective", line,
                 "the file does not name the collective (no args[0]); its columns fit " + name +
                     " and " + guess.alternative + " alike: read as " + name +
                     " (give --collective " + guess.alternative + " if it was that)");
    }
    for (ResultRow& row : run.rows) row.collective = name;
  }

  // ---- rccl-tests -Z json ----

  // Older rccl-tests: one {"name":AllReduce, ...} per line, strings unquoted. Read with a
  // loose key:value split; returns true when the lines were such records.
  bool ReadRecordLines() {
    Json records = Json::array();
    size_t line_no = 0;
    size_t start = 0;
    while (start < text_.size()) {
      size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      ++line_no;
      const std::string_view line = Trim(text_.substr(start, end - start));
      start = end + 1;
      if (line.empty()) continue;
      if (line.front() != '{' || line.back() != '}') return false;
      Json record = Json::object();
      std::string_view inside = line.substr(1, line.size() - 2);
      while (!inside.empty()) {
        const size_t comma = inside.find(',');
        std::string_view pair = Trim(inside.substr(0, comma));
        inside = comma == std::string_view::npos ? std::string_view() : inside.substr(comma + 1);
        const size_t colon = pair.find(':');
        if (colon == std::string_view::npos) return false;
        std::string_view key = Trim(pair.substr(0, colon));
        std::string_view value = Trim(pair.substr(colon + 1));
        if (key.size() >= 2 && key.front() == '"' && key.back() == '"')
          key = key.substr(1, key.size() - 2);
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
          value = value.substr(1, value.size() - 2);
        double number = 0;
        if (ParseDouble(value, number)) {
          record[std::string(key)] = number;
        } else {
          record[std::string(key)] = std::string(value);
        }
      }
      record["__line"] = line_no;
      records.push_back(std::move(record));
    }
    if (records.empty()) return false;
    ReadRcclTests(records, /*lines=*/true);
    return true;
  }

  void ReadRcclTests(const Json& records, bool lines) {
    out_.format = "rccl-tests JSON";
    RunResult run;
    run.tool = "rccl-tests";
    run.backend = "rccl";
    run.source = sink_.file() + ":1";
    const std::vector<size_t> offsets = lines ? std::vector<size_t>() : ElementOffsets(text_, "");
    for (size_t i = 0; i < records.size(); ++i) {
      const Json& record = records[i];
      size_t line = 1;
      if (lines && record.is_object()) line = static_cast<size_t>(record.value("__line", 1));
      if (!lines && i < offsets.size()) line = LineOfOffset(text_, offsets[i]);
      const std::string where = "record " + std::to_string(i);
      if (!record.is_object()) {
        sink_.Error("malformed result", line, where + " is not an object: left out");
        continue;
      }
      const auto size = Number(record, "size");
      const auto time = Number(record, "time");
      const auto algbw = Number(record, "algBw");
      const auto busbw = Number(record, "busBw");
      if (Whole<int64_t>(size, -1) < 0 || !time.has_value() || !algbw.has_value() ||
          !busbw.has_value()) {
        sink_.Error("malformed result", line,
                    where +
                        " lacks numeric \"size\", \"time\", \"algBw\" and \"busBw\": left out "
                        "(is this rccl-tests -Z json output?)");
        continue;
      }
      const int ranks = Int(record, "ranks", Int(record, "gpus", 0));
      if (ranks > run.nranks) run.nranks = ranks;
      std::string collective = options_.collective;
      if (collective.empty()) collective = CanonicalCollective(String(record, "name"));
      PlacementResult half;
      half.time_us = *time;
      half.algbw = *algbw;
      half.busbw = *busbw;
      if (const auto wrong = Number(record, "wrong"); wrong.has_value()) {
        half.wrong = Whole<int64_t>(std::round(*wrong), 0);
      }
      const bool in_place = Flag(record, "inPlace");
      const std::string type = String(record, "type");
      const std::string redop = String(record, "redop");
      const auto bytes = static_cast<size_t>(Whole<int64_t>(size, 0));
      // The out-of-place record, then the in-place one, of each size.
      if (run.rows.empty() || run.rows.back().size != bytes ||
          run.rows.back().collective != collective || run.rows.back().type != type ||
          (in_place ? run.rows.back().in_place : run.rows.back().out_of_place).has_value()) {
        ResultRow row;
        row.collective = collective;
        row.size = bytes;
        row.type = type;
        row.redop = redop.empty() ? "none" : redop;
        row.count = CountOf(collective, bytes, type, ranks);
        run.rows.push_back(std::move(row));
      }
      (in_place ? run.rows.back().in_place : run.rows.back().out_of_place) = std::move(half);
    }
    if (!run.rows.empty()) out_.runs.push_back(std::move(run));
  }

  std::string_view text_;
  const ParseOptions& options_;
  DiagnosticSink sink_;
  ParsedResults out_;
};

}  // namespace

size_t CountOf(const std::string& collective, size_t bytes, const std::string& type, int ranks) {
  const size_t elem = ElementSizeOf(type);
  if (elem == 0) return 0;
  for (const CollectiveSpec& spec : Collectives()) {
    if (spec.name == collective && ranks > 0) return spec.counts(bytes, elem, ranks).param_count;
  }
  return bytes / elem;
}

ParsedResults ParseJsonResults(std::string_view text, const std::string& source,
                               const ParseOptions& options) {
  return JsonReader(text, source, options).Read();
}

}  // namespace fabricscope::analyze
