#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <fstream>
#include <mutex>
#include <thread>

#include "fabricscope/engine.h"
#include "fabricscope/error.h"
#include "fabricscope/launch.h"
#include "fabricscope/version.h"

extern char** environ;

namespace fabricscope {
namespace {

std::string IsoNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// "host memory (<cpu model>)": what a host-backend rank computes on.
std::string HostDeviceName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) {
        return "host memory (" + line.substr(colon + 2) + ")";
      }
    }
  }
  return "host memory";
}

// The variables that change how a collective library behaves, recorded with the results.
std::vector<std::string> RelevantEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    for (std::string_view prefix : {"NCCL_", "FABRICSCOPE_", "GLOO_", "OMPI_", "UCX_", "CUDA_"}) {
      if (entry.starts_with(prefix)) {
        out.emplace_back(entry);
        break;
      }
    }
  }
  return out;
}

std::chrono::milliseconds Timeout(const RunOptions& options) {
  // Without -T the host backends still give up eventually, so a dead peer never hangs a run
  // forever; 5 minutes is far above any single host-memory collective.
  const double seconds = options.timeout_s > 0 ? options.timeout_s : 300.0;
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

}  // namespace

RunResult MakeHeader(const RunOptions& options, const Backend& backend) {
  RunResult result;
  result.version = kVersion;
  result.backend = std::string(backend.name());
  result.backend_version = backend.version();
  result.start_time = IsoNow();
  result.env = RelevantEnvironment();
  result.args = options.command_line;
  RunConfig& c = result.config;
  c.nthreads = options.nthreads;
  c.ngpus = 1;
  c.min_bytes = options.min_bytes;
  c.max_bytes = options.max_bytes;
  c.step_bytes = options.step_bytes;
  c.step_factor = options.step_factor;
  c.warmup_iters = options.warmup_iters;
  c.iters = options.iters;
  c.agg_iters = options.agg_iters;
  c.check = options.check;
  c.blocking = options.blocking;
  c.average = static_cast<int>(options.average);
  c.per_iter_timing = options.per_iter_timing ? 1 : 0;
  c.per_iter_skip = options.per_iter_skip;
  c.report_timestamps = options.report_timestamps ? 1 : 0;
  if (const char* min_bw = std::getenv("NCCL_TESTS_MIN_BW")) c.min_bw = std::atof(min_bw);
  return result;
}

RunResult RunThreads(const RunOptions& options, Backend& backend, Reporter* sink) {
  CheckSupported(backend, options);
  const int n = options.nthreads;
  if (n < 1) {
    throw UsageError("-t/--nthreads must be at least 1 (got " + std::to_string(n) + ")");
  }
  const SweepPlan plan = PlanSweep(options, n);

  RunResult result = MakeHeader(options, backend);
  result.config.max_bytes = plan.max_bytes;
  result.notes = plan.notes;
  result.nranks = n;
  const std::string host = Hostname();
  const std::string device = HostDeviceName();
  for (int r = 0; r < n; ++r) {
    result.ranks.push_back({r, 0, static_cast<int>(getpid()), host, r, "", device});
  }
  if (sink != nullptr) sink->Begin(result);

  InMemoryStore store;
  std::mutex error_mutex;
  std::exception_ptr first_error;
  std::string first_message;
  auto rank_main = [&](int rank) {
    try {
      ConnectOptions connect;
      connect.rank = rank;
      connect.size = n;
      connect.store = &store;
      connect.timeout = Timeout(options);
      auto comm = backend.Connect(connect);
      RunResult scratch;  // ranks other than 0 do not keep rows
      RunBenchmark(options, plan, *comm, rank == 0 ? result : scratch, rank == 0 ? sink : nullptr);
    } catch (const std::exception& e) {
      const std::lock_guard lock(error_mutex);
      if (!first_error) {
        first_error = std::current_exception();
        first_message = "rank " + std::to_string(rank) + ": " + e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int r = 1; r < n; ++r) threads.emplace_back(rank_main, r);
  rank_main(0);
  for (auto& t : threads) t.join();

  result.end_time = IsoNow();
  if (first_error) result.errors.push_back(first_message);
  if (sink != nullptr) sink->End(result);
  if (first_error) std::rethrow_exception(first_error);
  return result;
}

}  // namespace fabricscope
