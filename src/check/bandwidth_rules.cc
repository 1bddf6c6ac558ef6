// Rules about large-size busbw: against the expected band, and against what the node's NICs
// can carry at all.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "check/rules.h"
#include "fabricscope/analyze.h"
#include "fabricscope/collective.h"
#include "fabricscope/error.h"
#include "fabricscope/model.h"

namespace fabricscope::check {
namespace {

std::string NicDescription(const Platform& p) {
  return fmt::format("{} x {:g} Gb/s", p.nics, p.nic_rate_gbps);
}

// "; 2 runs: 95% interval 328.1-331.9 GB/s, 99% likely healthy".
std::string ConfidenceText(const BandwidthJudgement& j) {
  if (!j.confidence) return "";
  const VerdictConfidence& c = *j.confidence;
  std::string text =
      fmt::format("; {} repeats: {:.0f}% interval {} to {} (run-to-run variation {:.2g}%)",
                  c.samples, 100 * c.level, Gbs(c.low), Gbs(c.high), c.cv_percent);
  const double healthy = c.probability_healthy;
  text += healthy > 0.999   ? ", healthy with more than 99.9% probability"
          : healthy < 0.001 ? ", healthy with less than 0.1% probability"
                            : fmt::format(", healthy with {:.1f}% probability", 100 * healthy);
  if (c.probability_verdict < 0.9) {
    text += "; the runs vary too much to tell healthy from not: repeat more, or find what varies";
  }
  return text;
}

// What the judged band's algorithm rests on, the other bands the log leaves possible, and what
// the choice between them decides.
std::string AlgorithmText(const RuleContext& c, const ExpectedBusbw& e) {
  const BandwidthJudgement& j = c.bandwidth;
  if (e.basis == "model") return "";
  const std::string algo = e.algorithm.empty() ? "NCCL's default" : e.algorithm;
  std::string text = "; algorithm " + algo + ": ";
  if (j.algorithm_basis == "the run") {
    text += j.facts.algorithm_from;
  } else if (j.algorithm_basis == "the measurement") {
    text += j.over_nvlink ? "the nodes share one NVLink domain"
                          : "busbw above the NIC total rules out a ring over the NICs";
  } else if (j.algorithm_basis == "NCCL's default") {
    text +=
        "what NCCL picks here by default (the model's NCCL tuning tables); the log does not "
        "name the algorithm";
  } else {
    text += "the log does not name the algorithm";
  }
  if (!j.facts.nvls_off_from.empty()) text += "; NVLS off (" + j.facts.nvls_off_from + ")";
  if (j.possible.size() > 1) {
    std::vector<std::string> bands;
    for (const auto& [band, status] : j.possible) {
      bands.push_back(BandName(band) + " " + std::string(SeverityName(status)));
    }
    text += "; bands possible: " + fmt::format("{}", fmt::join(bands, "; "));
  }
  if (j.healthy_elsewhere && !j.missing_in_network) {
    text += fmt::format(
        "; below the {} band NCCL picks by default here, but healthy for the {} band, and the "
        "log does not say which ran: rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING, or "
        "set NCCL_ALGO to judge one band",
        algo,
        j.healthy_elsewhere->algorithm.empty() ? "NCCL default" : j.healthy_elsewhere->algorithm);
  }
  if (j.missing_in_network) {
    text += fmt::format(
        "; missing in-network reduction: the fabric has SHARP ({}), where a healthy run with "
        "CollNet reaches {}, but this run {}: set NCCL_COLLNET_ENABLE=1 with NCCL's SHARP plugin "
        "(nccl-rdma-sharp-plugins) and check that the subnet manager runs SHARP's aggregation "
        "manager, or give --sharp no if the fabric has none",
        j.facts.sharp_from, BandName(*j.missing_in_network),
        j.algorithm_basis == "the run" ? "ran without it (" + j.facts.algorithm_from + ")"
                                       : "measures what a ring over the NICs gives");
  } else if (!j.facts.sharp && e.algorithm != "CollNet") {
    for (const Expectation& band : c.choice.platform->expected) {
      if (band.InNetwork() && band.collective == c.test.collective &&
          c.test.nodes >= band.nodes_min && (!band.nodes_max || c.test.nodes <= *band.nodes_max)) {
        text += "; if the fabric has in-network reduction (SHARP), the CollNet band " +
                BandName(band) + " judges instead: give --sharp yes";
        break;
      }
    }
  }
  return text;
}

}  // namespace

// The share of twice the NIC total from which a 2-node Tree/NVLS all_reduce is healthy: the
// ring's 85% healthy floor less the intra-node share of the time (the reduction in NVLink).
constexpr double kTreeHealthy = 0.75;

// The share of the model's Tree/NVLS figure from which the run is healthy: the ring bands' 85%.
constexpr double kRingHealthy = 0.85;

// What the model of NCCL's tuning (src/model: the algorithm NCCL picks at that size on that many
// nodes, NVLS and NVLSTree bounded by NVLink as well as by the NICs) predicts at the run's peak
// size; nullopt when it cannot say, or when it picks a ring (then the NIC total bounds).
std::optional<Prediction> TreeExpectation(const RuleContext& c) {
  try {
    ModelOptions options;
    options.nodes = c.test.nodes;
    const CollectiveModel model(*c.choice.platform, options);
    Prediction p = model.Predict(FindCollective(c.test.collective).id, c.test.peak_size);
    if (p.algorithm == NcclAlgorithm::kRing || !(p.busbw > 0)) return std::nullopt;
    return p;
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::optional<Finding> AlgorithmRule(const RuleContext& c) {
  if (!PlatformApplies(c.test, c.choice) || c.test.nodes < 2) return std::nullopt;
  // Inside one NVLink domain the NICs carry nothing: their total bounds nothing.
  if (c.bandwidth.over_nvlink) return std::nullopt;
  const Platform& p = *c.choice.platform;
  const double nic_total = p.NicTotalGBs();
  if (c.test.peak_busbw <= nic_total) return std::nullopt;
  Finding f;
  f.severity = Severity::kWarn;
  f.figures["peak_busbw"] = c.test.peak_busbw;
  f.figures["nic_total"] = nic_total;
  const std::string seen = fmt::format(
      "busbw reaches {} at {}, above the {} the node's NICs carry ({})", Gbs(c.test.peak_busbw),
      FormatBytes(c.test.peak_size), Gbs(nic_total), NicDescription(p));
  if (c.bandwidth.expected && c.bandwidth.expected->algorithm == "CollNet") {
    // Judged against an in-network reduction band: the figure is what SHARP gives, not a doubt.
    f.severity = Severity::kOk;
    f.what = seen +
             ": in-network reduction (CollNet/SHARP) reduces in the switches, so the "
             "NICs carry less than busbw; judged against the CollNet band";
    return f;
  }
  if (c.test.nodes > 2) {
    f.what = seen + fmt::format(
                        " on {} nodes, which only in-network reduction (SHARP) or a wrong node "
                        "count gives: check the node count (--nodes) and the results",
                        c.test.nodes);
    return f;
  }
  const auto algo = c.test.Env("NCCL_ALGO");
  // On two nodes Tree, NVLS and NVLSTree reduce inside each node and send each node's half
  // across: busbw reaches up to twice the NIC total (NCCL's tuning model, src/model). A run
  // that reaches most of that is a healthy network measured through those algorithms.
  const double tree_bound = 2 * nic_total;
  const bool reduces = c.test.collective == "all_reduce";
  if (reduces && (!algo || *algo != "Ring") && c.test.peak_busbw <= tree_bound * 1.05 &&
      c.test.peak_busbw >= kTreeHealthy * tree_bound) {
    f.severity = Severity::kOk;
    f.figures["tree_bound"] = tree_bound;
    f.what = seen + fmt::format(
                        ": on two nodes NCCL's Tree, NVLS or NVLSTree reduce inside each node and "
                        "send half the data across, so busbw reaches up to twice the NIC total "
                        "({}); {} of that is what a healthy network gives through them",
                        Gbs(tree_bound), Percent(c.test.peak_busbw / tree_bound));
    return f;
  }
  if (reduces && (!algo || *algo != "Ring")) {
    if (const auto model = TreeExpectation(c);
        model && c.test.peak_busbw >= kRingHealthy * model->busbw) {
      f.severity = Severity::kOk;
      f.figures["model_busbw"] = model->busbw;
      f.what =
          seen + fmt::format(
                     ": on {} nodes NCCL's {} reduces inside each node and sends less over the "
                     "network; the model of NCCL's tuning on this platform expects {} at {} "
                     "through it, and {} of that is what a healthy fabric gives",
                     c.test.nodes, AlgorithmName(model->algorithm), Gbs(model->busbw),
                     FormatBytes(c.test.peak_size), Percent(c.test.peak_busbw / model->busbw));
      return f;
    }
  }
  f.what = seen +
           ": NCCL used Tree, NVLS or NVLSTree, which reduce inside each node and send less "
           "over the network, so this is not a network measurement; rerun with "
           "NCCL_ALGO=Ring to measure the network";
  if (Mentions(c.test.transports, "NVLS")) f.what += " (NCCL's log mentions NVLS)";
  if (algo && *algo == "Ring") {
    f.what +=
        "; NCCL_ALGO=Ring was set, and a ring cannot exceed the NIC total: the node count or "
        "the results are not what they seem";
  }
  return f;
}

std::optional<Finding> BandwidthRule(const RuleContext& c) {
  if (!PlatformApplies(c.test, c.choice)) return std::nullopt;
  const BandwidthJudgement& j = c.bandwidth;
  const Platform& p = *c.choice.platform;
  Finding f;
  if (!j.expected || !j.measured) {
    f.severity = Severity::kWarn;
    f.what = "not judged: " + j.not_judged;
    return f;
  }
  const ExpectedBusbw& e = *j.expected;
  const double m = *j.measured;
  const double share = m / e.typical;
  f.figures = {{"measured_busbw", m},
               {"expected_busbw", e.typical},
               {"healthy_busbw", e.healthy},
               {"fail_below_busbw", e.fail_below},
               {"percent_of_expected", 100 * share}};
  if (j.above_nic_total && e.typical <= j.nic_total) {
    // A ring band cannot judge a Tree/NVLS figure; the algorithm rule says what to do.
    f.severity = Severity::kInfo;
    f.what = fmt::format(
        "not judged against the {} {} band: the run is above the NIC total (see algorithm)",
        Gbs(e.typical), e.algorithm.empty() ? "ring" : e.algorithm);
    return f;
  }
  f.severity = j.status;
  std::string text =
      fmt::format("busbw {} is {} of the expected {}", Gbs(m), Percent(share), Gbs(e.typical));
  text += fmt::format(" (mean over {} size{} from {}{}; healthy from {}, CRITICAL below {})",
                      j.sizes_judged, j.sizes_judged == 1 ? "" : "s", FormatBytes(e.from_size),
                      j.samples.size() > 1 ? fmt::format(", {} repeats", j.samples.size()) : "",
                      Gbs(e.healthy), Gbs(e.fail_below));
  if (e.basis == "model") {
    text += "; expected from the model, as " + j.fallback + ": " + e.source;
  } else if (e.source.starts_with(e.basis + ":")) {
    text += "; " + e.source;
  } else {
    text += "; " + e.basis + ": " + e.source;
  }
  text += AlgorithmText(c, e);
  if (j.over_nvlink) {
    text += fmt::format(
        "; {} nodes inside one NVLink domain ({} GPUs, multi-node NVLink): this measures "
        "NVLink across the nodes, not the NICs",
        c.test.nodes, p.nvlink_domain_gpus);
  } else if (c.test.nodes >= 2) {
    // A ring carries its busbw through each node's NICs: busbw / NICs is each NIC's load.
    const double per_nic = m / p.nics;
    const double line = per_nic * 8 / p.nic_rate_gbps;
    text += fmt::format("; per NIC {} = {:.0f} Gb/s, {} of the {:g} Gb/s line rate", Gbs(per_nic),
                        per_nic * 8, Percent(line), p.nic_rate_gbps);
    f.figures["per_nic_gbs"] = per_nic;
    f.figures["line_rate_percent"] = 100 * line;
  } else if (c.test.host_memory) {
    text += "; one node on host memory: this measures its memory and CPUs, not the network";
  } else {
    text += "; one node: this measures NVLink/PCIe inside the node, not the network";
  }
  text += ConfidenceText(j);
  if (!j.confidence && std::fabs(m - e.healthy) < 0.1 * e.healthy) {
    text +=
        "; one sample, close to the healthy minimum: repeat it (-N 5, or several result files) "
        "for a verdict with its confidence";
  }
  if (f.severity == Severity::kCritical && j.over_nvlink) {
    text +=
        "; if multi-node NVLink was off (NCCL_MNNVL_ENABLE=0, or the IMEX service not running), "
        "the run went over the NICs: NCCL's log says 'MNNVL' when it is on";
  }
  if (f.severity == Severity::kCritical && !c.test.host_memory) {
    text += c.test.nodes >= 2 ? "; run fabricscope doctor on the nodes, and fabricscope locate "
                                "to find a slow node or link"
                              : "; run fabricscope doctor on the node";
  }
  if (j.confidence) {
    f.figures["interval_low"] = j.confidence->low;
    f.figures["interval_high"] = j.confidence->high;
    f.figures["probability_healthy"] = j.confidence->probability_healthy;
  }
  f.what = text;
  return f;
}

}  // namespace fabricscope::check
