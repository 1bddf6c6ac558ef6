#include "profiler/prometheus_sink.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fabricscope/collective_math.h"

namespace fabricscope::profiler {
namespace {

// 10 us .. ~42 s, x4 a step; busbw 0.1 GB/s .. ~3.3 TB/s, x2 a step.
prometheus::Histogram::BucketBoundaries Exponential(double first, double factor, int n) {
  prometheus::Histogram::BucketBoundaries b;
  double v = first;
  for (int i = 0; i < n; ++i, v *= factor) b.push_back(v);
  return b;
}

const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const auto b = Exponential(1e-5, 4, 12);
  return b;
}
const prometheus::Histogram::BucketBoundaries& BusbwBuckets() {
  static const auto b = Exponential(1e8, 2, 16);
  return b;
}

std::string HostPart(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  return colon == std::string::npos ? std::string("0.0.0.0") : listen.substr(0, colon);
}

}  // namespace

PrometheusSink::PrometheusSink(const Settings& settings)
    : job_(settings.job),
      node_(settings.hostname),
      registry_(std::make_shared<prometheus::Registry>()) {
  duration_ = &prometheus::BuildHistogram()
                   .Name("fabricscope_nccl_collective_duration_seconds")
                   .Help("Time of each NCCL collective from its call to its completion")
                   .Register(*registry_);
  busbw_ = &prometheus::BuildHistogram()
                .Name("fabricscope_nccl_collective_busbw_bytes_per_second")
                .Help("Bus bandwidth of each NCCL collective (nccl-tests' busbw, bytes/s)")
                .Register(*registry_);
  bytes_ = &prometheus::BuildCounter()
                .Name("fabricscope_nccl_collective_bytes_total")
                .Help("Message bytes of the NCCL collectives recorded")
                .Register(*registry_);
  dropped_ = &prometheus::BuildCounter()
                  .Name("fabricscope_nccl_records_dropped_total")
                  .Help("Collectives not recorded: ring overwritten or too many in flight")
                  .Register(*registry_);
  exposer_ = std::make_unique<prometheus::Exposer>(settings.prom_listen);
  exposer_->RegisterCollectable(registry_);
  const auto ports = exposer_->GetListeningPorts();
  address_ = HostPart(settings.prom_listen) + ":" + std::to_string(ports.empty() ? 0 : ports[0]);

  std::error_code ec;
  std::filesystem::create_directories(settings.prom_sd_dir, ec);
  const std::string path =
      settings.prom_sd_dir + "/" + node_ + "-" + std::to_string(::getpid()) + ".prom.json";
  const nlohmann::json targets = nlohmann::json::array(
      {{{"targets", {address_}}, {"labels", {{"fabricscope_job", job_}, {"node", node_}}}}});
  // Written whole then renamed: Prometheus re-reads file_sd files as they change.
  const std::string temporary = path + ".tmp";
  if (std::ofstream(temporary) << targets.dump() << '\n') {
    std::filesystem::rename(temporary, path, ec);
    if (!ec) targets_file_ = path;
  }
}

PrometheusSink::~PrometheusSink() {
  if (!targets_file_.empty()) {
    std::error_code ec;
    std::filesystem::remove(targets_file_, ec);
  }
}

prometheus::Labels PrometheusSink::LabelsOf(const Completed& c) const {
  return {{"job_id", job_},
          {"node", node_},
          {"rank", std::to_string(c.comm->rank)},
          {"comm", c.comm->Label()},
          {"nranks", std::to_string(c.comm->nranks)},
          {"collective", std::string(c.record.func.view())},
          {"size_bucket", SizeBucket(c.bytes)}};
}

void PrometheusSink::Write(const std::vector<Completed>& batch) {
  for (const Completed& c : batch) {
    const prometheus::Labels labels = LabelsOf(c);
    bytes_->Add(labels).Increment(static_cast<double>(c.bytes));
    // An enqueue time (NCCL 2.30's Coll stop, CE collectives) says nothing of the collective.
    if (c.record.timing == TimingSource::kCollectiveCpu) continue;
    duration_->Add(labels, DurationBuckets()).Observe(c.exec_us / 1e6);
    busbw_->Add(labels, BusbwBuckets()).Observe(c.busbw_gbs * 1e9);
  }
}

void PrometheusSink::Dropped(const CommInfo& comm, uint64_t records) {
  dropped_
      ->Add({{"job_id", job_},
             {"node", node_},
             {"rank", std::to_string(comm.rank)},
             {"comm", comm.Label()}})
      .Increment(static_cast<double>(records));
}

}  // namespace fabricscope::profiler
