// The analytic model of NCCL's collectives: time = latency + size / bandwidth for every
// algorithm and protocol with NCCL's own tuning constants, NCCL's choice of the fastest,
// and calibration of the efficiency and latency terms against a measured run.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/platform.h"
#include "fabricscope/result.h"

namespace fabricscope {

// NCCL's algorithms in NCCL's order, plus P2P for the collectives NCCL runs as grouped
// send/receive (alltoall, sendrecv, gather, scatter), which its tuner does not model.
enum class NcclAlgorithm {
  kTree,
  kRing,
  kCollNetDirect,
  kCollNetChain,
  kNvls,
  kNvlsTree,
  kPat,
  kP2p
};

// NCCL's protocols in NCCL's order.
enum class NcclProtocol { kLL, kLL128, kSimple };

// GPU generations NCCL's tables distinguish (by compute capability).
enum class GpuArch { kVolta, kAmpere, kHopper, kBlackwell };

// CPU vendor: NCCL's LL cap and per-step network overhead depend on it across nodes.
enum class CpuVendor { kIntel, kAmd };

std::string_view AlgorithmName(NcclAlgorithm algorithm);  // "Ring", "NVLSTree", ...
std::string_view ProtocolName(NcclProtocol protocol);     // "LL", "LL128", "Simple"
std::string_view ArchName(GpuArch arch);                  // "hopper"
// Case-insensitive; throw UsageError listing the valid names.
NcclAlgorithm ParseAlgorithm(std::string_view name);
NcclProtocol ParseProtocol(std::string_view name);
GpuArch ParseArch(std::string_view name);
CpuVendor ParseCpuVendor(std::string_view name);
// The generation of a GPU model name ("NVIDIA H200" -> Hopper); empty when unknown.
std::optional<GpuArch> ArchOfGpu(std::string_view gpu_model);

// The NCCL release whose tuning constants the model uses ("2.25.1"), and where they were
// read ("NVIDIA/nccl src/graph/tuning.cc @ <commit>").
std::string_view NcclTuningVersion();
std::string NcclTuningSource();

// The terms calibration fits. Priors come from the platform (PriorParams).
struct ModelParams {
  double latency_scale = 1.0;     // multiplies every latency of NCCL's table
  double net_latency_us = 0;      // NCCL's graph latencyInter: extra per inter-node step
  double net_efficiency = 0.9;    // fraction of NIC line rate a ring carries
  double intra_efficiency = 1.0;  // multiplies the platform's single-node ring busbw
};

// What to model beyond the platform: scale, hardware details, NCCL_ALGO / NCCL_PROTO.
struct ModelOptions {
  int nodes = 1;
  std::optional<GpuArch> arch;  // empty: from the platform's GPU model (Hopper if unknown)
  CpuVendor cpu = CpuVendor::kIntel;
  bool nvlink = true;                     // GPUs of a node joined by NVLink/NVSwitch (false: PCIe)
  int channels = 0;                       // 0: derived from the NIC count
  bool in_network_reduction = false;      // SHARP: enables CollNet and multi-node NVLS
  std::vector<NcclAlgorithm> algorithms;  // empty: every algorithm NCCL would consider
  std::vector<NcclProtocol> protocols;    // empty: every protocol NCCL would enable
  std::optional<ModelParams> params;      // empty: PriorParams
  std::optional<double> net_efficiency;   // overrides the prior's efficiency only
};

// One algorithm x protocol as NCCL's tuner sees it at one size.
struct AlgoTime {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_us = 0;
  double bandwidth_gbs = 0;  // NCCL's "bandwidth": bytes / (time - latency)
  double time_us = 0;
};

// The model's answer for one collective and size: nccl-tests' columns plus the choice.
struct Prediction {
  Collective collective = Collective::kAllReduce;
  size_t size = 0;  // bytes, as nccl-tests' size column
  double time_us = 0;
  double algbw = 0;  // GB/s
  double busbw = 0;  // GB/s
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  std::vector<AlgoTime> candidates;  // every enabled combination, fastest first
};

// Priors for a platform: the efficiency from the catalog's multi-node ring band (else the
// transport's), latency terms so that the catalog's 2-node floor is met (else NCCL's own).
ModelParams PriorParams(const Platform& platform, const ModelOptions& options);

// NCCL's tuning model evaluated for one platform at one scale.
class CollectiveModel {
 public:
  // Throws UsageError for a scale with fewer than two ranks or options that do not fit
  // the platform (in-network reduction without NICs).
  CollectiveModel(const Platform& platform, const ModelOptions& options);

  Prediction Predict(Collective collective, size_t bytes) const;
  std::vector<Prediction> Sweep(Collective collective, const std::vector<size_t>& sizes) const;

  const ModelParams& params() const { return params_; }
  int nodes() const { return trays_; }
  int ranks_per_node() const { return gpus_per_tray_; }
  // The nodes share one NVLink domain (MNNVL): modelled as one NVLink fabric, no NIC.
  bool nvlink_domain() const { return nvlink_domain_; }
  int nranks() const { return nodes_ * ppn_; }
  int channels() const { return channels_; }
  GpuArch arch() const { return arch_; }
  // GB/s per rank direction the intra-node links carry in a ring (busbw units).
  double intra_busbw() const { return intra_; }
  // GB/s per node direction the NICs carry (0 on one node).
  double net_busbw() const { return inter_; }
  const std::string& platform_name() const { return platform_name_; }

 private:
  std::optional<AlgoTime> Evaluate(Collective collective, NcclAlgorithm algorithm,
                                   NcclProtocol protocol, size_t bytes) const;
  std::optional<AlgoTime> EvaluateP2p(Collective collective, size_t bytes) const;
  // Evaluate's parts: NCCL's ring steps, its LL cap, the bus bandwidth its topology search
  // would find, ncclTopoTuneModel's refinements of it, busbw -> algbw, and the latency.
  int RingSteps(Collective collective) const;
  double LlMaxBw() const;
  double GraphBusBw(Collective collective, NcclAlgorithm algorithm) const;
  double TunedBusBw(Collective collective, NcclAlgorithm algorithm, NcclProtocol protocol,
                    double bus) const;
  double BusToAlgRatio(Collective collective, NcclAlgorithm algorithm) const;
  double BaseLatency(Collective collective, NcclAlgorithm algorithm, NcclProtocol protocol) const;
  double RingLatency(Collective collective, NcclProtocol protocol, double intra_lat,
                     double inter_lat) const;
  bool Enabled(Collective collective, NcclAlgorithm algorithm, NcclProtocol protocol) const;
  bool Allowed(NcclAlgorithm algorithm, NcclProtocol protocol) const;

  std::string platform_name_;
  ModelOptions options_;
  ModelParams params_;
  GpuArch arch_ = GpuArch::kHopper;
  int nodes_ = 1;  // as NCCL's tuner sees them: 1 inside an NVLink domain
  int ppn_ = 1;
  int trays_ = 1;  // as given: the platform's nodes
  int gpus_per_tray_ = 1;
  bool nvlink_domain_ = false;
  int channels_ = 1;
  int nics_ = 0;
  double intra_ = 0;
  double inter_ = 0;
  bool ll128_over_net_ = true;
};

// Which placement's times to read from a run.
enum class Placement { kOutOfPlace, kInPlace };

// Measured against predicted for one row of a run.
struct FitPoint {
  std::string collective;
  size_t size = 0;
  Placement placement = Placement::kOutOfPlace;  // the half of the row measured
  double measured_us = 0;
  double predicted_us = 0;
  double measured_busbw = 0;
  double predicted_busbw = 0;
  std::string algorithm;  // the model's choice
  std::string protocol;
  double error_percent = 0;  // (predicted - measured) / measured time, in percent
};

// How far predictions are from measurements over a set of points.
struct FitError {
  size_t points = 0;
  double mean_abs_percent = 0;
  double max_abs_percent = 0;
};
FitError SummarizeFit(const std::vector<FitPoint>& points);

// Node count of a run from its ranks' host names; 0 when the run does not say.
int NodesOf(const RunResult& run);

// Each row of `measured` (every collective the model covers, sizes >= min_size) against the
// model. Throws UsageError when no row fits.
std::vector<FitPoint> CompareWithMeasured(const CollectiveModel& model, const RunResult& measured,
                                          Placement placement, size_t min_size = 0);

// What Calibrate reads from a run.
struct CalibrationOptions {
  std::vector<Placement> placements = {Placement::kOutOfPlace};  // halves of each row to fit
  size_t min_size = 0;                                           // ignore rows below this size
  int nodes = 0;  // 0: NodesOf(run); required when the run does not say
};

// A model fitted to a run: the terms, the fit's error, and what could not be fitted.
struct Calibration {
  ModelParams params;
  ModelOptions options;  // the base options with the fitted params set: reuse at any scale
  int nodes = 0;         // the scale of the run
  std::vector<std::string> fitted;  // names of the terms the fit moved
  std::vector<std::string> notes;   // e.g. latency not identifiable from large sizes only
  std::vector<FitPoint> points;
  FitError error;
};

// Fits latency_scale and the bottleneck efficiency (net_efficiency across nodes,
// intra_efficiency on one node) by least squares on log time. Throws UsageError when the
// run has no usable row or its scale does not fit the platform.
Calibration Calibrate(const Platform& platform, const ModelOptions& base, const RunResult& measured,
                      const CalibrationOptions& options);

}  // namespace fabricscope
