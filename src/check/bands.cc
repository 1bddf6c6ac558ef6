#include "check/bands.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "check/rules.h"
#include "fabricscope/collective.h"
#include "fabricscope/model.h"
#include "fabricscope/strings.h"

namespace fabricscope::check {
namespace {

// A band's spelling of an NCCL_ALGO name ("ring" -> "Ring"), empty when it is none of them.
std::string BandSpelling(std::string_view name) {
  const std::string wanted = Lower(std::string(Trim(name)));
  if (wanted == "collnetdirect" || wanted == "collnetchain") return "CollNet";
  for (const std::string& a : BandAlgorithms()) {
    if (Lower(a) == wanted) return a;
  }
  return "";
}

// NCCL_ALGO as NCCL reads it (src/graph/tuning.cc, parseList): a comma list of algorithms, or
// "^" and the ones to exclude. A per-function form ("allreduce:ring") is not read: any.
std::vector<std::string> AllowedByNcclAlgo(const std::string& value) {
  if (value.empty() || value.find(':') != std::string::npos) return {};
  const bool exclude = value.front() == '^';
  std::vector<std::string> named;
  for (const std::string& part : Split(exclude ? value.substr(1) : value, ',')) {
    if (const std::string a = BandSpelling(part); !a.empty()) named.push_back(a);
  }
  if (!exclude) return named;
  std::vector<std::string> left;
  for (const std::string& a : BandAlgorithms()) {
    if (std::find(named.begin(), named.end(), a) == named.end()) left.push_back(a);
  }
  return left;
}

void ReadSharp(const TestEvidence& test, const Platform& platform, const CheckOptions& options,
               AlgorithmFacts& f) {
  if (platform.sharp == "none") {
    f.sharp = false;
    f.sharp_from =
        fmt::format("{} has no in-network reduction ({})", platform.name, platform.transport);
    if (options.sharp && *options.sharp) f.sharp_from += ", whatever --sharp says";
    return;
  }
  if (options.sharp) {
    f.sharp = *options.sharp;
    f.sharp_from = *options.sharp ? "--sharp yes" : "--sharp no";
    return;
  }
  if (const auto collnet = test.Env("NCCL_COLLNET_ENABLE")) {
    f.sharp = *collnet == "1";
    f.sharp_from = "NCCL_COLLNET_ENABLE=" + *collnet + " in the run";
    return;
  }
  if (Mentions(test.transports, "CollNet") || Mentions(test.transports, "SHARP")) {
    f.sharp = true;
    f.sharp_from = "NCCL's log mentions CollNet/SHARP";
  }
}

}  // namespace

AlgorithmFacts ReadAlgorithmFacts(const TestEvidence& test, const Platform& platform,
                                  const CheckOptions& options) {
  AlgorithmFacts f;
  if (const auto algo = test.Env("NCCL_ALGO")) {
    f.allowed = AllowedByNcclAlgo(*algo);
    if (!f.allowed.empty()) f.algorithm_from = "NCCL_ALGO=" + *algo + " in the run's environment";
  }
  f.nvls = platform.nvls;
  if (f.nvls && test.Env("NCCL_NVLS_ENABLE") == "0") {
    f.nvls = false;
    f.nvls_off_from = "NCCL_NVLS_ENABLE=0 in the run's environment";
  } else if (f.nvls && Mentions(test.transports, "NVLS multicast support is not")) {
    f.nvls = false;
    f.nvls_off_from = "NCCL's log: NVLS multicast support is not available";
  }
  ReadSharp(test, platform, options, f);
  return f;
}

bool AlgorithmAllowed(const std::string& algorithm, const AlgorithmFacts& facts) {
  if (facts.allowed.empty()) return true;
  // A band without an algorithm is NCCL's own choice, which NCCL_ALGO takes away from it.
  return !algorithm.empty() &&
         std::find(facts.allowed.begin(), facts.allowed.end(), algorithm) != facts.allowed.end();
}

bool AlgorithmPossible(const std::string& algorithm, const AlgorithmFacts& facts) {
  if (!AlgorithmAllowed(algorithm, facts)) return false;
  if ((algorithm == "NVLS" || algorithm == "NVLSTree") && !facts.nvls) return false;
  if (algorithm == "CollNet" && facts.sharp == false) return false;
  return true;
}

std::string DefaultAlgorithm(const TestEvidence& test, const Platform& platform,
                             const AlgorithmFacts& facts) {
  if (facts.sharp == true) {
    for (const Expectation& e : platform.expected) {
      if (e.InNetwork() && e.collective == test.collective && test.nodes >= e.nodes_min &&
          (!e.nodes_max || test.nodes <= *e.nodes_max)) {
        return "CollNet";
      }
    }
  }
  const CollectiveSpec* spec = nullptr;
  for (const CollectiveSpec& s : Collectives()) {
    if (s.name == test.collective) spec = &s;
  }
  if (spec == nullptr || test.nodes < 1 || test.largest_size == 0) return "";
  try {
    ModelOptions options;
    options.nodes = test.nodes;
    options.in_network_reduction = facts.sharp == true;
    if (!facts.nvls) {
      for (const NcclAlgorithm a :
           {NcclAlgorithm::kTree, NcclAlgorithm::kRing, NcclAlgorithm::kPat}) {
        options.algorithms.push_back(a);
      }
    }
    const CollectiveModel model(platform, options);
    return BandSpelling(AlgorithmName(model.Predict(spec->id, test.largest_size).algorithm));
  } catch (const std::exception&) {
    // The model cannot say for this platform or scale: the default stays unknown.
    return "";
  }
}

std::string BandName(const Expectation& band) {
  return fmt::format("{} {} (healthy from {}, {})",
                     band.algorithm.empty() ? "NCCL's default" : band.algorithm,
                     Gbs(band.typical_busbw), Gbs(band.low_busbw), band.basis);
}

}  // namespace fabricscope::check
