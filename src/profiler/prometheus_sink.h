// The plugin's Prometheus endpoint (prometheus-cpp's pull Exposer): per collective, size
// bucket and communicator, histograms of the time and the busbw, labelled with the job, node
// and rank. The chosen address is published as a Prometheus file_sd target file, so a
// scrape config finds ports picked by the kernel (FABRICSCOPE_PROFILER_PROM_LISTEN=...:0).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

#include "profiler/recorder.h"

namespace fabricscope::profiler {

class PrometheusSink : public Sink {
 public:
  // Binds settings.prom_listen; throws std::exception (from civetweb) when it cannot.
  explicit PrometheusSink(const Settings& settings);
  ~PrometheusSink() override;

  // "127.0.0.1:40123": what was bound.
  const std::string& address() const { return address_; }
  // The file_sd file written (empty if it could not be).
  const std::string& targets_file() const { return targets_file_; }

  void Write(const std::vector<Completed>& batch) override;
  void Dropped(const CommInfo& comm, uint64_t records) override;

 private:
  prometheus::Labels LabelsOf(const Completed& c) const;

  std::string job_;
  std::string node_;
  std::string address_;
  std::string targets_file_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>* duration_ = nullptr;
  prometheus::Family<prometheus::Histogram>* busbw_ = nullptr;
  prometheus::Family<prometheus::Counter>* bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* dropped_ = nullptr;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace fabricscope::profiler
