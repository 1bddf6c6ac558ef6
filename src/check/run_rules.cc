// Rules about the run itself and whether the platform's figures apply to it.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "check/rules.h"
#include "fabricscope/strings.h"

namespace fabricscope::check {
namespace {

const char kDescribeHint[] =
    "describe the node with --gpus-per-node N --intra-node-busbw GB/s --nics N --nic-rate Gb/s "
    "[--transport IB|RoCE|gIB|TCPX|TCPXO|EFA|TCP]";

}  // namespace

// The words that name the GPU ("H100" of "NVIDIA H100"), found in `text` as a whole token,
// so that "GH100 [H200 SXM 141GB]" names an H200 and not an H100.
bool NamesGpu(const std::string& text, const std::string& gpu_model) {
  const std::string hay = Lower(text);
  std::string key = Lower(gpu_model);
  if (key.starts_with("nvidia ")) key = key.substr(7);
  for (size_t at = hay.find(key); at != std::string::npos; at = hay.find(key, at + 1)) {
    const bool start = at == 0 || std::isalnum(static_cast<unsigned char>(hay[at - 1])) == 0;
    const size_t end = at + key.size();
    const bool stop = end == hay.size() || std::isalnum(static_cast<unsigned char>(hay[end])) == 0;
    if (start && stop) return true;
  }
  return false;
}

std::optional<Finding> CorrectnessRule(const RuleContext& c) {
  const TestEvidence& t = c.test;
  Finding f;
  if (!t.run_errors.empty()) {
    f.severity = Severity::kCritical;
    f.what = "the run reported: " + t.run_errors.front() +
             (t.run_errors.size() > 1 ? fmt::format(" (and {} more)", t.run_errors.size() - 1)
                                      : std::string());
    return f;
  }
  if ((t.wrong && *t.wrong > 0) || t.out_of_bounds > 0) {
    f.severity = Severity::kCritical;
    f.what = fmt::format(
        "{} wrong elements in {} results (size x placement): the collective returned corrupt "
        "data, so its speed does not matter; run fabricscope doctor on the nodes",
        t.wrong.value_or(0), t.out_of_bounds);
    f.figures["wrong"] = static_cast<double>(t.wrong.value_or(0));
    return f;
  }
  if (!t.wrong) return std::nullopt;  // not validated (-c 0): nothing to say either way
  f.severity = Severity::kOk;
  f.what = "every result validated: 0 wrong elements";
  f.figures["wrong"] = 0;
  return f;
}

std::optional<Finding> PlatformRule(const RuleContext& c) {
  Finding f;
  f.severity = Severity::kWarn;
  if (!c.choice.platform) {
    f.what = "not judged: " + c.choice.unavailable + ". Give --platform NAME (" +
             c.known_platforms + ") or " + kDescribeHint;
    return f;
  }
  if (c.test.host_memory && !c.choice.generic()) {
    f.what = fmt::format(
        "not judged: measured on host memory ({}), and {}'s figures are those of its GPUs "
        "and NICs; to judge a host-memory run, {} (ranks per node as GPUs, --transport TCP)",
        c.test.backend.empty() ? c.test.device_name : "backend " + c.test.backend,
        c.choice.platform->name, kDescribeHint);
    return f;
  }
  return std::nullopt;
}

std::optional<Finding> GpuModelRule(const RuleContext& c) {
  if (!PlatformApplies(c.test, c.choice) || c.choice.generic() || c.test.host_memory) {
    return std::nullopt;
  }
  const Platform& p = *c.choice.platform;
  const std::string& device = c.test.device_name;
  if (device.empty()) return std::nullopt;
  Finding f;
  if (NamesGpu(device, p.gpu_model)) {
    f.severity = Severity::kOk;
    f.what = "measured on " + device + ", the GPU of " + p.name;
    return f;
  }
  if (p.KnownAsDevice(device)) {
    f.severity = Severity::kOk;
    f.what = "measured on '" + device + "', the name " + p.name + "'s " + p.gpu_model +
             " shows in published logs (" + p.device_names_source + ")";
    return f;
  }
  f.severity = Severity::kWarn;
  f.what = "measured on " + device + ", but " + p.name + " has " + p.gpu_model +
           ": the figures may not apply; check --platform";
  return f;
}

std::optional<Finding> RanksPerNodeRule(const RuleContext& c) {
  if (!PlatformApplies(c.test, c.choice)) return std::nullopt;
  const int per_node = c.test.ranks_per_node();
  const int gpus = c.choice.platform->gpus_per_node;
  if (per_node <= 0 || per_node >= gpus) return std::nullopt;
  Finding f;
  f.severity = Severity::kWarn;
  f.what = fmt::format(
      "{} ranks on {} node{} use {} of the {} GPUs of a node: the expected figures assume all "
      "of them (fewer GPUs drive fewer NICs and NVLinks)",
      c.test.ranks, c.test.nodes, c.test.nodes == 1 ? "" : "s", per_node, gpus);
  f.figures["ranks_per_node"] = per_node;
  return f;
}

}  // namespace fabricscope::check
