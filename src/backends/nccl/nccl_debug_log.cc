#include "backends/nccl/nccl_debug_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "fabricscope/joined.h"
#include "fabricscope/strings.h"

namespace fabricscope::gpu {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);

bool AsksForInfo(const std::optional<std::string>& level) {
  if (!level) return false;
  return EqualsIgnoreCase(*level, "INFO") || EqualsIgnoreCase(*level, "TRACE");
}

// NCCL_DEBUG_FILE's own substitutions: %h host name, %p process id.
std::string ExpandDebugFile(std::string pattern) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  for (size_t at = pattern.find('%'); at != std::string::npos && at + 1 < pattern.size();
       at = pattern.find('%', at)) {
    std::string with;
    if (pattern[at + 1] == 'h') {
      with = host;
    } else if (pattern[at + 1] == 'p') {
      with = std::to_string(::getpid());
    } else {
      at += 2;
      continue;
    }
    pattern.replace(at, 2, with);
    at += with.size();
  }
  return pattern;
}

}  // namespace

std::optional<ConnectionLine> ParseConnectionLine(std::string_view line) {
  // "host:pid:tid [dev] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA";
  // before 2.19 the brackets after the ranks held a bus id in hex, and the channel had no "/".
  static const std::regex kConnection(
      R"((?:\[(\d+)\] )?NCCL INFO Channel \d+(?:/\d+)? ?: (\d+)\[[0-9a-fA-Fx]+\] -> (\d+)\[[0-9a-fA-Fx]+\](?: \[\w+\])? via (.+?)\s*$)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(line.begin(), line.end(), m, kConnection)) return std::nullopt;
  ConnectionLine c;
  c.device = m[1].matched ? ToNumber<int>(m[1].str()).value_or(-1) : -1;
  const std::optional<int> rank = ToNumber<int>(m[2].str());
  const std::optional<int> peer = ToNumber<int>(m[3].str());
  if (!rank || !peer) return std::nullopt;  // a rank too long for an int: no line of NCCL's
  c.rank = *rank;
  c.peer = *peer;
  c.transport = m[4].str();
  return c;
}

std::string SummarizeTransports(const std::vector<ConnectionLine>& lines, int rank, int device) {
  std::vector<std::string> seen;
  for (const ConnectionLine& c : lines) {
    if (c.rank != rank || (device >= 0 && c.device >= 0 && c.device != device)) continue;
    if (std::find(seen.begin(), seen.end(), c.transport) == seen.end()) {
      seen.push_back(c.transport);
    }
  }
  return Joined(seen);
}

std::unique_ptr<NcclDebugLog> NcclDebugLog::Start(const Env& env) {
  if (!AsksForInfo(env.Get("NCCL_DEBUG"))) return nullptr;
  if (const auto file = env.Get("NCCL_DEBUG_FILE"); file && !file->empty()) {
    return std::make_unique<NcclDebugLog>(ExpandDebugFile(*file), false);
  }
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fabricscope-nccl-" + std::to_string(::getpid()) + ".log"))
                               .string();
  ::unlink(path.c_str());  // NCCL appends to nothing of a previous run
  ::setenv("NCCL_DEBUG_FILE", path.c_str(), 1);
  return std::make_unique<NcclDebugLog>(path, true);
}

NcclDebugLog::NcclDebugLog(std::string path, bool owned)
    : path_(std::move(path)), owned_(owned), thread_([this] { Loop(); }) {}

NcclDebugLog::~NcclDebugLog() {
  // Nothing may leave a destructor: a failure to read the log's last lines loses those lines
  // (said on stderr), not the run.
  try {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    const std::lock_guard lock(mutex_);
    DrainLocked();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabricscope: reading the end of NCCL's log %s failed: %s\n",
                 path_.c_str(), e.what());
  }
  if (fd_ >= 0) ::close(fd_);
  if (owned_) {
    ::unlink(path_.c_str());
    // A later backend in this process (tests) must not take our file for the user's.
    ::unsetenv("NCCL_DEBUG_FILE");
  }
}

std::string NcclDebugLog::Transport(int rank, int device) {
  const std::lock_guard lock(mutex_);
  DrainLocked();
  return SummarizeTransports(lines_, rank, device);
}

void NcclDebugLog::Loop() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, kPoll, [this] { return stopping_; })) DrainLocked();
}

void NcclDebugLog::DrainLocked() {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return;  // NCCL has not logged yet
  }
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n <= 0) break;
    partial_.append(buffer, static_cast<size_t>(n));
  }
  size_t start = 0;
  for (size_t end = partial_.find('\n'); end != std::string::npos;
       end = partial_.find('\n', start)) {
    const std::string_view line(partial_.data() + start, end - start);
    if (owned_) {
      // One write per line, so lines from other threads never interleave inside it.
      const std::string out = std::string(line) + "\n";
      [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, out.data(), out.size());
    }
    if (auto c = ParseConnectionLine(line)) lines_.push_back(std::move(*c));
    start = end + 1;
  }
  partial_.erase(0, start);
}

}  // namespace fabricscope::gpu
