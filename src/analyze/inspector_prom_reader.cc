// NCCL Inspector's Prometheus mode (NCCL_INSPECTOR_PROM_DUMP=1): per GPU, a textfile for
// node exporter, rewritten every dump interval (at least 30 s), holding one aggregate per
// bucket of the interval's operations. NVIDIA/nccl v2.30.7-1
// plugins/profiler/inspector/inspector_prom.cc: the file name (inspectorPromGetFilename,
// :361), the labels (inspectorPromGetLabelsColl :229, inspectorPromGetLabelsP2p :289), the
// size buckets (inspectorPromFormatMessageSizeRange :129, their lower bound
// inspectorPromMessageSizeRangeLowerBound :169), the two lines a bucket
// (inspectorPromWriteCollBucket :425, inspectorPromWriteP2pBucket :482: the busbw's geometric
// mean, the time's mean), the 30 s floor (:821); the file truncated at each flush
// (inspector.cc:585, fopen "w").
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "analyze/lines.h"
#include "analyze/readers.h"
#include "fabricscope/inspector.h"

namespace fabricscope {
namespace {

// The metric names and what each fills in.
enum class PromField { kBusbw, kExecUs };
struct PromMetric {
  std::string_view name;
  PromField field;
  bool p2p;
};
constexpr PromMetric kMetrics[] = {
    {"nccl_bus_bandwidth_gbs", PromField::kBusbw, false},
    {"nccl_collective_exec_time_microseconds", PromField::kExecUs, false},
    {"nccl_p2p_bus_bandwidth_gbs", PromField::kBusbw, true},
    {"nccl_p2p_exec_time_microseconds", PromField::kExecUs, true},
};

const PromMetric* MetricNamed(std::string_view name) {
  for (const PromMetric& m : kMetrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// `key="value",...` as the exposition format writes labels (\\, \" and \n escaped).
bool ParseLabels(std::string_view text, std::map<std::string, std::string>* out) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t eq = text.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') return false;
    std::string key(text.substr(i, eq - i));
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value.push_back(text[j] == 'n' ? '\n' : text[j]);
      } else {
        value.push_back(text[j]);
      }
    }
    if (j >= text.size()) return false;  // no closing quote
    (*out)[std::move(key)] = std::move(value);
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  return true;
}

// "4-5GB" -> 4 GiB: the bucket's lower bound, in Inspector's units of 1024
// (inspectorPromMessageSizeRangeLowerBound); "0B" -> 0. Negative when unreadable.
double BucketLowerBound(std::string_view range) {
  static constexpr std::string_view kUnits[] = {"TB", "GB", "MB", "KB", "B"};
  static constexpr double kScale[] = {1099511627776.0, 1073741824.0, 1048576.0, 1024.0, 1.0};
  for (size_t u = 0; u < std::size(kUnits); ++u) {
    if (!range.ends_with(kUnits[u])) continue;
    // Inspector prints the bound with %.0f: digits only, and the bytes must fit a size.
    const std::string_view number = range.substr(0, range.find_first_of("-B"));
    if (number.empty() || number.size() > 20 ||
        number.find_first_not_of("0123456789") != std::string_view::npos) {
      return -1;
    }
    const double bytes = std::stod(std::string(number)) * kScale[u];
    return bytes < 18446744073709551616.0 ? bytes : -1;  // 2^64
  }
  return -1;
}

// A whole number, 0 when it is not one or does not fit (atoi's overflow is undefined).
int IntOf(const std::string& text) {
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    return 0;
  }
}

int Int(const std::map<std::string, std::string>& labels, const std::string& key) {
  const auto it = labels.find(key);
  return it == labels.end() ? 0 : IntOf(it->second);
}

std::string Label(const std::map<std::string, std::string>& labels, const std::string& key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

// The record of one bucket, from its labels; empty error when fine.
std::string BucketRecord(const std::map<std::string, std::string>& labels, bool p2p,
                         InspectorRecord* r) {
  r->p2p = p2p;
  r->collective = Label(labels, p2p ? "p2p_operation" : "collective");
  if (r->collective.empty()) {
    return p2p ? "no p2p_operation label" : "no collective label";
  }
  const double lower = BucketLowerBound(Label(labels, "message_size"));
  if (lower < 0) return "message_size '" + Label(labels, "message_size") + "' is not a bucket";
  r->msg_bytes = static_cast<uint64_t>(lower);
  r->hostname = Label(labels, "node");
  r->comm_name = Label(labels, "comm_name");
  r->nranks = Int(labels, "nranks");
  r->nnodes = Int(labels, "n_nodes");
  // No communicator hash, no rank: the communicator is its name and size, the rank the GPU.
  r->comm = r->comm_name + "/" + std::to_string(r->nranks);
  const std::string gpu = Label(labels, "gpu");
  r->rank = gpu.starts_with("GPU") ? IntOf(gpu.substr(3)) : 0;
  const std::string algo_proto = Label(labels, "algo_proto");
  if (const size_t cut = algo_proto.find('_'); cut != std::string::npos) {
    r->algo = algo_proto.substr(0, cut);
    r->proto = algo_proto.substr(cut + 1);
  }
  r->job = Label(labels, "slurm_job_id");
  r->timing_source = "kernel_gpu";  // only GPU-timed operations by default
  r->bytes = r->msg_bytes;
  analyze::SizeAsNcclTests(r);
  return "";
}

struct PromLine {
  std::string_view name;
  std::string_view labels;
  std::string_view value;
};

bool SplitLine(std::string_view line, PromLine* out) {
  const size_t open = line.find('{');
  const size_t close = line.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return false;
  }
  out->name = line.substr(0, open);
  out->labels = line.substr(open + 1, close - open - 1);
  out->value = line.substr(close + 1);
  const size_t v = out->value.find_first_not_of(" \t");
  if (v == std::string_view::npos) return false;
  out->value = out->value.substr(v);
  out->value = out->value.substr(0, out->value.find_first_of(" \t"));  // a timestamp may follow
  return true;
}

// One sample line into its bucket's record (a new record for a bucket's first line); the
// reason when the line cannot be read, empty otherwise.
std::string ReadSample(std::string_view line, size_t number, const std::string& where,
                       int64_t dump_us, std::map<std::pair<bool, std::string>, size_t>* buckets,
                       InspectorRead* out) {
  PromLine p;
  if (!SplitLine(line, &p)) return "not a Prometheus sample";
  const PromMetric* metric = MetricNamed(p.name);
  if (metric == nullptr) {
    const std::string key = "metric " + std::string(p.name);
    const bool seen = std::any_of(out->unknown_keys.begin(), out->unknown_keys.end(),
                                  [&](const auto& k) { return k.first == key; });
    if (!seen) out->unknown_keys.emplace_back(key, where);
    return "";
  }
  std::map<std::string, std::string> labels;
  if (!ParseLabels(p.labels, &labels)) return "labels that do not parse";
  double value = 0;
  try {
    value = std::stod(std::string(p.value));
  } catch (const std::exception&) {
    return "value '" + std::string(p.value) + "' is not a number";
  }
  const auto [it, fresh] =
      buckets->emplace(std::make_pair(metric->p2p, std::string(p.labels)), out->records.size());
  if (fresh) {
    InspectorRecord r;
    if (std::string why = BucketRecord(labels, metric->p2p, &r); !why.empty()) {
      buckets->erase(it);
      return why;
    }
    r.source = where;
    r.dump_us = dump_us;
    // Snapshots follow one another: the order is the dump's, then the line's.
    r.seq =
        static_cast<uint64_t>(std::max<int64_t>(dump_us, 0)) * 1000 + std::min<size_t>(number, 999);
    out->records.push_back(std::move(r));
  }
  InspectorRecord& r = out->records[it->second];
  (metric->field == PromField::kBusbw ? r.busbw_gbs : r.exec_us) = value;
  return "";
}

}  // namespace

bool LooksLikeInspectorProm(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return false;
  for (const PromMetric& m : kMetrics) {
    if (text.substr(start).starts_with(std::string(m.name) + "{")) return true;
  }
  return false;
}

InspectorRead ReadInspectorProm(std::string_view text, const std::string& source, int64_t dump_us) {
  InspectorRead out;
  // One record a bucket: a bucket's two lines share their labels.
  std::map<std::pair<bool, std::string>, size_t> buckets;
  ForEachLine(text, [&](std::string_view line, size_t number, bool) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') return;
    const std::string where = source + ":" + std::to_string(number);
    const std::string why = ReadSample(line.substr(first), number, where, dump_us, &buckets, &out);
    if (why.empty()) return;
    out.diagnostics.push_back(
        {Diagnostic::Severity::kError, source, number,
         why + "; expected NCCL Inspector's Prometheus lines (NCCL_INSPECTOR_PROM_DUMP=1), "
               "as nccl_bus_bandwidth_gbs{collective=\"AllReduce\",...} 485.1"});
  });
  return out;
}

}  // namespace fabricscope
