// NCCL's tuning model (ncclTopoTuneModel + ncclTopoGetAlgoTime) with the topology inputs
// NCCL measures on a live machine derived from platform facts instead.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/model.h"
#include "fabricscope/strings.h"
#include "model/nccl_tuning.h"

namespace fabricscope {
namespace {

using model::Factors;
using model::NcclTuning;

constexpr std::array<std::string_view, 8> kAlgorithmNames = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT", "P2P"};
constexpr std::array<std::string_view, 3> kProtocolNames = {"LL", "LL128", "Simple"};
constexpr std::array<std::string_view, 4> kArchNames = {"volta", "ampere", "hopper", "blackwell"};

int Log2i(double x) { return x >= 1 ? static_cast<int>(std::floor(std::log2(x))) : -1; }

int Index(NcclAlgorithm a) { return static_cast<int>(a); }
int Index(NcclProtocol p) { return static_cast<int>(p); }

// NCCL's functions: the collectives its tuner has a row for.
bool IsNcclFunction(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kAllGather ||
         c == Collective::kReduceScatter || c == Collective::kBroadcast || c == Collective::kReduce;
}

const model::PlatformFactors::Transport* FindTransport(const std::string& name) {
  for (const auto& t : Factors().transports) {
    if (Lower(t.name) == Lower(name)) return &t;
  }
  return nullptr;
}

bool IsRingCollective(const std::string& name) {
  return name == "all_reduce" || name == "all_gather" || name == "reduce_scatter";
}

// The catalog's multi-node ring band as a fraction of line rate, when it is NIC-bound.
std::optional<double> BandEfficiency(const Platform& platform) {
  const double nic_total = platform.NicTotalGBs();
  if (nic_total <= 0) return std::nullopt;
  const Expectation* best = nullptr;
  auto better = [](const Expectation& a, const Expectation* b) {
    if (b == nullptr) return true;
    if (BasisRank(a.basis) != BasisRank(b->basis)) return BasisRank(a.basis) < BasisRank(b->basis);
    return a.nodes_min < b->nodes_min;
  };
  for (const auto& e : platform.expected) {
    const std::string algo = Lower(e.algorithm);
    if (!IsRingCollective(e.collective) || e.nodes_min < 2) continue;
    if (!algo.empty() && algo != "ring") continue;
    // A band at the intra-node figure says nothing about the network.
    if (e.typical_busbw >= nic_total || e.typical_busbw >= 0.995 * platform.intra_node_ring_busbw)
      continue;
    if (better(e, best)) best = &e;
  }
  if (best == nullptr) return std::nullopt;
  return best->typical_busbw / nic_total;
}

}  // namespace

std::string_view NcclTuningVersion() { return NcclTuning().version; }
std::string NcclTuningSource() {
  return std::string(NcclTuning().version) + " (" + NcclTuning().source + ")";
}

std::string_view AlgorithmName(NcclAlgorithm algorithm) {
  return kAlgorithmNames[static_cast<size_t>(algorithm)];
}
std::string_view ProtocolName(NcclProtocol protocol) {
  return kProtocolNames[static_cast<size_t>(protocol)];
}
std::string_view ArchName(GpuArch arch) { return kArchNames[static_cast<size_t>(arch)]; }

NcclAlgorithm ParseAlgorithm(std::string_view name) {
  return ParseName<NcclAlgorithm>(name, kAlgorithmNames, "NCCL algorithm");
}
NcclProtocol ParseProtocol(std::string_view name) {
  return ParseName<NcclProtocol>(name, kProtocolNames, "NCCL protocol");
}
GpuArch ParseArch(std::string_view name) {
  return ParseName<GpuArch>(name, kArchNames, "GPU architecture");
}
CpuVendor ParseCpuVendor(std::string_view name) {
  constexpr std::array<std::string_view, 2> kNames = {"intel", "amd"};
  return ParseName<CpuVendor>(name, kNames, "CPU vendor");
}

std::optional<GpuArch> ArchOfGpu(std::string_view gpu_model) {
  const std::string upper = Upper(gpu_model);
  struct Marker {
    const char* token;
    GpuArch arch;
  };
  // Longer, more specific names first (GB200 before B200, H200 before H20).
  static constexpr Marker kMarkers[] = {
      {"GB300", GpuArch::kBlackwell}, {"GB200", GpuArch::kBlackwell}, {"B300", GpuArch::kBlackwell},
      {"B200", GpuArch::kBlackwell},  {"B100", GpuArch::kBlackwell},  {"GH200", GpuArch::kHopper},
      {"H200", GpuArch::kHopper},     {"H100", GpuArch::kHopper},     {"H800", GpuArch::kHopper},
      {"H20", GpuArch::kHopper},      {"A100", GpuArch::kAmpere},     {"A800", GpuArch::kAmpere},
      {"A40", GpuArch::kAmpere},      {"A30", GpuArch::kAmpere},      {"A10", GpuArch::kAmpere},
      {"L40", GpuArch::kAmpere},      {"V100", GpuArch::kVolta},
  };
  for (const auto& m : kMarkers) {
    if (upper.find(m.token) != std::string::npos) return m.arch;
  }
  return std::nullopt;
}

ModelParams PriorParams(const Platform& platform, const ModelOptions& options) {
  ModelParams params;
  const auto* transport = FindTransport(platform.transport);
  params.net_efficiency =
      transport != nullptr ? transport->net_efficiency : Factors().default_net_efficiency;
  if (auto band = BandEfficiency(platform)) params.net_efficiency = *band;
  if (options.net_efficiency) params.net_efficiency = *options.net_efficiency;

  // The catalog's 2-node small-message floor, where published, sets the latency terms:
  // NCCL's constants are per-step figures of InfiniBand-class NICs.
  if (!platform.latency_floor_us || platform.nics <= 0 || platform.gpus_per_node < 1) {
    return params;
  }
  const double floor = *platform.latency_floor_us;
  ModelOptions probe = options;
  probe.nodes = 2;
  probe.algorithms.clear();
  probe.protocols.clear();
  const auto bytes = static_cast<size_t>(Factors().floor_probe_bytes);
  auto floor_at = [&](const ModelParams& p) {
    probe.params = p;
    return CollectiveModel(platform, probe).Predict(Collective::kAllGather, bytes).time_us;
  };
  const double at_zero = floor_at(params);
  if (at_zero >= floor) {
    params.latency_scale = floor / at_zero;
    return params;
  }
  double lo = 0;
  double hi = floor;
  for (int i = 0; i < 60 && hi - lo > 1e-6 * floor; ++i) {
    ModelParams mid = params;
    mid.net_latency_us = (lo + hi) / 2;
    (floor_at(mid) < floor ? lo : hi) = mid.net_latency_us;
  }
  params.net_latency_us = (lo + hi) / 2;
  return params;
}

CollectiveModel::CollectiveModel(const Platform& platform, const ModelOptions& options)
    : platform_name_(platform.name), options_(options) {
  if (options.nodes < 1) {
    throw UsageError("--nodes " + std::to_string(options.nodes) + " must be at least 1");
  }
  if (platform.gpus_per_node < 1) {
    throw UsageError("platform " + platform.name + " has no GPUs per node to model");
  }
  nodes_ = options.nodes;
  ppn_ = platform.gpus_per_node;
  trays_ = nodes_;
  gpus_per_tray_ = ppn_;
  // Nodes of one NVLink domain (an NVL72 rack) are one NVLink fabric to NCCL: model them as
  // one node of all their GPUs, at the domain's ring busbw, with no NIC on the path.
  nvlink_domain_ = platform.InNvlinkDomain(nodes_) && platform.domain_ring_busbw > 0;
  if (nvlink_domain_) {
    ppn_ = nodes_ * ppn_;
    nodes_ = 1;
  }
  if (nranks() < 2) {
    throw UsageError(
        "1 node with 1 GPU is a single rank: nothing crosses a link to model; "
        "give --nodes 2 or more");
  }
  if (nodes_ > 1 && (platform.nics < 1 || platform.nic_rate_gbps <= 0)) {
    throw UsageError("platform " + platform.name +
                     " has no GPU-fabric NICs, so it cannot be modelled across nodes: give "
                     "--nics and --nic-rate");
  }
  if (ppn_ > 1 && platform.intra_node_ring_busbw <= 0) {
    throw UsageError("platform " + platform.name +
                     " has no single-node ring busbw: give --intra-node-busbw");
  }
  if (options.in_network_reduction && nodes_ > 1 && Lower(platform.transport) != "ib") {
    throw UsageError("in-network reduction (SHARP) runs in InfiniBand switches; " + platform.name +
                     " uses " + platform.transport + ": drop --in-network");
  }
  arch_ = options.arch.value_or(ArchOfGpu(platform.gpu_model).value_or(GpuArch::kHopper));
  params_ = options.params ? *options.params : PriorParams(platform, options);
  if (options.params && options.net_efficiency) params_.net_efficiency = *options.net_efficiency;
  if (!(params_.latency_scale > 0) || !(params_.net_efficiency > 0) ||
      !(params_.intra_efficiency > 0) || !(params_.net_latency_us >= 0)) {
    throw UsageError("model terms must be positive: latency scale, efficiencies");
  }
  const double intra_ring =
      nvlink_domain_ ? platform.domain_ring_busbw : platform.intra_node_ring_busbw;
  intra_ =
      ppn_ > 1 ? intra_ring * params_.intra_efficiency : std::numeric_limits<double>::infinity();
  inter_ = nodes_ > 1 ? platform.NicTotalGBs() * params_.net_efficiency : 0;
  nics_ = platform.nics;
  const auto& f = Factors();
  if (options.channels > 0) {
    channels_ = options.channels;
  } else if (nodes_ == 1) {
    channels_ = f.single_node_channels;
  } else {
    channels_ = std::clamp(2 * platform.nics, 2, f.max_channels);
  }
  const auto* transport = FindTransport(platform.transport);
  ll128_over_net_ = transport != nullptr && transport->ll128_over_net;
}

bool CollectiveModel::Allowed(NcclAlgorithm algorithm, NcclProtocol protocol) const {
  const auto& algos = options_.algorithms;
  const auto& protos = options_.protocols;
  return (algos.empty() || std::find(algos.begin(), algos.end(), algorithm) != algos.end()) &&
         (protos.empty() || std::find(protos.begin(), protos.end(), protocol) != protos.end());
}

bool CollectiveModel::Enabled(Collective c, NcclAlgorithm a, NcclProtocol p) const {
  using A = NcclAlgorithm;
  const bool ar = c == Collective::kAllReduce;
  const bool ag_rs = c == Collective::kAllGather || c == Collective::kReduceScatter;
  const bool rooted = c == Collective::kBroadcast || c == Collective::kReduce;
  // Which algorithms NCCL 2.25 implements per function.
  if (rooted && a != A::kRing) return false;
  if (ag_rs && a != A::kPat && a != A::kRing && a != A::kNvls && a != A::kCollNetDirect)
    return false;
  if (ar && a == A::kPat) return false;
  if ((a == A::kNvls || a == A::kNvlsTree || a == A::kPat || a == A::kCollNetDirect ||
       a == A::kCollNetChain) &&
      p != NcclProtocol::kSimple)
    return false;
  // What the machine supports.
  const bool nvswitch = options_.nvlink && ppn_ > 1 && arch_ >= GpuArch::kHopper;
  switch (a) {
    case A::kTree:
    case A::kRing:
      break;
    case A::kCollNetDirect:
    case A::kCollNetChain:
      // AllGather/ReduceScatter over CollNet need a plugin with iallgather and one NIC per
      // GPU; only all_reduce is modelled.
      if (!ar || !options_.in_network_reduction || nodes_ == 1) return false;
      if (a == A::kCollNetDirect && !options_.nvlink) return false;
      break;
    case A::kNvls:
      if (!nvswitch) return false;
      if (nodes_ > 1 && (!ar || !options_.in_network_reduction)) return false;
      break;
    case A::kNvlsTree:
      if (!nvswitch || nodes_ == 1) return false;
      break;
    case A::kPat:
      if (ppn_ != 1 || nodes_ == 1) return false;
      break;
    case A::kP2p:
      return false;
  }
  if (p == NcclProtocol::kLL128 &&
      !((options_.nvlink || ppn_ == 1) && (nodes_ == 1 || ll128_over_net_))) {
    return false;
  }
  return Allowed(a, p);
}

// NCCL's steps of a ring: 2 (n - 1) for all_reduce, n - 1 for all_gather and
// reduce_scatter, n for the rest.
int CollectiveModel::RingSteps(Collective c) const {
  const int n = nranks();
  if (c == Collective::kAllReduce) return 2 * (n - 1);
  if (c == Collective::kAllGather || c == Collective::kReduceScatter) return n - 1;
  return n;
}

// NCCL's cap on LL bandwidth for this architecture, CPU and node count.
double CollectiveModel::LlMaxBw() const {
  const auto& t = NcclTuning();
  const int bucket = nodes_ <= 2 ? nodes_ - 1 : 2;
  return nodes_ == 1 ? t.ll_max_bw[static_cast<int>(arch_)][0]
                     : t.ll_max_bw[options_.cpu == CpuVendor::kAmd ? 1 : 0][bucket];
}

double CollectiveModel::GraphBusBw(Collective c, NcclAlgorithm a) const {
  using A = NcclAlgorithm;
  const auto& t = NcclTuning();
  const bool ar = c == Collective::kAllReduce;
  const int n = nranks();
  // What one rank's (ring) or one node's (network) links carry per direction.
  const double ring_bw = nodes_ == 1 ? intra_ : std::min(intra_, inter_);
  const double nvls_alg =
      ppn_ > 1 ? Factors().nvls_gain[static_cast<int>(arch_)] * intra_ / (2.0 * (ppn_ - 1) / ppn_)
               : 0.0;
  switch (a) {
    case A::kRing:
      return ring_bw;
    case A::kTree:
      // Two nodes: each node's NICs carry the data once each way (2x a ring's load);
      // more nodes: a double binary tree carries it twice.
      return nodes_ == 1 ? intra_ : std::min(intra_, nodes_ == 2 ? 2 * inter_ : inter_);
    case A::kNvls:
      return ar ? (nodes_ == 1 ? nvls_alg : std::min(nvls_alg, inter_)) / t.nvls_ratio
                : intra_ * ppn_ / (ppn_ - 1.0);
    case A::kNvlsTree:
      return std::min(nvls_alg, nodes_ <= 2 ? inter_ : inter_ / 2) / t.nvls_ratio;
    case A::kCollNetDirect:
    case A::kCollNetChain:
      // The switches reduce: a node sends and receives the data once; inside the node a
      // reduce-scatter and an all-gather over NVLink, 2 (ppn - 1) / ppn of it per GPU.
      return std::min(ppn_ > 1 ? intra_ * ppn_ / (2.0 * (ppn_ - 1)) : inter_, inter_) /
             t.tree_ratio;
    case A::kPat:
      return inter_ * n / (n - 1.0);
    case A::kP2p:
      break;
  }
  return 0;
}

double CollectiveModel::TunedBusBw(Collective c, NcclAlgorithm a, NcclProtocol p,
                                   double bus) const {
  using A = NcclAlgorithm;
  const auto& t = NcclTuning();
  const bool ar = c == Collective::kAllReduce;
  const int arch = static_cast<int>(arch_);
  const int bucket = nodes_ <= 2 ? nodes_ - 1 : 2;
  const double ll_max = LlMaxBw();
  const double ch = channels_;
  if (a == A::kRing && p == NcclProtocol::kLL) bus = std::min(ll_max, bus * t.ring_ll_factor);
  if (a == A::kRing && p == NcclProtocol::kLL128) {
    bus = std::min(bus * t.ring_ll128_factor, ch * t.ring_ll128_max_bw_per_channel[arch][bucket]);
  }
  if (a == A::kTree && ar)
    bus = std::min(bus * t.tree_factor, ch * t.tree_max_bw_per_channel[arch][bucket]);
  if (a == A::kTree && p == NcclProtocol::kLL) bus = std::min(bus * t.tree_ll_factor, ll_max);
  if (a == A::kTree && p == NcclProtocol::kLL128) {
    bus = std::min(bus * (nodes_ == 1 ? t.tree_ll128_factor_1node : t.tree_ll128_factor),
                   ch * t.tree_ll128_max_bw_per_channel[arch][bucket]);
  }
  if (a == A::kPat) bus *= t.pat_factor;
  if (a == A::kCollNetDirect && arch_ >= GpuArch::kHopper) bus *= t.collnet_direct_hopper_factor;
  return bus;
}

double CollectiveModel::BusToAlgRatio(Collective c, NcclAlgorithm a) const {
  using A = NcclAlgorithm;
  const auto& t = NcclTuning();
  const bool ag_rs = c == Collective::kAllGather || c == Collective::kReduceScatter;
  // NCCL leaves non-ring AllGather/ReduceScatter as is.
  if (a != A::kRing && ag_rs) return 1;
  if (a == A::kRing) return static_cast<double>(nranks()) / RingSteps(c);
  if (a == A::kNvls || a == A::kNvlsTree) return t.nvls_ratio;
  return t.tree_ratio;
}

double CollectiveModel::RingLatency(Collective c, NcclProtocol p, double intra_lat,
                                    double inter_lat) const {
  const auto& t = NcclTuning();
  const bool simple = p == NcclProtocol::kSimple;
  const int ai = Index(NcclAlgorithm::kRing);
  const int pi = Index(p);
  if (c == Collective::kBroadcast || c == Collective::kReduce) {
    const int intra_hw = options_.nvlink ? model::kHwNvlink : model::kHwPci;
    const int hw = nodes_ == 1 ? intra_hw : model::kHwNet;
    return t.hw_latency_us[hw][ai][pi];  // rings on the same channels: one step
  }
  double overhead = 0;
  if (nodes_ > 1) {
    overhead = (options_.cpu == CpuVendor::kAmd ? t.net_overhead_amd_us : t.net_overhead_intel_us) *
               (simple ? t.net_overhead_simple_factor : 1.0);
  }
  intra_lat = std::max(intra_lat, overhead);
  const bool ar = c == Collective::kAllReduce;
  const int inter_steps = nodes_ == 1 ? 0 : ar ? 2 * (nodes_ - 1) : nodes_ - 1;
  return (RingSteps(c) - inter_steps) * intra_lat + inter_steps * inter_lat;
}

double CollectiveModel::BaseLatency(Collective c, NcclAlgorithm a, NcclProtocol p) const {
  using A = NcclAlgorithm;
  const auto& t = NcclTuning();
  const int ai = Index(a);
  const int pi = Index(p);
  const int intra_hw = options_.nvlink ? model::kHwNvlink : model::kHwPci;
  const bool simple = p == NcclProtocol::kSimple;
  const double lat = t.base_latency_us[ai][pi];
  const double intra_lat = t.hw_latency_us[intra_hw][ai][pi];
  const double inter_lat = (ppn_ == 1 ? t.hw_latency_us[model::kHwNet][Index(A::kTree)][pi]
                                      : t.hw_latency_us[model::kHwNet][ai][pi]) +
                           params_.net_latency_us * (simple ? 2 : 1);  // Simple adds the flush
  const int log_nodes = Log2i(nodes_);
  switch (a) {
    case A::kRing:
      return lat + RingLatency(c, p, intra_lat, inter_lat);
    case A::kTree:
      return lat + 2 * ((ppn_ - 1) * intra_lat + log_nodes * inter_lat);
    case A::kCollNetDirect:
      return lat +
             (2 * (std::min(1, ppn_ - 1) * intra_lat + (ppn_ - 1) * t.collnet_arity_latency_us) +
              inter_lat);
    case A::kCollNetChain:
      return lat + (2 * (ppn_ - 1) * intra_lat + inter_lat);
    case A::kNvls:
      return intra_lat + (nodes_ > 1 ? inter_lat : 0);
    case A::kNvlsTree:
      return lat + (intra_lat + 2 * log_nodes * inter_lat);
    case A::kPat:
      return t.pat_base_latency_us + log_nodes * (inter_lat / t.pat_log_divisor) +
             nranks() * t.pat_per_rank_latency_us;
    case A::kP2p:
      break;
  }
  return lat;
}

std::optional<AlgoTime> CollectiveModel::Evaluate(Collective c, NcclAlgorithm a, NcclProtocol p,
                                                  size_t bytes) const {
  using A = NcclAlgorithm;
  if (a == A::kP2p) return std::nullopt;
  const auto& t = NcclTuning();
  const bool ar = c == Collective::kAllReduce;
  // The "graph" bandwidth x channels NCCL would measure, from the platform's figures, with
  // ncclTopoTuneModel's refinements; then the bandwidth of `bytes`.
  double bw = TunedBusBw(c, a, p, GraphBusBw(c, a)) * BusToAlgRatio(c, a);
  if (!(bw > 0) || !std::isfinite(bw)) return std::nullopt;
  double lat = BaseLatency(c, a, p);

  // ncclTopoGetAlgoTime.
  if (a == A::kTree && ar) {
    const int log_size = Log2i(static_cast<double>(bytes >> 6));
    if (log_size >= 0 && log_size < model::kTreeCorrectionSizes) {
      bw *= t.tree_correction[Index(p)][log_size];
    }
  }
  if (a == A::kRing && p == NcclProtocol::kSimple && nodes_ > 1 && ar &&
      static_cast<double>(bytes) / (static_cast<double>(channels_) * nranks()) >=
          t.ring_plateau_min_bytes) {
    lat *= arch_ < GpuArch::kAmpere ? t.ring_plateau_factor_volta : t.ring_plateau_factor;
  }
  lat *= params_.latency_scale;
  AlgoTime out;
  out.algorithm = a;
  out.protocol = p;
  out.latency_us = lat;
  out.bandwidth_gbs = bw;
  out.time_us = lat + static_cast<double>(bytes) / (1000.0 * bw);
  return out;
}

std::optional<AlgoTime> CollectiveModel::EvaluateP2p(Collective c, size_t bytes) const {
  // NCCL runs these as grouped send/receive, outside its tuner: one Ring/Simple step per
  // peer for latency, the busiest link for bandwidth (docs/model.md).
  const auto& t = NcclTuning();
  const int ring = Index(NcclAlgorithm::kRing);
  const int simple = Index(NcclProtocol::kSimple);
  const int intra_hw = options_.nvlink ? model::kHwNvlink : model::kHwPci;
  const double step_intra = t.hw_latency_us[intra_hw][ring][simple];
  const double step_net = t.hw_latency_us[model::kHwNet][ring][simple] + 2 * params_.net_latency_us;
  const double base = t.base_latency_us[ring][simple];
  const int n = nranks();
  const double s = static_cast<double>(bytes);
  const double nic = nodes_ > 1 ? inter_ / std::max(1, nics_) : 0;
  double lat = base;
  double us_per_byte = 0;
  if (c == Collective::kSendRecv) {
    lat += nodes_ > 1 ? step_net : step_intra;
    const double bw = nodes_ > 1 ? std::min(intra_, nic) : intra_;
    us_per_byte = 1.0 / (1000.0 * bw);
  } else {
    lat += (ppn_ - 1) * step_intra + (nodes_ - 1) * step_net;
    const double remote = nodes_ > 1 ? (n - ppn_) / static_cast<double>(n) : 0;
    const double local = (ppn_ - 1) / static_cast<double>(n);
    double net_us = 0;
    if (c == Collective::kAlltoAll) {
      net_us = nodes_ > 1 ? ppn_ * remote / (1000.0 * inter_) : 0;  // per node, all NICs
    } else {
      net_us = nodes_ > 1 ? remote / (1000.0 * nic) : 0;  // the root's NIC
    }
    const double nvlink_us = ppn_ > 1 ? local / (1000.0 * intra_) : 0;
    us_per_byte = std::max(net_us, nvlink_us);
  }
  lat *= params_.latency_scale;
  AlgoTime out;
  out.algorithm = NcclAlgorithm::kP2p;
  out.protocol = NcclProtocol::kSimple;
  out.latency_us = lat;
  out.bandwidth_gbs = us_per_byte > 0 ? 1.0 / (1000.0 * us_per_byte) : 0;
  out.time_us = lat + s * us_per_byte;
  return out;
}

Prediction CollectiveModel::Predict(Collective collective, size_t bytes) const {
  Prediction out;
  out.collective = collective;
  out.size = bytes;
  if (IsNcclFunction(collective)) {
    for (int a = 0; a < model::kNumAlgorithms; ++a) {
      for (int p = 0; p < model::kNumProtocols; ++p) {
        const auto algo = static_cast<NcclAlgorithm>(a);
        const auto proto = static_cast<NcclProtocol>(p);
        if (!Enabled(collective, algo, proto)) continue;
        if (auto time = Evaluate(collective, algo, proto, bytes)) out.candidates.push_back(*time);
      }
    }
    if (out.candidates.empty()) {
      // NCCL's fallback when NCCL_ALGO leaves a function nothing: the ring.
      for (int p = 0; p < model::kNumProtocols; ++p) {
        const auto proto = static_cast<NcclProtocol>(p);
        const bool proto_ok = options_.protocols.empty() ||
                              std::find(options_.protocols.begin(), options_.protocols.end(),
                                        proto) != options_.protocols.end();
        if (!proto_ok) continue;
        if (auto time = Evaluate(collective, NcclAlgorithm::kRing, proto, bytes)) {
          out.candidates.push_back(*time);
        }
      }
    }
  } else if (auto time = EvaluateP2p(collective, bytes)) {
    out.candidates.push_back(*time);
  }
  if (out.candidates.empty()) {
    throw UsageError("no NCCL algorithm and protocol is enabled for " +
                     std::string(SpecOf(collective).name) + " on " + platform_name_ +
                     " with the given --algo/--proto");
  }
  std::stable_sort(out.candidates.begin(), out.candidates.end(),
                   [](const AlgoTime& x, const AlgoTime& y) { return x.time_us < y.time_us; });
  const AlgoTime& best = out.candidates.front();
  out.algorithm = best.algorithm;
  out.protocol = best.protocol;
  out.time_us = best.time_us;
  out.algbw = best.time_us > 0 ? static_cast<double>(bytes) / (1000.0 * best.time_us) : 0;
  out.busbw = out.algbw * SpecOf(collective).bus_factor(nranks());
  return out;
}

std::vector<Prediction> CollectiveModel::Sweep(Collective collective,
                                               const std::vector<size_t>& sizes) const {
  std::vector<Prediction> out;
  out.reserve(sizes.size());
  for (size_t size : sizes) out.push_back(Predict(collective, size));
  return out;
}

}  // namespace fabricscope
