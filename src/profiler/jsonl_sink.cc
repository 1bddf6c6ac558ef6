#include "profiler/jsonl_sink.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

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

}  // namespace

// Written with fmt rather than built as a JSON object: the drain thread writes every
// collective of the job, and this is 10x faster (bench/profiler_overhead).
std::string InspectorLine(const Completed& c, const std::string& hostname, int pid,
                          const std::string& job) {
  const CollectiveRecord& r = c.record;
  std::string line = fmt::format(
      R"({{"header":{{"id":{},"rank":{},"n_ranks":{},"nnodes":{}}},)"
      R"("metadata":{{"inspector_output_format_version":"v4.0","git_rev":"",)"
      R"("rec_mechanism":"fabricscope_profiler","dump_timestamp_us":{},"hostname":{},"pid":{}}},)",
      Quoted(CommInfo{c.comm->id, "", 0, 0, 0}.Label()), c.comm->rank, c.comm->nranks,
      c.comm->nnodes, r.stop_ns / 1000, Quoted(hostname), pid);
  line += fmt::format(
      R"("coll_perf":{{"coll":{},"coll_sn":{},"coll_msg_size_bytes":{},"coll_exec_time_us":{},)"
      R"("coll_timing_source":"collective_cpu","coll_algobw_gbs":{},"coll_busbw_gbs":{},)"
      R"("coll_algo":{},"coll_proto":{},"event_trace_ts":{{"coll_start_ts":{},"coll_stop_ts":{}}}}},)",
      Quoted(r.func.view()), r.seq, c.bytes, c.exec_us, c.algbw_gbs, c.busbw_gbs,
      Quoted(r.algo.view()), Quoted(r.proto.view()), r.start_ns / 1000, r.stop_ns / 1000);
  line +=
      fmt::format(R"("fabricscope":{{"job":{},"comm_name":{},"count":{},"datatype":{},"root":{},)"
                  R"("channels":{},"start_ns":{},"stop_ns":{}}}}})",
                  Quoted(job), Quoted(c.comm->name), r.count, Quoted(r.datatype.view()), r.root,
                  static_cast<int>(r.channels), r.start_ns, r.stop_ns);
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

void JsonlSink::Dropped(const CommInfo& comm, uint64_t records) {
  if (file_ == nullptr) return;
  // Inspector's dump_stats record, so the loss is visible in the file itself.
  nlohmann::ordered_json line;
  line["header"] = {{"id", CommInfo{comm.id, "", 0, 0, 0}.Label()},
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
