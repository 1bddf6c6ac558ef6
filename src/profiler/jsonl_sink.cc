#include "profiler/jsonl_sink.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

namespace fabricscope::profiler {

namespace {

// A JSON string literal; NCCL's names need no escaping, host and communicator names might.
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(ch));
    } else {
      out += ch;
    }
  }
  return out + '"';
}

// header and metadata as Inspector writes them (NVIDIA/nccl v2.30.7-1
// plugins/profiler/inspector/inspector_json.cc, inspectorCommInfoHeader and
// inspectorCommInfoMetaHeader): header.comm_name is "unknown" when NCCL has no name for it.
std::string HeaderAndMetadata(const CommInfo& comm, int64_t dump_us, const std::string& hostname,
                              int pid) {
  return fmt::format(
      R"({{"header":{{"id":{},"comm_name":{},"rank":{},"n_ranks":{},"nnodes":{}}},)"
      R"("metadata":{{"inspector_output_format_version":"v4.0","git_rev":"",)"
      R"("rec_mechanism":"fabricscope_profiler","dump_timestamp_us":{},"hostname":{},"pid":{}}},)",
      Quoted(CommInfo{comm.id, "", 0, 0, 0}.Label()),
      Quoted(comm.name.empty() ? "unknown" : comm.name), comm.rank, comm.nranks, comm.nnodes,
      dump_us, Quoted(hostname), pid);
}

}  // namespace

// Written with fmt rather than built as a JSON object: the drain thread writes every
// collective of the job, and this is 10x faster (bench/profiler_overhead). The fields and
// units are Inspector's (inspector_json.cc, inspectorCompletedColl/P2p): msg size is count x
// type size of NCCL's descriptor; exec time in us (ours keeps the fraction); the timing
// source names the clock.
std::string InspectorLine(const Completed& c, const std::string& hostname, int pid,
                          const std::string& job) {
  const CollectiveRecord& r = c.record;
  std::string line = HeaderAndMetadata(*c.comm, r.stop_ns / 1000, hostname, pid);
  const char* kind = r.p2p ? "p2p" : "coll";
  line += fmt::format(R"("{}_perf":{{"{}":{},"{}_sn":{},)", kind, kind, Quoted(r.func.view()), kind,
                      r.seq);
  if (r.p2p) line += fmt::format(R"("p2p_peer":{},)", r.root);
  line +=
      fmt::format(R"("{0}_msg_size_bytes":{1},"{0}_exec_time_us":{2},"{0}_timing_source":"{3}",)"
                  R"("{0}_algobw_gbs":{4},"{0}_busbw_gbs":{5},)",
                  kind, c.bytes, c.exec_us, TimingSourceName(r.timing), c.algbw_gbs, c.busbw_gbs);
  if (!r.p2p) {
    line += fmt::format(R"("coll_algo":{},"coll_proto":{},)", Quoted(r.algo.view()),
                        Quoted(r.proto.view()));
  }
  line += fmt::format(R"("event_trace_ts":{{"{0}_start_ts":{1},"{0}_stop_ts":{2}}}}},)", kind,
                      r.start_ns / 1000, r.enqueue_stop_ns / 1000);
  line +=
      fmt::format(R"("fabricscope":{{"job":{},"comm_name":{},"count":{},"datatype":{},"root":{},)"
                  R"("channels":{},"start_ns":{},"stop_ns":{}}}}})",
                  Quoted(job), Quoted(c.comm->name), r.count, Quoted(r.datatype.view()), r.root,
                  static_cast<int>(r.channels), r.start_ns, r.stop_ns);
  return line;
}

namespace {

double MedianUs(std::vector<double>* v) {
  if (v->empty()) return 0;
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(v->size() / 2), v->end());
  return (*v)[v->size() / 2];
}

}  // namespace

// One line per peer and direction for each drain: how long this rank's ProxyOps towards that
// peer took (median), so that watch can compare the links of a communicator.
std::string LinkLine(const CommInfo& comm, int peer, bool send, std::vector<double>* op_us,
                     int64_t first_ns, int64_t last_ns, const std::string& hostname, int pid) {
  std::string line = HeaderAndMetadata(comm, last_ns / 1000, hostname, pid);
  line +=
      fmt::format(R"("fabricscope_link":{{"peer":{},"direction":"{}","ops":{},"median_us":{},)"
                  R"("start_ns":{},"stop_ns":{}}}}})",
                  peer, send ? "send" : "recv", op_us->size(), MedianUs(op_us), first_ns, last_ns);
  return line;
}

JsonlSink::JsonlSink(const Settings& settings, std::string* error)
    : hostname_(settings.hostname), job_(settings.job), pid_(static_cast<int>(::getpid())) {
  std::error_code ec;
  std::filesystem::create_directories(settings.dump_dir, ec);
  path_ = settings.dump_dir + "/" + hostname_ + "-" + std::to_string(pid_) + ".jsonl";
  file_ = std::fopen(path_.c_str(), "ae");
  if (file_ == nullptr) {
    *error = "cannot write " + path_ + ": " + std::strerror(errno) +
             "; set FABRICSCOPE_PROFILER_DUMP_DIR to a writable directory";
  }
}

JsonlSink::~JsonlSink() {
  if (file_ != nullptr) std::fclose(file_);
}

void JsonlSink::Write(const std::vector<Completed>& batch) {
  if (file_ == nullptr) return;
  for (const Completed& c : batch) {
    const std::string line = InspectorLine(c, hostname_, pid_, job_);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fputc('\n', file_);
  }
  std::fflush(file_);  // a live `fabricscope watch --follow` reads whole lines as they come
}

void JsonlSink::Links(const CommInfo& comm, const std::vector<LinkRecord>& links) {
  if (file_ == nullptr) return;
  struct Times {
    std::vector<double> op_us;
    int64_t first = 0;
    int64_t last = 0;
  };
  std::map<std::pair<int, bool>, Times> by_link;
  for (const LinkRecord& l : links) {
    Times& t = by_link[{l.peer, l.send}];
    t.op_us.push_back(static_cast<double>(l.stop_ns - l.start_ns) / 1e3);
    t.first = t.first == 0 ? l.start_ns : std::min(t.first, l.start_ns);
    t.last = std::max(t.last, l.stop_ns);
  }
  for (auto& [key, t] : by_link) {
    const std::string line =
        LinkLine(comm, key.first, key.second, &t.op_us, t.first, t.last, hostname_, pid_);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fputc('\n', file_);
  }
  std::fflush(file_);
}

void JsonlSink::Dropped(const CommInfo& comm, uint64_t records) {
  if (file_ == nullptr) return;
  // Inspector's dump_stats record, so the loss is visible in the file itself.
  nlohmann::ordered_json line;
  line["header"] = {{"id", CommInfo{comm.id, "", 0, 0, 0}.Label()},
                    {"comm_name", comm.name.empty() ? "unknown" : comm.name},
                    {"rank", comm.rank},
                    {"n_ranks", comm.nranks},
                    {"nnodes", comm.nnodes}};
  line["dump_stats"] = {{"coll_records", 0}, {"coll_dropped_since_last_dump", records}};
  const std::string text = line.dump();
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

}  // namespace fabricscope::profiler
