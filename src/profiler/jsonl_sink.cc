#include "profiler/jsonl_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace fabricscope::profiler {

std::string InspectorLine(const Completed& c, const std::string& hostname, int pid,
                          const std::string& job) {
  const CollectiveRecord& r = c.record;
  nlohmann::ordered_json line;
  line["header"] = {{"id", CommInfo{c.comm->id, "", 0, 0, 0}.Label()},
                    {"rank", c.comm->rank},
                    {"n_ranks", c.comm->nranks},
                    {"nnodes", c.comm->nnodes}};
  line["metadata"] = {{"inspector_output_format_version", "v4.0"},
                      {"git_rev", ""},
                      {"rec_mechanism", "fabricscope_profiler"},
                      {"dump_timestamp_us", r.stop_ns / 1000},
                      {"hostname", hostname},
                      {"pid", pid}};
  line["coll_perf"] = {
      {"coll", r.func.view()},
      {"coll_sn", r.seq},
      {"coll_msg_size_bytes", c.bytes},
      {"coll_exec_time_us", c.exec_us},
      {"coll_timing_source", "collective_cpu"},
      {"coll_algobw_gbs", c.algbw_gbs},
      {"coll_busbw_gbs", c.busbw_gbs},
      {"coll_algo", r.algo.view()},
      {"coll_proto", r.proto.view()},
      {"event_trace_ts",
       {{"coll_start_ts", r.start_ns / 1000}, {"coll_stop_ts", r.stop_ns / 1000}}}};
  line["fabricscope"] = {{"job", job},
                         {"comm_name", c.comm->name},
                         {"count", r.count},
                         {"datatype", r.datatype.view()},
                         {"root", r.root},
                         {"channels", r.channels},
                         {"start_ns", r.start_ns},
                         {"stop_ns", r.stop_ns}};
  return line.dump();
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
