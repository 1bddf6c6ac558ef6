// NCCL Inspector JSONL (and the fabricscope profiler's, which writes the same fields): the
// records themselves for `watch`, and the results record for `analyze`.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "analyze/readers.h"
#include "fabricscope/inspector.h"

namespace fabricscope {
namespace {

using Json = nlohmann::json;

std::string_view NextLine(std::string_view text, size_t* pos) {
  const size_t end = std::min(text.find('\n', *pos), text.size());
  std::string_view line = text.substr(*pos, end - *pos);
  *pos = end + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Every key the readers meet, as a path, with its use. NVIDIA/nccl v2.30.7-1
// plugins/profiler/inspector/inspector_json.cc: inspectorCommInfoHeader (:29-35),
// inspectorCommInfoMetaHeader (:61-68), inspectorCompletedCollVerbose (:96-129),
// inspectorCompletedP2pVerbose (:141-174), inspectorCompletedColl (:208-220),
// inspectorCompletedP2p; the record objects at :310-316 and :355-361. The rest are the
// profiler's (src/profiler/jsonl_sink.cc) and the v4.3 dump_stats marker's.
constexpr InspectorKey kKeys[] = {
    {"header", "read: the communicator and rank of the record"},
    {"header.id", "read: the communicator (its hash)"},
    {"header.comm_name", "read: the communicator's name"},
    {"header.rank", "read"},
    {"header.n_ranks", "read: the communicator's size (AllGather and ReduceScatter sizes)"},
    {"header.nnodes", "read"},
    {"metadata", "read: where and when the record was written"},
    {"metadata.inspector_output_format_version",
     "ignored: v4.0 to v4.3 are read alike; keys a later one adds are named as unknown"},
    {"metadata.git_rev", "ignored: the writer's build"},
    {"metadata.rec_mechanism",
     "ignored: who wrote it (nccl_profiler_interface, fabricscope_profiler); the profiler's "
     "records are told by their fabricscope object"},
    {"metadata.dump_timestamp_us", "read: the record's time when it has no event trace"},
    {"metadata.hostname", "read: the rank's node"},
    {"metadata.pid", "read"},
    {"coll_perf", "read: one collective"},
    {"coll_perf.coll", "read"},
    {"coll_perf.coll_sn", "read: the order within the communicator"},
    {"coll_perf.coll_msg_size_bytes", "read"},
    {"coll_perf.coll_exec_time_us", "read"},
    {"coll_perf.coll_timing_source", "read: collective_cpu is not judged"},
    {"coll_perf.coll_algobw_gbs", "read"},
    {"coll_perf.coll_busbw_gbs", "read"},
    {"coll_perf.coll_algo", "read (the profiler's)"},
    {"coll_perf.coll_proto", "read (the profiler's)"},
    {"coll_perf.event_trace_sn",
     "ignored: the callbacks' order numbers; the times are in event_trace_ts"},
    {"coll_perf.event_trace_ts", "read: the verbose output's times"},
    {"coll_perf.event_trace_ts.coll_start_ts", "read: the start, for stragglers and windows"},
    {"coll_perf.event_trace_ts.coll_stop_ts", "read"},
    {"coll_perf.event_trace_ts.kernel_events",
     "ignored: per-channel kernel times; coll_exec_time_us is already the longest channel"},
    {"p2p_perf", "read: one send or receive"},
    {"p2p_perf.p2p", "read"},
    {"p2p_perf.p2p_sn", "read: the order within the communicator"},
    {"p2p_perf.p2p_peer", "read"},
    {"p2p_perf.p2p_msg_size_bytes", "read"},
    {"p2p_perf.p2p_exec_time_us", "read"},
    {"p2p_perf.p2p_timing_source", "read"},
    {"p2p_perf.p2p_algobw_gbs", "read"},
    {"p2p_perf.p2p_busbw_gbs", "read"},
    {"p2p_perf.event_trace_sn",
     "ignored: the callbacks' order numbers; the times are in event_trace_ts"},
    {"p2p_perf.event_trace_ts", "read: the verbose output's times"},
    {"p2p_perf.event_trace_ts.p2p_start_ts", "read"},
    {"p2p_perf.event_trace_ts.p2p_stop_ts", "read"},
    {"p2p_perf.event_trace_ts.kernel_events",
     "ignored: per-channel kernel times; p2p_exec_time_us is already the longest channel"},
    {"dump_stats", "read: a v4.3 marker; its header and metadata go with the records after it"},
    {"dump_stats.coll_dropped_since_last_dump", "read: records the writer lost"},
    {"dump_stats.coll_records", "ignored: the count of the records that follow"},
    {"dump_stats.p2p_records", "ignored: the count of the records that follow"},
    {"fabricscope", "read: the profiler's own fields"},
    {"fabricscope.job", "read"},
    {"fabricscope.datatype", "read: the row's type"},
    {"fabricscope.comm_name", "ignored: header.comm_name has it"},
    {"fabricscope.count", "ignored: coll_msg_size_bytes has the size"},
    {"fabricscope.root", "ignored: not judged"},
    {"fabricscope.channels", "ignored: not judged"},
    {"fabricscope.start_ns", "ignored: event_trace_ts has the start (us)"},
    {"fabricscope.stop_ns", "ignored: event_trace_ts has the stop (us)"},
    {"fabricscope_link", "read: one rank's ProxyOp times towards one peer"},
    {"fabricscope_link.peer", "read"},
    {"fabricscope_link.direction", "read"},
    {"fabricscope_link.ops", "read"},
    {"fabricscope_link.median_us", "read"},
    {"fabricscope_link.start_ns", "read"},
    {"fabricscope_link.stop_ns", "ignored: the window is the start's"},
};

// The entry of `path`, null when none names it.
const InspectorKey* FindKey(std::string_view path) {
  static const std::map<std::string_view, const InspectorKey*> kByPath = [] {
    std::map<std::string_view, const InspectorKey*> by_path;
    for (const InspectorKey& k : kKeys) by_path.emplace(k.path, &k);
    return by_path;
  }();
  const auto it = kByPath.find(path);
  return it == kByPath.end() ? nullptr : it->second;
}

// The keys of `object` under `prefix` that no entry names, first met at `where`; an ignored
// key's contents are not walked.
void CollectUnknown(const Json& object, const std::string& prefix, const std::string& where,
                    std::map<std::string, std::string>* out) {
  for (const auto& [key, value] : object.items()) {
    std::string path = prefix;
    if (!path.empty()) path += '.';
    path += key;
    const InspectorKey* known = FindKey(path);
    if (known == nullptr) {
      out->emplace(path, where);
    } else if (known->use.starts_with("ignored:")) {
      continue;
    } else if (value.is_object()) {
      CollectUnknown(value, path, where, out);
    }
  }
}

// The next JSON object's text and its first line number: one line, as Inspector writes, or
// several, as its README shows them and `jq .` prints them (the braces balanced outside
// strings). Blank lines are skipped; the text is empty at the end.
struct ObjectText {
  std::string text;
  size_t line = 0;
};

int BraceBalance(std::string_view line, int depth, bool* in_string) {
  bool escaped = false;
  for (const char c : line) {
    if (*in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        *in_string = false;
      }
    } else if (c == '"') {
      *in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return depth;
}

ObjectText NextObject(std::string_view text, size_t* pos, size_t* number) {
  ObjectText out;
  int depth = 1;
  bool in_string = false;
  while (*pos < text.size()) {
    const std::string_view line = NextLine(text, pos);
    const size_t this_line = (*number)++;
    if (out.text.empty()) {
      const size_t first = line.find_first_not_of(" \t");
      if (first == std::string_view::npos) continue;
      out.line = this_line;
      out.text.assign(line);
      // One object a line, as Inspector writes; a line that is only "{" opens a printed one.
      const std::string_view trimmed = line.substr(first, line.find_last_not_of(" \t") + 1 - first);
      if (trimmed != "{") break;
      continue;
    }
    out.text.append("\n").append(line);
    depth = BraceBalance(line, depth, &in_string);
    if (depth <= 0) break;
  }
  return out;
}

// nlohmann's get<integer> of a float is a static_cast, undefined beyond the integer's range
// (inspector_jsonl_fuzz: a "rank" of 2.8e28): a float read as an integer must be a whole
// number the type holds, else std::out_of_range, which the reader reports as a bad line.
template <typename T>
T Get(const Json& value) {
  if constexpr (std::is_integral_v<T>) {
    if (value.is_number_float()) {
      const double d = value.get<double>();
      const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);  // max + 1, exact
      if (!(d >= static_cast<double>(std::numeric_limits<T>::lowest()) && d < limit) ||
          d != std::trunc(d)) {
        throw std::out_of_range(value.dump() + " is not a whole number in the range of the field");
      }
    }
  }
  return value.get<T>();
}

template <typename T>
T Field(const Json& object, const char* name, T fallback) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return fallback;
  return Get<T>(*it);
}

void FillContext(InspectorRecord* r, const Json& header, const Json& metadata) {
  r->comm = header.contains("id") && header["id"].is_string() ? header["id"].get<std::string>()
                                                              : std::string();
  r->comm_name = Field(header, "comm_name", std::string());
  r->rank = Field(header, "rank", 0);
  r->nranks = Field(header, "n_ranks", 0);
  r->nnodes = Field(header, "nnodes", 0);
  r->hostname = Field(metadata, "hostname", std::string());
  r->pid = Field(metadata, "pid", 0);
  // inspectorCommInfoMetaHeader (inspector_json.cc:64 at NVIDIA/nccl v2.30.7-1): the time of
  // the dump, on every record, verbose or not.
  if (const auto it = metadata.find("dump_timestamp_us"); it != metadata.end() && !it->is_null()) {
    r->dump_us = Get<int64_t>(*it);
  }
}

// coll_perf or p2p_perf (inspector_json.cc, inspectorCompletedColl/P2p at NVIDIA/nccl
// v2.30.7-1): the same fields under the prefix "coll_" or "p2p_".
InspectorRecord FromPerf(const Json& perf, const std::string& kind) {
  InspectorRecord r;
  r.p2p = kind == "p2p";
  r.collective = perf.at(kind).get<std::string>();
  r.seq = Field<uint64_t>(perf, (kind + "_sn").c_str(), 0);
  r.msg_bytes = Get<uint64_t>(perf.at(kind + "_msg_size_bytes"));
  r.bytes = r.msg_bytes;
  r.exec_us = perf.at(kind + "_exec_time_us").get<double>();
  r.timing_source = Field(perf, (kind + "_timing_source").c_str(), std::string());
  r.algbw_gbs = Field(perf, (kind + "_algobw_gbs").c_str(), 0.0);
  r.busbw_gbs = Field(perf, (kind + "_busbw_gbs").c_str(), 0.0);
  r.algo = Field(perf, "coll_algo", std::string());
  r.proto = Field(perf, "coll_proto", std::string());
  r.peer = Field(perf, "p2p_peer", -1);
  if (const auto ts = perf.find("event_trace_ts"); ts != perf.end() && ts->is_object()) {
    if (ts->contains(kind + "_start_ts")) r.start_us = Get<int64_t>((*ts)[kind + "_start_ts"]);
    if (ts->contains(kind + "_stop_ts")) r.stop_us = Get<int64_t>((*ts)[kind + "_stop_ts"]);
  }
  return r;
}

InspectorLink FromLink(const Json& link, const Json& header, const Json& metadata) {
  InspectorLink l;
  l.comm = header.contains("id") && header["id"].is_string() ? header["id"].get<std::string>()
                                                             : std::string();
  l.rank = Field(header, "rank", 0);
  l.nranks = Field(header, "n_ranks", 0);
  l.hostname = Field(metadata, "hostname", std::string());
  l.peer = Get<int>(link.at("peer"));
  l.send = link.at("direction").get<std::string>() == "send";
  l.ops = Get<uint64_t>(link.at("ops"));
  l.median_us = link.at("median_us").get<double>();
  l.start_us = Field<int64_t>(link, "start_ns", 0) / 1000;
  return l;
}

void FillOurs(InspectorRecord* r, const Json& ours) {
  r->datatype = Field(ours, "datatype", std::string());
  r->job = Field(ours, "job", std::string());
}

// One line; returns an error message, empty when fine. `header` and `metadata`: what the last
// v4.3 dump_stats marker gives the records after it (null before the first marker). They are
// two plain values rather than a struct: a struct of nlohmann::json members has implicit
// noexcept special members that clang-tidy's bugprone-exception-escape flags.
std::string ReadLine(const Json& line, Json* header, Json* metadata, InspectorRead* out,
                     const std::string& where) {
  if (!line.is_object()) return "not a JSON object";
  if (const auto stats = line.find("dump_stats"); stats != line.end()) {
    out->dropped += Field<uint64_t>(*stats, "coll_dropped_since_last_dump", 0);
    *header = line.value("header", Json::object());
    *metadata = line.value("metadata", Json::object());
    return "";
  }
  const bool own_context = line.contains("header");
  if (const auto link = line.find("fabricscope_link"); link != line.end()) {
    if (!own_context) return "a fabricscope_link record without header";
    InspectorLink l = FromLink(*link, line["header"], line.value("metadata", Json::object()));
    l.source = where;
    out->links.push_back(std::move(l));
    return "";
  }
  std::string kind = "coll";
  auto perf = line.find("coll_perf");
  if (perf == line.end()) {
    perf = line.find("p2p_perf");
    kind = "p2p";
  }
  if (perf == line.end()) return "";  // proxy_trace and others: not operations
  if (!own_context && header->is_null()) {
    return "a " + kind + "_perf record without header: no dump_stats marker before it";
  }
  InspectorRecord r = FromPerf(*perf, kind);
  FillContext(&r, own_context ? line["header"] : *header,
              own_context ? line.value("metadata", Json::object()) : *metadata);
  analyze::SizeAsNcclTests(&r);
  if (const auto ours = line.find("fabricscope"); ours != line.end()) FillOurs(&r, *ours);
  r.source = where;
  out->records.push_back(std::move(r));
  return "";
}

}  // namespace

bool LooksLikeInspectorJsonl(std::string_view text) {
  size_t pos = 0;
  size_t number = 1;
  const ObjectText first = NextObject(text, &pos, &number);
  const std::string_view object = first.text;
  if (object.empty() || object[object.find_first_not_of(" \t")] != '{') return false;
  return object.find("\"coll_perf\"") != std::string_view::npos ||
         object.find("\"p2p_perf\"") != std::string_view::npos ||
         object.find("\"dump_stats\"") != std::string_view::npos ||
         object.find("\"fabricscope_link\"") != std::string_view::npos;
}

InspectorRead ReadInspectorJsonl(std::string_view text, const std::string& source,
                                 size_t first_line) {
  InspectorRead out;
  Json header;  // of the last dump_stats marker
  Json metadata;
  std::map<std::string, std::string> unknown;
  size_t pos = 0;
  size_t next_line = first_line;
  while (pos < text.size()) {
    const ObjectText object = NextObject(text, &pos, &next_line);
    if (object.text.empty()) break;
    const size_t number = object.line;
    const std::string where = source + ":" + std::to_string(number);
    std::string error;
    try {
      const Json line = Json::parse(object.text);
      error = ReadLine(line, &header, &metadata, &out, where);
      if (error.empty() && line.is_object()) CollectUnknown(line, "", where, &unknown);
    } catch (const Json::exception& e) {
      error = std::string("not an Inspector record (") + e.what() + ")";
    } catch (const std::out_of_range& e) {
      error = std::string("not an Inspector record (") + e.what() + ")";
    }
    if (!error.empty()) {
      out.diagnostics.push_back({Diagnostic::Severity::kError, source, number,
                                 error + "; expected one JSON object a line as NCCL Inspector "
                                         "or libnccl-profiler-fabricscope.so write them"});
    }
  }
  out.unknown_keys.assign(unknown.begin(), unknown.end());
  return out;
}

std::span<const InspectorKey> InspectorKeys() { return kKeys; }

Diagnostic UnknownKeysDiagnostic(const std::vector<std::pair<std::string, std::string>>& keys,
                                 const std::string& source) {
  std::string list;
  for (const auto& [path, where] : keys) {
    if (!list.empty()) list += ", ";
    list.append(path).append(" (first at ").append(where).append(")");
  }
  return {Diagnostic::Severity::kWarning, source, 0,
          "keys fabricscope does not read, left out of the judgement: " + list +
              "; NCCL Inspector's format v4.0 and the profiler's keys are all known "
              "(docs/watch.md), so a newer writer added these"};
}

std::string CollectiveOfInspector(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"AllReduce", "all_reduce"}, {"AllGather", "all_gather"}, {"ReduceScatter", "reduce_scatter"},
      {"Broadcast", "broadcast"},  {"Reduce", "reduce"},        {"AllToAll", "alltoall"},
      {"AlltoAll", "alltoall"},    {"Gather", "gather"},        {"Scatter", "scatter"},
      {"SendRecv", "sendrecv"}};
  const auto it = kNames.find(name);
  return it == kNames.end() ? std::string() : it->second;
}

namespace analyze {

// nccl-tests' size: Inspector counts one rank's part for AllGather and ReduceScatter
// (inspector.cc, inspectorComputeOpBw multiplies those by nranks for the traffic).
void SizeAsNcclTests(InspectorRecord* r) {
  if (!r->p2p && (r->collective == "AllGather" || r->collective == "ReduceScatter") &&
      r->nranks > 0) {
    r->bytes = r->msg_bytes * static_cast<uint64_t>(r->nranks);
  }
}

namespace {

std::string TestTypeOf(std::string_view nccl_type) {
  static const std::map<std::string, std::string, std::less<>> kTypes = {
      {"ncclInt8", "int8"},         {"ncclUint8", "uint8"},         {"ncclInt32", "int32"},
      {"ncclUint32", "uint32"},     {"ncclInt64", "int64"},         {"ncclUint64", "uint64"},
      {"ncclFloat16", "half"},      {"ncclFloat32", "float"},       {"ncclFloat64", "double"},
      {"ncclBfloat16", "bfloat16"}, {"ncclFloat8e4m3", "fp8_e4m3"}, {"ncclFloat8e5m2", "fp8_e5m2"}};
  const auto it = kTypes.find(nccl_type);
  return it == kTypes.end() ? std::string() : it->second;
}

// The rows of one communicator: one per collective and size, in order of first appearance,
// each the mean over every record of every rank.
RunResult RunOfComm(const std::vector<const InspectorRecord*>& records) {
  RunResult run;
  run.tool = records.front()->job.empty() && records.front()->datatype.empty()
                 ? "nccl-inspector"
                 : "fabricscope-profiler";
  run.backend = "nccl";
  run.source = records.front()->source;
  run.nranks = records.front()->nranks;
  std::vector<std::pair<std::string, uint64_t>> order;
  std::map<std::pair<std::string, uint64_t>, std::vector<const InspectorRecord*>> groups;
  for (const InspectorRecord* r : records) {
    const auto key = std::make_pair(r->collective, r->bytes);
    auto& group = groups[key];
    if (group.empty()) order.push_back(key);
    group.push_back(r);
  }
  for (const auto& key : order) {
    const auto& group = groups[key];
    ResultRow row;
    row.collective = CollectiveOfInspector(key.first);
    if (row.collective.empty()) row.collective = key.first;
    row.size = key.second;
    row.type = TestTypeOf(group.front()->datatype);
    row.redop = "none";
    PlacementResult p;
    for (const InspectorRecord* r : group) {
      p.time_us += r->exec_us;
      p.algbw += r->algbw_gbs;
      p.busbw += r->busbw_gbs;
    }
    const double n = static_cast<double>(group.size());
    p.time_us /= n;
    p.algbw /= n;
    p.busbw /= n;
    row.out_of_place = p;
    row.iterations = static_cast<int64_t>(group.size()) / std::max(run.nranks, 1);
    run.rows.push_back(std::move(row));
  }
  return run;
}

}  // namespace

ParsedResults ParseInspectorResults(std::string_view text, const std::string& source,
                                    const ParseOptions&) {
  ParsedResults out;
  out.source = source;
  out.format = "NCCL Inspector JSONL";
  InspectorRead read = ReadInspectorJsonl(text, source);
  out.diagnostics = std::move(read.diagnostics);
  if (!read.unknown_keys.empty()) {
    out.diagnostics.push_back(UnknownKeysDiagnostic(read.unknown_keys, source));
  }
  std::vector<std::string> comms;
  std::map<std::string, std::vector<const InspectorRecord*>> by_comm;
  for (const InspectorRecord& r : read.records) {
    if (r.p2p) continue;  // sends and receives: no nccl-tests row of their own
    auto& list = by_comm[r.comm];
    if (list.empty()) comms.push_back(r.comm);
    list.push_back(&r);
  }
  for (const std::string& comm : comms) out.runs.push_back(RunOfComm(by_comm[comm]));
  if (out.runs.empty()) {
    out.diagnostics.push_back({Diagnostic::Severity::kError, source, 0,
                               NoResultsMessage("NCCL Inspector JSONL with coll_perf records")});
  }
  return out;
}

}  // namespace analyze
}  // namespace fabricscope
