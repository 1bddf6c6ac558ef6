// Windows of collectives judged: time percentiles and busbw per collective and size bucket,
// against the platform and against the job's own first windows.
#include "watch/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fabricscope/collective_math.h"
#include "fabricscope/statistics.h"
#include "fabricscope/watch.h"
#include "watch/links.h"
#include "watch/stragglers.h"

namespace fabricscope {
namespace {

// A record's own time: its event trace (verbose Inspector, the profiler's records).
std::optional<int64_t> TracedTime(const InspectorRecord& r) {
  if (r.start_us) return r.start_us;
  return r.stop_us;
}

using TimedRecord = std::pair<int64_t, const InspectorRecord*>;

// Every record with its time. Inspector's default output has no event trace, only the time
// each record was dumped (metadata.dump_timestamp_us, inspector_json.cc:64 at NVIDIA/nccl
// v2.30.7-1), stamped as the dump thread drains a communicator's ring of completed
// collectives (inspectorCommInfoDumpColl, inspector_json.cc:290-325): a record completed no
// later than its dump and no later than the dump of any record after it in that rank's
// sequence (coll_sn, p2p_sn within a communicator). So a record without a trace takes the
// earliest dump time of itself and its successors: times that follow coll_sn order.
std::vector<TimedRecord> Timed(const std::vector<InspectorRecord>& records) {
  std::vector<TimedRecord> out;
  out.reserve(records.size());
  using Stream = std::tuple<std::string, std::string, int, int, bool>;
  std::map<Stream, std::vector<size_t>> streams;  // untraced records of one rank's sequence
  for (const InspectorRecord& r : records) {
    const auto traced = TracedTime(r);
    out.emplace_back(traced.value_or(r.dump_us.value_or(0)), &r);
    if (!traced && r.dump_us) {
      streams[{r.hostname, r.comm, r.pid, r.rank, r.p2p}].push_back(out.size() - 1);
    }
  }
  for (auto& [stream, indexes] : streams) {
    std::stable_sort(indexes.begin(), indexes.end(), [&out](size_t a, size_t b) {
      return out[a].second->seq < out[b].second->seq;
    });
    int64_t earliest = std::numeric_limits<int64_t>::max();
    for (auto it = indexes.rbegin(); it != indexes.rend(); ++it) {
      earliest = std::min(earliest, out[*it].first);
      out[*it].first = earliest;
    }
  }
  // In time, and records of one time (one dump) in their sequence.
  std::stable_sort(out.begin(), out.end(), [](const TimedRecord& a, const TimedRecord& b) {
    return std::tie(a.first, a.second->seq) < std::tie(b.first, b.second->seq);
  });
  return out;
}

int NodesOf(const std::vector<const InspectorRecord*>& records, const WatchOptions& options) {
  if (options.nodes) return *options.nodes;
  int nodes = 1;
  for (const InspectorRecord* r : records) nodes = std::max(nodes, r->nnodes);
  return nodes;
}

std::string WhereOf(const WatchBucket& b) { return b.collective + " " + b.size_bucket; }

void Expect(WatchBucket* b, int nodes, const WatchOptions& options,
            std::vector<Finding>* findings) {
  if (options.platform == nullptr || b->max_bytes < options.min_bytes) return;
  const auto band = options.platform->ExpectationFor(b->collective, nodes, b->max_bytes);
  if (!band) return;
  b->expected_low_gbs = band->low_busbw;
  if (b->samples >= options.min_samples && b->busbw_gbs < band->low_busbw) {
    findings->push_back(watch::Alert(
        {.source = "healthy-band",
         .what = fmt::format("busbw {:.1f} GB/s, below {}'s healthy {:.1f} GB/s on {} node(s) "
                             "(typical {:.1f})",
                             b->busbw_gbs, options.platform->name, band->low_busbw, nodes,
                             band->typical_busbw),
         .where = WhereOf(*b),
         .fix = "run `fabricscope check` and `fabricscope doctor` on the job's nodes",
         .figures = {{"busbw_gbs", b->busbw_gbs},
                     {"healthy_low_gbs", band->low_busbw},
                     {"typical_gbs", band->typical_busbw},
                     {"nodes", static_cast<double>(nodes)}}}));
  }
}

void CompareToBaseline(WatchBucket* b, const WatchOptions& options, WatchBaseline* baseline,
                       std::vector<Finding>* findings) {
  if (b->samples < options.min_samples || b->max_bytes < options.min_bytes) return;
  auto& history = baseline->busbw[b->collective + "|" + b->size_bucket];
  if (history.size() < options.baseline_windows) {
    history.push_back(b->busbw_gbs);
    return;
  }
  b->baseline_gbs = Median(history);
  if (*b->baseline_gbs <= 0) return;
  b->drop_percent = (1 - b->busbw_gbs / *b->baseline_gbs) * 100;
  if (*b->drop_percent >= options.drop_percent) {
    findings->push_back(watch::Alert(
        {.source = "drop",
         .what = fmt::format(
             "busbw {:.3g} GB/s, {:.0f}% below this job's baseline of {:.3g} GB/s (threshold "
             "{:.0f}%)",
             b->busbw_gbs, *b->drop_percent, *b->baseline_gbs, options.drop_percent),
         .where = WhereOf(*b),
         .fix = "look for what changed since the baseline: a straggler or slow link in this "
                "window, other traffic on the fabric, a degraded link (`fabricscope fabric`)",
         .figures = {{"busbw_gbs", b->busbw_gbs},
                     {"baseline_gbs", *b->baseline_gbs},
                     {"drop_percent", *b->drop_percent},
                     {"threshold_percent", options.drop_percent}}}));
  }
}

WatchBucket Summarize(const std::string& collective, const std::string& bucket,
                      const std::vector<const InspectorRecord*>& records) {
  WatchBucket b;
  b.collective = collective;
  b.size_bucket = bucket;
  b.samples = records.size();
  std::vector<double> times;
  std::vector<double> busbw;
  for (const InspectorRecord* r : records) {
    times.push_back(r->exec_us);
    busbw.push_back(r->busbw_gbs);
    b.max_bytes = std::max(b.max_bytes, r->bytes);
  }
  b.p50_us = Percentile(times, 0.5);
  b.p99_us = Percentile(times, 0.99);
  b.busbw_gbs = Median(busbw);
  return b;
}

WatchWindow JudgeWindow(int64_t start, int64_t end, const std::vector<const InspectorRecord*>& rs,
                        const WatchOptions& options, WatchBaseline* baseline) {
  WatchWindow w;
  w.start_us = start;
  w.end_us = end;
  w.records = rs.size();
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const InspectorRecord*>> groups;
  for (const InspectorRecord* r : rs) {
    if (r->timing_source == "collective_cpu") {  // an enqueue time: says nothing of the GPU
      ++w.enqueue_timed;
      continue;
    }
    std::string name = CollectiveOfInspector(r->collective);
    const auto key =
        std::make_pair(name.empty() ? r->collective : name, profiler::SizeBucket(r->bytes));
    auto& group = groups[key];
    if (group.empty()) order.push_back(key);
    group.push_back(r);
  }
  const int nodes = NodesOf(rs, options);
  for (const auto& key : order) {
    WatchBucket b = Summarize(key.first, key.second, groups[key]);
    watch::JudgeBucket(&b, nodes, options, baseline, &w.findings);
    w.buckets.push_back(std::move(b));
  }
  w.ranks = watch::RankLateness(rs, options, &w.findings);
  if (w.enqueue_timed > 0) {
    w.findings.push_back(
        {.severity = Severity::kInfo,
         .source = "enqueue-timed",
         .what = fmt::format("{} records timed at enqueue (coll_timing_source collective_cpu) "
                             "not judged: NCCL 2.30 stops a Coll event before its kernel runs",
                             w.enqueue_timed),
         .figures = {{"records", static_cast<double>(w.enqueue_timed)}}});
  }
  return w;
}

}  // namespace

namespace watch {

Finding Alert(Finding f) {
  f.severity = Severity::kCritical;
  return f;
}

Finding Inconclusive(Finding f) {
  f.severity = Severity::kWarn;
  f.decided = false;
  return f;
}

void JudgeBucket(WatchBucket* b, int nodes, const WatchOptions& options, WatchBaseline* baseline,
                 std::vector<Finding>* findings) {
  Expect(b, nodes, options, findings);
  CompareToBaseline(b, options, baseline, findings);
  if (options.p99_alert_us && b->samples >= options.min_samples &&
      b->p99_us > *options.p99_alert_us) {
    findings->push_back(
        Alert({.source = "p99",
               .what = fmt::format("p99 {:.1f} us over the limit of {:.1f} us", b->p99_us,
                                   *options.p99_alert_us),
               .where = WhereOf(*b),
               .fix = "look for a straggler or a slow link in this window, or run `fabricscope "
                      "locate` on the job's nodes",
               .figures = {{"p99_us", b->p99_us}, {"limit_us", *options.p99_alert_us}}}));
  }
}

}  // namespace watch

std::vector<WatchWindow> JudgeWindows(const std::vector<InspectorRecord>& records,
                                      const WatchOptions& options, WatchBaseline* baseline) {
  const std::vector<TimedRecord> sorted = Timed(records);
  std::vector<WatchWindow> windows;
  if (sorted.empty()) return windows;
  const auto width = static_cast<int64_t>(options.window_s * 1e6);
  const int64_t t0 = sorted.front().first;
  size_t i = 0;
  while (i < sorted.size()) {
    const int64_t start = width > 0 ? t0 + (sorted[i].first - t0) / width * width : t0;
    const int64_t end = width > 0 ? start + width : sorted.back().first + 1;
    std::vector<const InspectorRecord*> in;
    while (i < sorted.size() && sorted[i].first < end) in.push_back(sorted[i++].second);
    windows.push_back(JudgeWindow(start, end, in, options, baseline));
  }
  return windows;
}

std::vector<WatchWindow> JudgeWindows(const InspectorRead& read, const WatchOptions& options,
                                      WatchBaseline* baseline) {
  std::vector<WatchWindow> windows = JudgeWindows(read.records, options, baseline);
  if (read.links.empty()) return windows;
  if (windows.empty()) {  // links but no records yet (a live read): a window of the links
    WatchWindow w;
    w.start_us = read.links.front().start_us;
    w.end_us = w.start_us;
    for (const InspectorLink& l : read.links) {
      w.start_us = std::min(w.start_us, l.start_us);
      w.end_us = std::max(w.end_us, l.start_us);
    }
    windows.push_back(std::move(w));
  }
  watch::JudgeLinks(read.links, options, &windows.back().findings);
  return windows;
}

}  // namespace fabricscope
