// The nccl-tests -J document (version 3) with fabricscope's additions, to a stream or to a
// file that is rewritten after every row.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/report.h"
#include "fabricscope/result.h"
#include "report/reporters.h"

namespace fabricscope {
namespace {

// ordered_json keeps nccl-tests' key order, which people diff against.
using Json = nlohmann::ordered_json;

constexpr int kNcclTestsJsonVersion = 3;

// nccl-tests writes its booleans as the strings "true" and "false"; parsers written for it
// compare strings, so the nccl-tests fields keep that form.
Json QuotedBool(bool value) { return value ? "true" : "false"; }

// nccl-tests writes NaN as the string "nan" (JSON has no NaN); nlohmann would write null.
Json Number(double value) {
  if (std::isnan(value)) return "nan";
  return value;
}

Json OptionalString(const std::string& value) {
  if (value.empty()) return nullptr;
  return value;
}

Json RankTimesJson(const RankTimes& times) {
  Json json;
  json["min_us"] = Number(times.min_us);
  json["avg_us"] = Number(times.avg_us);
  json["max_us"] = Number(times.max_us);
  json["min_rank"] = times.min_rank;
  json["max_rank"] = times.max_rank;
  Json per_rank = Json::array();
  for (double us : times.per_rank_us) per_rank.push_back(Number(us));
  json["per_rank_us"] = std::move(per_rank);
  return json;
}

Json NumberList(const std::vector<double>& values) {
  Json list = Json::array();
  for (double value : values) list.push_back(Number(value));
  return list;
}

// One placement's "time" (or, with -C, "cpu_time"), bandwidths and wrong count, the keys and
// order of nccl-tests' writeBenchmarkLineBody (src/util.cu:515-521 at 2.19.6), then
// fabricscope's per-rank times.
Json PlacementJson(const std::optional<PlacementResult>& half, bool cputime) {
  if (!half.has_value()) return nullptr;  // nccl-tests' null for a half it did not run
  Json json;
  json[cputime ? "cpu_time" : "time"] = Number(half->time_us);
  json["alg_bw"] = Number(half->algbw);
  json["bus_bw"] = Number(half->busbw);
  json["nwrong"] = half->wrong.has_value() ? Json(*half->wrong) : Json(nullptr);
  json["rank_times"] = RankTimesJson(half->ranks);
  return json;
}

// The "out_of_place_per_iter"/"in_place_per_iter" object of -I, as nccl-tests'
// writePerIterReport writes it (src/util.cu:557-605 at 2.19.6): its keys, in its order, the
// per-process rows only when more than one process ran.
Json PerIterationJson(const IterationStats& stats) {
  Json json;
  json["skipped_iterations"] = stats.skipped_iterations;
  json["min_us"] = Number(stats.min_us);
  json["max_us"] = Number(stats.max_us);
  json["avg_us"] = Number(stats.avg_us);
  json["p50_us"] = Number(stats.p50_us);
  json["p95_us"] = Number(stats.p95_us);
  json["p99_us"] = Number(stats.p99_us);
  json["stdev_us"] = Number(stats.stdev_us);
  json["cv_pct"] = Number(stats.cv_percent);
  json["times_us"] = NumberList(stats.times_us);
  if (stats.per_process_max_times_us.size() > 1) {
    Json rows = Json::array();
    for (const std::vector<double>& row : stats.per_process_max_times_us) {
      rows.push_back(NumberList(row));
    }
    json["per_process_max_times_us"] = std::move(rows);
  }
  return json;
}

// A placement and, after it, its -I object, as nccl-tests orders them in a result.
void AddPlacement(Json& json, const char* key, const std::optional<PlacementResult>& half,
                  bool cputime) {
  json[key] = PlacementJson(half, cputime);
  if (half.has_value() && half->iterations.has_value()) {
    json[std::string(key) + "_per_iter"] = PerIterationJson(*half->iterations);
  }
}

Json RowJson(const ResultRow& row, bool cputime) {
  Json json;
  json["size"] = row.size;
  json["count"] = row.count;
  json["type"] = row.type;
  json["redop"] = row.redop;
  // nccl-tests writes the root as the text of its "%6i" column, padding included.
  char root[32];
  std::snprintf(root, sizeof(root), "%6i", row.root);
  json["root"] = root;
  AddPlacement(json, "out_of_place", row.out_of_place, cputime);
  AddPlacement(json, "in_place", row.in_place, cputime);
  json["actual_iterations"] = row.iterations;
  json["experiment_name"] = "";
  json["collective"] = row.collective;
  if (!row.timestamp.empty()) json["timestamp"] = row.timestamp;
  return json;
}

Json ConfigJson(const RunResult& result) {
  const RunConfig& config = result.config;
  Json json;
  json["nthreads"] = config.nthreads;
  json["ngpus"] = config.ngpus;
  json["minimum_bytes"] = config.min_bytes;
  json["maximum_bytes"] = config.max_bytes;
  if (config.step_factor > 1) {
    json["step_factor"] = config.step_factor;
  } else {
    json["step_bytes"] = config.step_bytes;
  }
  json["warmup_iters"] = config.warmup_iters;
  json["iterations"] = config.iters;
  json["aggregated_iterations"] = config.agg_iters;
  json["validation"] = config.check;
  json["graph"] = config.graph;
  json["blocking_collectives"] = QuotedBool(config.blocking != 0);
  json["per_iter_timing"] = QuotedBool(config.per_iter_timing != 0);
  json["per_iter_skip"] = config.per_iter_skip;
  json["parallel_init"] = QuotedBool(config.parallel_init != 0);
  Json devices = Json::array();
  for (const RankInfo& rank : result.ranks) {
    Json device;
    device["rank"] = rank.rank;
    device["group"] = rank.group;
    device["pid"] = rank.pid;
    device["hostname"] = rank.hostname;
    device["device"] = rank.device;
    // The same word the text layout puts between the brackets.
    device["device_hex"] = rank.device_bus_id.empty() ? "host" : rank.device_bus_id;
    device["device_info"] = rank.device_name;
    if (!rank.transport.empty()) device["transport"] = rank.transport;  // NCCL_DEBUG=INFO
    devices.push_back(std::move(device));
  }
  json["devices"] = std::move(devices);
  return json;
}

// The trailer pair nccl-tests writes; "unchecked" when no minimum bandwidth is set. A run that
// has not ended (or ended early) has passed nothing yet: "false", so no reader of an unfinished
// file sees an empty run that passed.
void AddTrailer(Json& json, const TestSummary& summary, const RunConfig& config, bool complete) {
  json["out_of_bounds"] = {{"count", summary.out_of_bounds},
                           {"okay", QuotedBool(complete && report::OutOfBoundsOkay(summary))}};
  json["average_bus_bandwidth"] = {
      {"bandwidth", Number(summary.avg_busbw)},
      {"okay", config.min_bw > 0 ? QuotedBool(complete && report::BandwidthOkay(summary, config))
                                 : Json("unchecked")}};
}

// Writes the whole document to the stream when the run ends.
class JsonStreamReporter final : public Reporter {
 public:
  explicit JsonStreamReporter(std::ostream& out) : out_(out) {}
  void End(const RunResult& result) override {
    out_ << ToJson(result) << '\n';
    out_.flush();
  }

 private:
  std::ostream& out_;
};

std::string SystemMessage(const std::string& path, int error) {
  return "cannot write JSON results to '" + path + "': " + std::strerror(error) +
         "; check the directory exists and is writable";
}

// Writes `text` to `path` by way of `path`.tmp and rename(2), so a reader (or a crash)
// never sees a half-written document. Returns 0 or the errno of the failing call.
int ReplaceFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return error;
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return error;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return error;
  }
  return 0;
}

// Keeps `path` holding the document of every row so far.
class JsonFileReporter final : public Reporter {
 public:
  explicit JsonFileReporter(std::string path) : path_(std::move(path)) {
    // Fail before the sweep, not after an hour of it. Writing the file takes creating
    // path.tmp in the same directory and renaming it over the path, so try exactly that.
    struct stat info {};
    if (::stat(path_.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
      throw SystemError(SystemMessage(path_, EISDIR));
    }
    const std::string tmp = path_ + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw SystemError(SystemMessage(path_, errno));
    ::close(fd);
    ::unlink(tmp.c_str());
  }

  void Begin(const RunResult& result) override { Write(result, false); }
  void Row(const RunResult& result, const ResultRow& row) override {
    (void)row;
    Write(result, false);
  }
  void EndTest(const RunResult& result, const TestSummary& summary) override {
    (void)summary;
    Write(result, false);
  }
  void End(const RunResult& result) override { Write(result, true); }

 private:
  // A failed rewrite mid-sweep keeps the previous document and is retried at the next row;
  // only the final write is allowed to stop the run, so a full disk does not waste the
  // measurements made so far.
  void Write(const RunResult& result, bool final_write) {
    const int error = ReplaceFile(path_, ToJson(result) + "\n");
    if (error != 0 && final_write) throw SystemError(SystemMessage(path_, error));
  }

  std::string path_;
};

}  // namespace

std::string ToJson(const RunResult& result) {
  Json json;
  json["version"] = kNcclTestsJsonVersion;
  json["start_time"] = OptionalString(result.start_time);
  json["args"] = result.args;
  json["env"] = result.env;
  // NCCL_VERSION_CODE of the NCCL (RCCL) that ran; a host-memory run has none, and null
  // says so rather than a made-up code.
  json["nccl_version"] = result.nccl_version > 0 ? Json(result.nccl_version) : Json(nullptr);
  json["tool"] = result.tool;
  json["fabricscope_version"] = result.version;
  json["backend"] = result.backend;
  json["backend_version"] = result.backend_version;
  // Only when MPI ran: its thread level changes what every MPI call costs.
  if (!result.mpi_thread_level.empty()) json["mpi_thread_level"] = result.mpi_thread_level;
  json["nranks"] = result.nranks;
  json["config"] = ConfigJson(result);
  json["notes"] = result.notes;
  Json rows = Json::array();
  const bool cputime = result.config.report_cputime != 0;
  for (const ResultRow& row : result.rows) rows.push_back(RowJson(row, cputime));
  json["results"] = std::move(rows);
  // Over every row: one nccl-tests binary runs one collective, so its trailer is the whole
  // file's; with several collectives, `tests` carries each one's.
  const bool complete = !result.end_time.empty() && result.errors.empty();
  AddTrailer(json, SummarizeAll(result), result.config, complete);
  Json tests = Json::array();
  for (const TestSummary& summary : Summarize(result)) {
    Json test;
    test["collective"] = summary.collective;
    test["rows"] = summary.rows;
    AddTrailer(test, summary, result.config, complete);
    test["okay"] = complete && summary.okay;  // fabricscope's own field: a real boolean
    tests.push_back(std::move(test));
  }
  json["tests"] = std::move(tests);
  json["errors"] = result.errors;
  // null until the run ends, which is how a reader tells a partial file from a whole one.
  json["end_time"] = OptionalString(result.end_time);
  // fabricscope's own: whether the sweep ran to its end, and when it did not, why. Every
  // rewrite before the last says "in progress", so a file the run could not rewrite again (a
  // full disk, a SIGKILL) still says it is not a finished run.
  json["complete"] = complete;
  if (!complete) {
    json["incomplete"] =
        result.errors.empty()
            ? std::string(
                  "the run had not ended when this file was written: it is still running, "
                  "or it was killed before it could write the file again")
            : "the run ended early: " + result.errors.front();
  }
  // Hostnames, args and env come from outside; a stray byte must not lose the results.
  return json.dump(2, ' ', false, Json::error_handler_t::replace);
}

std::unique_ptr<Reporter> MakeJsonFileReporter(const std::string& path) {
  return std::make_unique<JsonFileReporter>(path);
}

namespace report {
std::unique_ptr<Reporter> MakeJsonReporter(std::ostream& out) {
  return std::make_unique<JsonStreamReporter>(out);
}
}  // namespace report

}  // namespace fabricscope
