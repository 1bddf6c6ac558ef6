// Completed collectives as NCCL Inspector's JSONL: one self-contained object a line (header,
// metadata, coll_perf with event_trace_ts, Inspector's layout before v4.3), so tools that read
// Inspector's files read these; what Inspector does not carry is under "fabricscope".
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "profiler/recorder.h"

namespace fabricscope::profiler {

// One line, without the newline.
std::string InspectorLine(const Completed& c, const std::string& hostname, int pid,
                          const std::string& job);
// One peer's link (ProxyOp times, median over `op_us`), without the newline.
std::string LinkLine(const CommInfo& comm, int peer, bool send, std::vector<double>* op_us,
                     int64_t first_ns, int64_t last_ns, const std::string& hostname, int pid);

class JsonlSink : public Sink {
 public:
  // Creates `dir` and opens <dir>/<hostname>-<pid>.jsonl for appending; `error` says why not.
  JsonlSink(const Settings& settings, std::string* error);
  ~JsonlSink() override;
  bool ok() const { return file_ != nullptr; }
  const std::string& path() const { return path_; }

  void Write(const std::vector<Completed>& batch) override;
  void Dropped(const CommInfo& comm, uint64_t records) override;
  void Links(const CommInfo& comm, const std::vector<LinkRecord>& links) override;

 private:
  std::string hostname_;
  std::string job_;
  int pid_ = 0;
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace fabricscope::profiler
