// JSONL files and directories as they grow: each Poll reads what was appended since the
// last one, whole lines only. NCCL Inspector's Prometheus textfiles (*.prom) are snapshots:
// read whole whenever they change.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "fabricscope/error.h"
#include "fabricscope/watch.h"

namespace fabricscope {

namespace fs = std::filesystem;

namespace {

// `path` from byte `offset` to its end into `text`; false, with the error in `all`, when it
// cannot be opened.
bool ReadFrom(const std::string& path, uint64_t offset, std::string* text, InspectorRead* all) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    all->diagnostics.push_back({Diagnostic::Severity::kError, path, 0,
                                "cannot read '" + path + "': check its permissions"});
    return false;
  }
  in.seekg(static_cast<std::streamoff>(offset));
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

WatchSource::WatchSource(std::vector<std::string> paths) : paths_(std::move(paths)) {
  for (const std::string& p : paths_) {
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      throw UsageError("watch: '" + p +
                       "' does not exist: give JSONL files of the profiler or NCCL Inspector, or "
                       "the directory they are written to (FABRICSCOPE_PROFILER_DUMP_DIR, "
                       "NCCL_INSPECTOR_DUMP_DIR)");
    }
  }
  Discover();
}

void WatchSource::Discover() {
  for (const std::string& p : paths_) {
    std::vector<std::string> found;
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& entry : fs::recursive_directory_iterator(p, ec)) {
        const std::string name = entry.path().string();
        // Inspector's Prometheus files by their name: a node exporter's textfile directory
        // holds other exporters' *.prom files too (inspector_prom.cc, inspectorPromGetFilename).
        const std::string base = entry.path().filename().string();
        if (entry.is_regular_file() &&
            (name.ends_with(".jsonl") ||
             (base.starts_with("nccl_inspector_metrics_") && base.ends_with(".prom")))) {
          found.push_back(name);
        }
      }
      std::sort(found.begin(), found.end());
    } else {
      found.push_back(p);
    }
    for (const std::string& f : found) {
      const bool known = std::any_of(files_.begin(), files_.end(),
                                     [&](const File& file) { return file.path == f; });
      if (!known) files_.push_back({f, 0, 0, f.ends_with(".prom"), -1});
    }
  }
}

InspectorRead WatchSource::Poll() {
  Discover();
  InspectorRead all;
  for (File& f : files_) {
    if (f.snapshot) {
      PollSnapshot(f, &all);
      continue;
    }
    std::string text;
    if (!ReadFrom(f.path, f.offset, &text, &all)) continue;
    const size_t complete = text.rfind('\n');
    if (complete == std::string::npos) continue;  // no whole line yet
    text.resize(complete + 1);
    InspectorRead read = ReadInspectorJsonl(text, f.path, f.lines + 1);
    f.offset += text.size();
    f.lines += static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    Merge(std::move(read), f.path, &all);
  }
  return all;
}

void WatchSource::PollSnapshot(File& f, InspectorRead* all) {
  std::error_code ec;
  const auto mtime = fs::last_write_time(f.path, ec);
  if (ec) {
    all->diagnostics.push_back(
        {Diagnostic::Severity::kError, f.path, 0, "cannot read '" + f.path + "': " + ec.message()});
    return;
  }
  const auto since_epoch = std::chrono::file_clock::to_sys(mtime).time_since_epoch();
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count();
  if (ns == f.read_mtime_ns) return;  // not rewritten since the last read
  std::string text;
  if (!ReadFrom(f.path, 0, &text, all)) return;
  // Inspector truncates the file, then writes it: an empty one is read again when it changes.
  if (text.find('\n') == std::string::npos) return;
  f.read_mtime_ns = ns;
  Merge(ReadInspectorProm(text, f.path, ns / 1000), f.path, all);
}

void WatchSource::Merge(InspectorRead read, const std::string& path, InspectorRead* all) {
  all->dropped += read.dropped;
  std::vector<std::pair<std::string, std::string>> fresh;
  for (auto& key : read.unknown_keys) {
    if (reported_keys_.insert(key.first).second) fresh.push_back(std::move(key));
  }
  if (!fresh.empty()) all->diagnostics.push_back(UnknownKeysDiagnostic(fresh, path));
  std::move(read.records.begin(), read.records.end(), std::back_inserter(all->records));
  std::move(read.links.begin(), read.links.end(), std::back_inserter(all->links));
  std::move(read.diagnostics.begin(), read.diagnostics.end(), std::back_inserter(all->diagnostics));
}

}  // namespace fabricscope
