// watch's output: a block of text a window (people, logs) and JSON (programs); the
// findings in the one form every diagnosis writes (fabricscope/finding.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "fabricscope/finding.h"
#include "fabricscope/watch.h"

namespace fabricscope {
namespace {

constexpr size_t kSourceWidth = 13;  // the widest of watch's sources: "enqueue-timed"

std::string Optional(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

void WindowText(const WatchWindow& w, std::string* out) {
  *out += fmt::format("# window {:.3f} .. {:.3f} s (unix time), {} records\n",
                      static_cast<double>(w.start_us) / 1e6, static_cast<double>(w.end_us) / 1e6,
                      w.records);
  *out +=
      fmt::format("{:<15} {:>10} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11} {:>7}\n", "collective",
                  "size", "n", "p50 us", "p99 us", "busbw GB/s", "healthy", "baseline", "drop %");
  for (const WatchBucket& b : w.buckets) {
    *out += fmt::format("{:<15} {:>10} {:>7} {:>11.1f} {:>11.1f} {:>11.3g} {:>11} {:>11} {:>7}\n",
                        b.collective, b.size_bucket, b.samples, b.p50_us, b.p99_us, b.busbw_gbs,
                        Optional(b.expected_low_gbs, "{:.3g}"), Optional(b.baseline_gbs, "{:.3g}"),
                        Optional(b.drop_percent, "{:.0f}"));
  }
  if (!w.ranks.empty()) {
    *out += w.ranks[0].mean_time_us ? "# ranks by mean time in a collective, shortest first:"
                                    : "# ranks by lateness (start after the first rank, median):";
    for (size_t i = 0; i < w.ranks.size() && i < 4; ++i) {
      const WatchRank& r = w.ranks[i];
      const double us = r.mean_time_us ? *r.mean_time_us : r.median_late_us;
      *out += fmt::format(" rank {} ({}) {:.1f} us{}", r.rank, r.node, us,
                          r.straggler ? " STRAGGLER" : "");
    }
    *out += "\n";
  }
  FindingTextStyle style;
  style.source_width = kSourceWidth;  // every window's columns line up, whatever it found
  *out += FindingsText(w.findings, style);
}

}  // namespace

std::string WatchText(const std::vector<WatchWindow>& windows) {
  std::string out;
  for (const WatchWindow& w : windows) WindowText(w, &out);
  return out;
}

std::string WatchJson(const std::vector<WatchWindow>& windows) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::array();
  for (const WatchWindow& w : windows) {
    nlohmann::ordered_json j;
    j["start_us"] = w.start_us;
    j["end_us"] = w.end_us;
    j["records"] = w.records;
    j["buckets"] = nlohmann::ordered_json::array();
    for (const WatchBucket& b : w.buckets) {
      nlohmann::ordered_json jb = {{"collective", b.collective}, {"size_bucket", b.size_bucket},
                                   {"max_bytes", b.max_bytes},   {"samples", b.samples},
                                   {"p50_us", b.p50_us},         {"p99_us", b.p99_us},
                                   {"busbw_gbs", b.busbw_gbs}};
      if (b.expected_low_gbs) jb["expected_low_gbs"] = *b.expected_low_gbs;
      if (b.baseline_gbs) jb["baseline_gbs"] = *b.baseline_gbs;
      if (b.drop_percent) jb["drop_percent"] = *b.drop_percent;
      j["buckets"].push_back(jb);
    }
    j["ranks"] = nlohmann::ordered_json::array();
    for (const WatchRank& r : w.ranks) {
      j["ranks"].push_back({{"rank", r.rank},
                            {"node", r.node},
                            {"groups", r.groups},
                            {"last", r.last},
                            {"median_late_us", r.median_late_us},
                            {"straggler", r.straggler}});
      if (r.mean_time_us) j["ranks"].back()["mean_time_us"] = *r.mean_time_us;
    }
    j["enqueue_timed"] = w.enqueue_timed;
    j["findings"] = FindingsJson(w.findings);
    j["findings_version"] = kFindingsVersion;
    doc.push_back(j);
  }
  return doc.dump(2) + "\n";
}

}  // namespace fabricscope
