// watch over Prometheus' HTTP API (/api/v1/query): the plugin's histograms of the last window
// turned into one judged window.
#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/statistics.h"
#include "fabricscope/strings.h"
#include "fabricscope/watch.h"
#include "watch/judge.h"

namespace fabricscope {
namespace {

constexpr const char* kDuration = "fabricscope_nccl_collective_duration_seconds";
constexpr const char* kBusbw = "fabricscope_nccl_collective_busbw_bytes_per_second";

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One instant query: (labels, value) of every series of the result.
std::vector<std::pair<nlohmann::json, double>> Query(const std::string& url,
                                                     const std::string& expr) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw SystemError("watch: cannot initialize libcurl");
  char* escaped = curl_easy_escape(curl.get(), expr.c_str(), static_cast<int>(expr.size()));
  const std::string full = url + "/api/v1/query?query=" + escaped;
  curl_free(escaped);
  std::string body;
  curl_easy_setopt(curl.get(), CURLOPT_URL, full.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 30L);
  const CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK) {
    throw SystemError("watch: cannot query Prometheus at " + url + ": " + curl_easy_strerror(rc) +
                      "; check --prometheus (the server's base URL, e.g. http://host:9090)");
  }
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded() || doc.value("status", "") != "success") {
    throw SystemError("watch: Prometheus at " + url + " refused `" + expr + "`: " +
                      (doc.is_discarded() ? body.substr(0, 200) : doc.value("error", body)));
  }
  std::vector<std::pair<nlohmann::json, double>> out;
  for (const auto& series : doc["data"]["result"]) {
    // Prometheus writes a sample's value as a string ("NaN", "+Inf" included).
    const std::optional<double> v = ToNumber<double>(series["value"][1].get<std::string>());
    if (v && std::isfinite(*v)) out.emplace_back(series["metric"], *v);
  }
  return out;
}

std::string Selector(const std::string& job) {
  return job.empty() ? std::string() : fmt::format("{{job_id=\"{}\"}}", job);
}

// "<=1MiB" -> 1048576.
uint64_t BytesOfBucket(const std::string& bucket) {
  static const std::map<std::string, uint64_t> kUnits = {
      {"B", 1}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40}};
  size_t digits = 2;
  while (digits < bucket.size() && std::isdigit(static_cast<unsigned char>(bucket[digits]))) {
    ++digits;
  }
  const auto unit = kUnits.find(bucket.substr(digits));
  if (bucket.size() < 3 || digits == 2 || unit == kUnits.end()) return 0;
  const std::optional<uint64_t> count = ToNumber<uint64_t>(bucket.substr(2, digits - 2));
  if (!count || *count > UINT64_MAX / unit->second) return 0;
  return *count * unit->second;
}

using BucketKey = std::pair<std::string, std::string>;

BucketKey KeyOf(const nlohmann::json& metric) {
  const std::string nccl = metric.value("collective", "");
  const std::string name = CollectiveOfInspector(nccl);
  return {name.empty() ? nccl : name, metric.value("size_bucket", "")};
}

std::map<BucketKey, WatchBucket> Buckets(const std::string& url, const std::string& sel,
                                         const std::string& range) {
  std::map<BucketKey, WatchBucket> buckets;
  for (const auto& [metric, v] : Query(url, fmt::format("sum by (collective, size_bucket) "
                                                        "(increase({}_count{}[{}]))",
                                                        kDuration, sel, range))) {
    WatchBucket& b = buckets[KeyOf(metric)];
    std::tie(b.collective, b.size_bucket) = KeyOf(metric);
    b.samples = static_cast<size_t>(std::llround(v));
    b.max_bytes = BytesOfBucket(b.size_bucket);
  }
  auto fill = [&](double q, const char* metric_name, double scale, double WatchBucket::*field) {
    const std::string expr = fmt::format(
        "histogram_quantile({}, sum by (le, collective, size_bucket) (rate({}_bucket{}[{}])))", q,
        metric_name, sel, range);
    for (const auto& [metric, v] : Query(url, expr)) {
      const auto it = buckets.find(KeyOf(metric));
      if (it != buckets.end()) it->second.*field = v * scale;
    }
  };
  fill(0.5, kDuration, 1e6, &WatchBucket::p50_us);
  fill(0.99, kDuration, 1e6, &WatchBucket::p99_us);
  fill(0.5, kBusbw, 1e-9, &WatchBucket::busbw_gbs);
  return buckets;
}

std::vector<WatchRank> Ranks(const std::string& url, const std::string& sel,
                             const std::string& range, const WatchOptions& options,
                             std::vector<Finding>* findings) {
  std::vector<WatchRank> ranks;
  const std::string expr = fmt::format(
      "sum by (rank, node) (rate({0}_sum{1}[{2}])) / sum by (rank, node) (rate({0}_count{1}[{2}]))",
      kDuration, sel, range);
  for (const auto& [metric, v] : Query(url, expr)) {
    WatchRank r;
    r.rank = ParseNumber<int>(metric.value("rank", "0"), "watch: Prometheus's rank label");
    r.node = metric.value("node", "");
    r.mean_time_us = v * 1e6;
    ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end(), [](const WatchRank& a, const WatchRank& b) {
    return *a.mean_time_us < *b.mean_time_us;
  });
  std::vector<double> times;
  times.reserve(ranks.size());
  for (const WatchRank& r : ranks) times.push_back(*r.mean_time_us);
  if (ranks.size() < 2) return ranks;
  const double median = Median(times);
  for (WatchRank& r : ranks) {
    r.straggler = *r.mean_time_us <= median / 2 && median - *r.mean_time_us >= options.straggler_us;
    if (!r.straggler) continue;
    findings->push_back(watch::Alert(
        {.source = "straggler",
         .what = fmt::format(
             "spends {:.1f} us in a collective on average, the ranks' median is {:.1f} us: the "
             "others wait for it",
             *r.mean_time_us, median),
         .where = fmt::format("rank {} on node {}", r.rank, r.node.empty() ? "?" : r.node),
         .fix = "look at that rank's compute, data loading and GPU (`fabricscope doctor`, "
                "`fabricscope locate`)",
         .figures = {{"rank", static_cast<double>(r.rank)},
                     {"mean_time_us", *r.mean_time_us},
                     {"median_time_us", median}},
         .element = "node",
         .nodes = r.node.empty() ? std::vector<std::string>{} : std::vector<std::string>{r.node}}));
  }
  return ranks;
}

}  // namespace

WatchWindow QueryPrometheus(const std::string& url, const std::string& job,
                            const WatchOptions& options, WatchBaseline* baseline) {
  const std::string sel = Selector(job);
  const std::string range = fmt::format("{}s", std::max<long>(1, std::lround(options.window_s)));
  WatchWindow w;
  const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  w.end_us = now;
  w.start_us = now - static_cast<int64_t>(options.window_s * 1e6);
  for (auto& [key, b] : Buckets(url, sel, range)) {
    if (b.samples == 0) continue;
    w.records += b.samples;
    watch::JudgeBucket(&b, options.nodes.value_or(1), options, baseline, &w.findings);
    w.buckets.push_back(std::move(b));
  }
  if (w.buckets.empty()) {
    throw UsageError("watch: Prometheus at " + url + " has no collective" +
                     (job.empty() ? std::string() : " of job_id \"" + job + "\"") +
                     " in the last " + range +
                     ": check --job and that it scrapes the plugin "
                     "(FABRICSCOPE_PROFILER_PROM_LISTEN, docs/watch.md)");
  }
  w.ranks = Ranks(url, sel, range, options, &w.findings);
  return w;
}

}  // namespace fabricscope
