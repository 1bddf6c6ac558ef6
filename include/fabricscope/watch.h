// `fabricscope watch`: a running job judged from its collectives (NCCL Inspector JSONL or
// libnccl-profiler-fabricscope.so's), window by window: time p50/p99 per collective and size
// bucket, busbw against the platform's expectation, the straggler ranks, and drops against
// the job's own baseline. Every crossed threshold is an alert: a CRITICAL finding
// (fabricscope/finding.h); a judgement within the noise an undecided one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fabricscope/finding.h"
#include "fabricscope/inspector.h"
#include "fabricscope/platform.h"

namespace fabricscope {

// The thresholds and windows; the defaults are the documented ones (docs/watch.md).
struct WatchOptions {
  double window_s = 10;                // records are grouped by their start time
  size_t baseline_windows = 1;         // the first windows a bucket is seen in are its baseline
  double drop_percent = 20;            // alert when busbw falls this far below the baseline
  double straggler_us = 1000;          // a rank this late (median) in most collectives straggles
  double straggler_share = 0.5;        // ... being the last to arrive in at least this share
  size_t min_samples = 3;              // fewer records in a bucket (or groups) judge nothing
  uint64_t min_bytes = 0;              // smaller messages are left out of busbw judgements
  std::optional<double> p99_alert_us;  // alert when a bucket's p99 time exceeds this
  const Platform* platform = nullptr;  // expectation for busbw; none: no such judgement
  std::optional<int> nodes;            // overrides the node count of the records
  double slow_link_ratio = 1.5;        // a link this much slower than its neighbours is slow
  size_t min_links = 3;                // fewer send links in a communicator judge nothing
};

// One collective and size bucket within one window.
struct WatchBucket {
  std::string collective;   // fabricscope's name: "all_reduce"
  std::string size_bucket;  // "<=1MiB"
  uint64_t max_bytes = 0;   // the largest message seen in it
  size_t samples = 0;
  double p50_us = 0;
  double p99_us = 0;
  double busbw_gbs = 0;                    // median over the records
  std::optional<double> expected_low_gbs;  // the platform's lowest healthy busbw
  std::optional<double> baseline_gbs;
  std::optional<double> drop_percent;  // below the baseline (negative: above it)
};

// How late one rank arrives at the collectives of a window.
struct WatchRank {
  int rank = 0;
  std::string node;
  size_t groups = 0;          // collectives (communicator, sequence number) it took part in
  size_t last = 0;            // of which it was the last to start
  double median_late_us = 0;  // its start minus the earliest start, median
  // From Prometheus, which has no start times: the rank's mean time inside collectives (a
  // straggler's is the shortest: the others wait for it there).
  std::optional<double> mean_time_us;
  bool straggler = false;
};

struct WatchWindow {
  int64_t start_us = 0;  // wall clock, microseconds since the epoch
  int64_t end_us = 0;
  size_t records = 0;
  std::vector<WatchBucket> buckets;
  std::vector<WatchRank> ranks;  // by lateness, latest first; empty without start times
  // Records timed at enqueue (coll_timing_source "collective_cpu"): NCCL 2.30 stops a Coll
  // event before its kernel runs, so their times say nothing of the collective; not judged.
  size_t enqueue_timed = 0;
  // What the window's judgements found, in the order judged (buckets, ranks, links): an
  // alert is CRITICAL; a straggler or slow link within the noise is undecided (decided =
  // false, WARN) with the noise in `what` and what would decide in `fix`; what was left
  // unjudged is INFO. Sources: "healthy-band", "drop", "p99", "straggler", "slow-link",
  // "enqueue-timed" (docs/watch.md).
  std::vector<Finding> findings;
};

// What watch has learnt so far; carried from window to window (and across live reads).
struct WatchBaseline {
  std::map<std::string, std::vector<double>> busbw;  // per "collective|bucket": per window
};

// The judgement of a batch of records, one window per window_s of start times. Records
// without start times go into one window by their stop time, or arrival order.
std::vector<WatchWindow> JudgeWindows(const std::vector<InspectorRecord>& records,
                                      const WatchOptions& options, WatchBaseline* baseline);
// The same, and the links of the read (the profiler's ProxyOp times) judged into the last
// window: the slow peer pair, named, when one send link is options.slow_link_ratio times
// slower than the others of its communicator and beyond their spread.
std::vector<WatchWindow> JudgeWindows(const InspectorRead& read, const WatchOptions& options,
                                      WatchBaseline* baseline);

// The last `options.window_s` seconds as Prometheus' HTTP API at `url` has them from the
// plugin's histograms (`job`: only that job_id; empty: every job). Ranks come from their mean
// time inside collectives: a rank at most half the median of the others', and at least
// options.straggler_us shorter, straggles. Throws SystemError when Prometheus cannot be
// reached or refuses a query, UsageError when it has no collective of the job in the window.
WatchWindow QueryPrometheus(const std::string& url, const std::string& job,
                            const WatchOptions& options, WatchBaseline* baseline);

// Text, one block a window: its tables, then its findings in the one text form
// (FindingsText); and JSON, each window with "findings" and "findings_version".
std::string WatchText(const std::vector<WatchWindow>& windows);
std::string WatchJson(const std::vector<WatchWindow>& windows);

// Reads JSONL files and directories (every *.jsonl under them), and with `follow` what is
// appended to them (and new files in the directories) on each Poll.
class WatchSource {
 public:
  // Throws UsageError naming a path that does not exist.
  explicit WatchSource(std::vector<std::string> paths);
  // New complete lines since the last poll, parsed; partial last lines wait.
  InspectorRead Poll();

 private:
  struct File {
    std::string path;
    uint64_t offset = 0;
    size_t lines = 0;
    // NCCL Inspector's Prometheus textfile (*.prom): rewritten whole every dump, so read
    // whole each time it changes, its modification time the records' time.
    bool snapshot = false;
    int64_t read_mtime_ns = -1;
  };
  void Discover();
  void PollSnapshot(File& f, InspectorRead* all);
  void Merge(InspectorRead read, const std::string& path, InspectorRead* all);
  std::vector<std::string> paths_;
  std::vector<File> files_;
  std::set<std::string> reported_keys_;  // unknown keys already warned about
};

}  // namespace fabricscope
