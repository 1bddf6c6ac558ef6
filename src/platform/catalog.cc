#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/platform.h"
#include "fabricscope/strings.h"
#include "platform/embedded_data.h"

namespace fabricscope {
namespace {

using nlohmann::json;

// Reads fields of one JSON object, naming the document and the path of a bad field.
class FieldReader {
 public:
  FieldReader(const json& object, std::string origin, std::string path)
      : object_(object), origin_(std::move(origin)), path_(std::move(path)) {
    if (!object_.is_object()) Fail(path_, "must be an object");
  }

  template <typename T>
  T Required(const std::string& key) const {
    if (!object_.contains(key)) Fail(Path(key), "is missing");
    return Convert<T>(key);
  }

  template <typename T>
  T Optional(const std::string& key, T fallback) const {
    if (!object_.contains(key) || object_.at(key).is_null()) return fallback;
    return Convert<T>(key);
  }

  template <typename T>
  std::optional<T> Maybe(const std::string& key) const {
    if (!object_.contains(key) || object_.at(key).is_null()) return std::nullopt;
    return Convert<T>(key);
  }

  // Each element of the array `key` (absent: none) read by `read`.
  template <typename F>
  void ForEach(const std::string& key, F read) const {
    if (!object_.contains(key)) return;
    const json& array = object_.at(key);
    if (!array.is_array()) Fail(Path(key), "must be an array");
    for (size_t i = 0; i < array.size(); ++i) {
      read(FieldReader(array[i], origin_, Path(key) + "[" + std::to_string(i) + "]"));
    }
  }

  FieldReader Object(const std::string& key) const {
    if (!object_.contains(key)) Fail(Path(key), "is missing");
    return FieldReader(object_.at(key), origin_, Path(key));
  }

  [[noreturn]] void Fail(const std::string& path, const std::string& what) const {
    throw UsageError("platform catalog " + origin_ + ": field '" + path + "' " + what +
                     " (see docs/catalog.md for the format)");
  }

 private:
  std::string Path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  template <typename T>
  T Convert(const std::string& key) const {
    const json& value = object_.at(key);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // nlohmann converts a float to an integer with a cast, undefined beyond the type's
      // range (1e300 as a count; found by tests/fuzz/platform_json_fuzz): a whole number in
      // range, or refused.
      if (value.is_number_float()) {
        const double d = value.get<double>();
        if (!(d >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
              d <= static_cast<double>(std::numeric_limits<T>::max())) ||
            d != std::floor(d)) {
          Fail(Path(key), "must be a whole number from " +
                              std::to_string(std::numeric_limits<T>::lowest()) + " to " +
                              std::to_string(std::numeric_limits<T>::max()));
        }
      }
    }
    try {
      return value.get<T>();
    } catch (const json::exception&) {
      Fail(Path(key), std::string("has the wrong type (") + object_.at(key).type_name() + ")");
    }
  }

  const json& object_;
  std::string origin_;
  std::string path_;
};

void RequirePositive(const FieldReader& r, const std::string& path, double value) {
  if (!(value > 0)) r.Fail(path, "must be positive");
}

// The number `text` prints, read as a C locale double ("1,600" -> 1600); empty when none.
std::optional<double> NumberOf(const std::string& text) {
  std::string digits;
  for (char c : text) {
    if (c != ',') digits += c;
  }
  try {
    size_t used = 0;
    const double value = std::stod(digits, &used);
    if (used == digits.size()) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// A measured figure carries its source's words: the quote, and the number as printed there,
// which must be in the quote and equal the figure to the catalog's one decimal.
void CheckMeasured(const FieldReader& r, const Expectation& e) {
  if (e.quote.empty()) r.Fail("quote", "is empty: a measured figure quotes its source's words");
  if (e.quote_value.empty() || e.quote.find(e.quote_value) == std::string::npos) {
    r.Fail("quote_value", "'" + e.quote_value + "' is not in the quote '" + e.quote + "'");
  }
  const std::optional<double> value = NumberOf(e.quote_value);
  if (!value || std::fabs(*value - e.typical_busbw) > 0.05 + 1e-9) {
    r.Fail("typical_busbw", fmt::format("is {:g}, but the quote says {}: a measured figure is the "
                                        "number its source prints (to one decimal)",
                                        e.typical_busbw, e.quote_value));
  }
  if (e.source.find("http") == std::string::npos && e.source.find('#') == std::string::npos) {
    r.Fail("source", "names no URL or issue number: a measured figure says where it was printed");
  }
}

Expectation ReadExpectation(const FieldReader& r) {
  Expectation e;
  e.collective = r.Required<std::string>("collective");
  e.nodes_min = r.Required<int>("nodes_min");
  e.nodes_max = r.Maybe<int>("nodes_max");
  e.min_size = r.Optional<size_t>("min_size", 0);
  e.typical_busbw = r.Required<double>("typical_busbw");
  e.low_busbw = r.Required<double>("low_busbw");
  e.algorithm = r.Optional<std::string>("algorithm", "");
  e.basis = r.Required<std::string>("basis");
  e.source = r.Required<std::string>("source");
  e.quote = r.Optional<std::string>("quote", "");
  e.quote_value = r.Optional<std::string>("quote_value", "");
  e.formula = r.Optional<std::string>("formula", "");
  e.settle = r.Optional<std::string>("settle", "");
  e.date = r.Optional<std::string>("date", "");
  RequirePositive(r, "typical_busbw", e.typical_busbw);
  if (e.low_busbw > e.typical_busbw) r.Fail("low_busbw", "is above typical_busbw");
  if (e.nodes_min < 1) r.Fail("nodes_min", "must be at least 1");
  const auto& algorithms = BandAlgorithms();
  if (!e.algorithm.empty() &&
      std::find(algorithms.begin(), algorithms.end(), e.algorithm) == algorithms.end()) {
    r.Fail("algorithm", "is '" + e.algorithm + "': use " + Joined(algorithms) +
                            ", or leave it out when the source does not name it");
  }
  if (e.source.empty()) r.Fail("source", "is empty: every figure needs its source");
  if (e.basis == "measured") {
    CheckMeasured(r, e);
  } else if (e.basis == "derived") {
    if (e.formula.empty()) r.Fail("formula", "is empty: a derived figure shows its formula");
  } else if (e.basis == "assumed") {
    if (e.settle.empty()) r.Fail("settle", "is empty: an assumed figure says what would settle it");
  } else {
    r.Fail("basis", "must be \"measured\", \"derived\" or \"assumed\"");
  }
  return e;
}

// A NIC total a provider states in one number ("1,600 Gbps"): the quote must print it, and the
// NICs times their rate must make it, so a NIC count read elsewhere cannot drift from the page.
void ReadNicTotal(const FieldReader& net, Platform& p) {
  p.nic_total_gbps = net.Maybe<double>("total_gbps");
  p.nic_total_quote = net.Optional<std::string>("total_quote", "");
  p.nic_total_source = net.Optional<std::string>("total_source", "");
  if (!p.nic_total_gbps) return;
  if (std::fabs(*p.nic_total_gbps - p.nics * p.nic_rate_gbps) > 0.5) {
    net.Fail("network.total_gbps", fmt::format("is {:g}, but nics x nic_rate_gbps is {:g}",
                                               *p.nic_total_gbps, p.nics * p.nic_rate_gbps));
  }
  bool printed =
      p.nic_total_quote.find(fmt::format("{:g}", *p.nic_total_gbps)) != std::string::npos;
  const long whole = std::lround(*p.nic_total_gbps);
  const std::string grouped =
      whole >= 1000 ? fmt::format("{},{:03}", whole / 1000, whole % 1000) : std::to_string(whole);
  printed = printed || p.nic_total_quote.find(grouped) != std::string::npos;
  if (!printed) {
    net.Fail("network.total_quote",
             fmt::format("does not print the total {:g} Gb/s", *p.nic_total_gbps));
  }
  if (p.nic_total_source.find("http") == std::string::npos) {
    net.Fail("network.total_source", "names no URL: say which page states the total");
  }
}

// The GPUs of a node and what joins them; an MNNVL platform also names its NVLink domain
// (GPUs in it, a multiple of the GPUs a node) and the ring busbw across the domain's nodes.
void ReadGpu(const FieldReader& gpu, Platform& p) {
  p.gpu_model = gpu.Required<std::string>("model");
  p.gpus_per_node = gpu.Required<int>("per_node");
  p.nvlink_per_direction_gbs = gpu.Optional<double>("nvlink_per_direction_gbs", 0);
  p.intra_node_ring_busbw = gpu.Required<double>("intra_node_ring_busbw");
  p.intra_node_source = gpu.Required<std::string>("intra_node_source");
  RequirePositive(gpu, "gpu.per_node", p.gpus_per_node);
  RequirePositive(gpu, "gpu.intra_node_ring_busbw", p.intra_node_ring_busbw);
  if (p.intra_node_source.empty()) {
    gpu.Fail("gpu.intra_node_source", "is empty: every figure needs its source");
  }
  p.hardware_source = gpu.Optional<std::string>("hardware_source", "");
  p.device_names = gpu.Optional<std::vector<std::string>>("device_names", {});
  p.device_names_source = gpu.Optional<std::string>("device_names_source", "");
  if (!p.device_names.empty() && p.device_names_source.empty()) {
    gpu.Fail("gpu.device_names_source",
             "is empty: say which published log shows the GPU under these names");
  }
  p.nvls = gpu.Optional<bool>("nvls", false);
  p.intra_fabric = gpu.Optional<std::string>("fabric", "NVSwitch");
  static const std::vector<std::string> kFabrics = {"NVSwitch", "NVLink", "XGMI", "PCIe", "MNNVL"};
  if (std::find(kFabrics.begin(), kFabrics.end(), p.intra_fabric) == kFabrics.end()) {
    gpu.Fail("gpu.fabric",
             "is '" + p.intra_fabric + "': use NVSwitch, NVLink, XGMI, PCIe or MNNVL");
  }
  p.nvlink_domain_gpus = gpu.Optional<int>("nvlink_domain_gpus", p.gpus_per_node);
  if (!p.Mnnvl()) {
    if (p.nvlink_domain_gpus != p.gpus_per_node) {
      gpu.Fail("gpu.nvlink_domain_gpus",
               "differs from gpu.per_node, which only a multi-node NVLink domain can: set "
               "gpu.fabric to \"MNNVL\"");
    }
    return;
  }
  if (p.nvlink_domain_gpus <= p.gpus_per_node || p.nvlink_domain_gpus % p.gpus_per_node != 0) {
    gpu.Fail("gpu.nvlink_domain_gpus",
             "must be a multiple of gpu.per_node above it for an MNNVL platform (72 GPUs a "
             "domain, 4 a node on an NVL72 rack)");
  }
  p.domain_ring_busbw = gpu.Required<double>("domain_ring_busbw");
  p.domain_source = gpu.Required<std::string>("domain_source");
  RequirePositive(gpu, "gpu.domain_ring_busbw", p.domain_ring_busbw);
  if (p.domain_source.empty()) {
    gpu.Fail("gpu.domain_source", "is empty: every figure needs its source");
  }
}

}  // namespace

int BasisRank(const std::string& basis) {
  if (basis == "measured") return 0;
  if (basis == "derived") return 1;
  return 2;
}

const std::vector<std::string>& BandAlgorithms() {
  static const std::vector<std::string> kAlgorithms = {"Ring",     "Tree",    "NVLS",
                                                       "NVLSTree", "CollNet", "PAT"};
  return kAlgorithms;
}

bool Expectation::Covers(const std::string& coll, int nodes, size_t size) const {
  return coll == collective && nodes >= nodes_min && (!nodes_max || nodes <= *nodes_max) &&
         size >= min_size;
}

bool Platform::KnownAsDevice(const std::string& device) const {
  const auto same = [&](const std::string& known) { return EqualsIgnoreCase(known, device); };
  return !device.empty() && std::any_of(device_names.begin(), device_names.end(), same);
}

std::optional<Expectation> Platform::ExpectationFor(const std::string& collective, int nodes,
                                                    size_t size) const {
  // A measured figure beats a derived one, a derived one an assumed one; among equals the first
  // listed wins.
  std::optional<Expectation> best;
  for (const Expectation& e : expected) {
    if (!e.Covers(collective, nodes, size)) continue;
    if (!best || BasisRank(e.basis) < BasisRank(best->basis)) best = e;
  }
  return best;
}

Platform Catalog::ParsePlatform(const std::string& json_text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double ("1E9999"): found
    // by tests/fuzz/platform_json_fuzz.
    throw UsageError("platform catalog " + origin + ": not valid JSON (" + e.what() + ")");
  }
  const FieldReader r(doc, origin, "");
  Platform p;
  p.name = r.Required<std::string>("name");
  p.aliases = r.Optional<std::vector<std::string>>("aliases", {});
  p.vendor = r.Optional<std::string>("vendor", "");
  p.description = r.Optional<std::string>("description", "");
  ReadGpu(r.Object("gpu"), p);
  const FieldReader net = r.Object("network");
  p.nics = net.Required<int>("nics");
  p.nic_rate_gbps = net.Required<double>("nic_rate_gbps");
  p.nic_model = net.Optional<std::string>("nic_model", "");
  p.transport = net.Required<std::string>("transport");
  p.latency_floor_us = net.Maybe<double>("latency_floor_us");
  p.latency_source = net.Optional<std::string>("latency_source", "");
  p.network_source = net.Optional<std::string>("source", "");
  RequirePositive(net, "network.nics", p.nics);
  RequirePositive(net, "network.nic_rate_gbps", p.nic_rate_gbps);
  static const std::vector<std::string> kTransports = {"IB",    "RoCE", "gIB", "TCPX",
                                                       "TCPXO", "EFA",  "TCP"};
  if (std::find(kTransports.begin(), kTransports.end(), p.transport) == kTransports.end()) {
    net.Fail("network.transport",
             "is '" + p.transport + "': use IB, RoCE, gIB, TCPX, TCPXO, EFA or TCP");
  }
  ReadNicTotal(net, p);
  p.sharp = net.Optional<std::string>("sharp", "none");
  if (p.sharp != "none" && p.sharp != "fabric") {
    net.Fail("network.sharp", "is '" + p.sharp + "': use \"none\" or \"fabric\"");
  }
  if (p.sharp == "fabric" && p.transport != "IB") {
    net.Fail("network.sharp", "is \"fabric\" on " + p.transport +
                                  ": in-network reduction (SHARP) needs InfiniBand switches");
  }
  r.ForEach("nccl_env", [&](const FieldReader& e) {
    p.nccl_env.push_back({e.Required<std::string>("name"), e.Required<std::string>("value"),
                          e.Optional<std::string>("why", "")});
  });
  if (doc.contains("detect")) {
    const FieldReader d = r.Object("detect");
    p.detect.dmi_product_names = d.Optional<std::vector<std::string>>("dmi_product_names", {});
    p.detect.dmi_sys_vendor = d.Optional<std::string>("dmi_sys_vendor", "");
  }
  r.ForEach("expected", [&](const FieldReader& e) { p.expected.push_back(ReadExpectation(e)); });
  r.ForEach("published", [&](const FieldReader& e) {
    p.published.push_back({e.Required<std::string>("collective"), e.Required<int>("nodes"),
                           e.Required<size_t>("size"), e.Required<double>("busbw"),
                           e.Optional<std::string>("placement", ""),
                           e.Optional<std::string>("algorithm", ""),
                           e.Required<std::string>("source")});
    if (p.published.back().source.empty())
      e.Fail("source", "is empty: every figure needs its source");
  });
  if (doc.contains("without_gpudirect")) {
    const FieldReader w = r.Object("without_gpudirect");
    p.without_gpudirect_busbw = w.Required<double>("busbw");
    p.without_gpudirect_source = w.Required<std::string>("source");
  }
  return p;
}

Catalog Catalog::Builtin() {
  Catalog catalog;
  for (const auto& file : detail::PlatformDocuments()) {
    catalog.Add(ParsePlatform(std::string(file.text), "data/platforms/" + std::string(file.name)));
  }
  return catalog;
}

void Catalog::Add(Platform platform) {
  std::vector<std::string> names = platform.aliases;
  names.push_back(platform.name);
  for (const std::string& n : names) {
    if (Find(n) != nullptr) {
      throw UsageError("platform catalog: the name '" + n + "' of platform '" + platform.name +
                       "' is already taken by '" + Find(n)->name + "'");
    }
  }
  platforms_.push_back(std::move(platform));
}

const Platform* Catalog::Find(const std::string& name) const {
  const std::string wanted = Lower(name);
  for (const Platform& p : platforms_) {
    if (Lower(p.name) == wanted) return &p;
    for (const std::string& alias : p.aliases) {
      if (Lower(alias) == wanted) return &p;
    }
  }
  return nullptr;
}

const Platform& Catalog::Get(const std::string& name) const {
  if (const Platform* p = Find(name)) return *p;
  throw UsageError("unknown platform '" + name + "'; known platforms: " + Joined(Names()) +
                   " (or describe one with --gpus-per-node, --intra-node-busbw, --nics, "
                   "--nic-rate)");
}

std::vector<std::string> Catalog::Names() const {
  std::vector<std::string> names;
  for (const Platform& p : platforms_) names.push_back(p.name);
  return names;
}

Platform GenericPlatform(const GenericPlatformOptions& o) {
  auto require = [](double value, const char* flag, const char* what) {
    if (!(value > 0)) {
      throw UsageError(std::string("a generic platform needs ") + flag + " (" + what +
                       "), a positive number");
    }
  };
  require(o.gpus_per_node, "--gpus-per-node", "GPUs in one node");
  require(o.intra_node_busbw, "--intra-node-busbw", "GB/s of a healthy single-node ring");
  require(o.nics, "--nics", "GPU-fabric NICs per node");
  require(o.nic_rate_gbps, "--nic-rate", "line rate of one NIC in Gb/s");
  if (!(o.ring_efficiency > 0 && o.ring_efficiency <= 1)) {
    throw UsageError(
        "--ring-efficiency must be in (0, 1], the fraction of line rate a healthy "
        "ring reaches (0.9 for InfiniBand and RoCE)");
  }
  Platform p;
  p.name = "generic";
  p.description = std::to_string(o.gpus_per_node) + " GPUs, " + std::to_string(o.nics) + " x " +
                  std::to_string(static_cast<int>(o.nic_rate_gbps)) + " Gb/s " + o.transport;
  p.gpu_model = "unspecified";
  p.gpus_per_node = o.gpus_per_node;
  p.intra_node_ring_busbw = o.intra_node_busbw;
  p.intra_node_source = "command line";
  p.nics = o.nics;
  p.nic_rate_gbps = o.nic_rate_gbps;
  p.transport = o.transport;
  p.latency_floor_us = o.latency_floor_us;
  p.latency_source = o.latency_floor_us ? "command line" : "";
  const double ring = std::min(p.intra_node_ring_busbw, p.NicTotalGBs() * o.ring_efficiency);
  const auto band = [&](const char* coll, int nodes_min, std::optional<int> nodes_max,
                        double typical, std::string source, std::string formula) {
    Expectation e;
    e.collective = coll;
    e.nodes_min = nodes_min;
    e.nodes_max = nodes_max;
    e.min_size = size_t{1} << 30;
    e.typical_busbw = typical;
    e.low_busbw = 0.85 * typical;
    e.algorithm = "Ring";
    e.basis = "derived";
    e.source = std::move(source);
    e.formula = std::move(formula);
    return e;
  };
  for (const char* coll : {"all_reduce", "all_gather", "reduce_scatter"}) {
    p.expected.push_back(band(coll, 1, 1, p.intra_node_ring_busbw,
                              "command line: --intra-node-busbw",
                              "--intra-node-busbw; healthy from 85% of it"));
    p.expected.push_back(
        band(coll, 2, std::nullopt, ring,
             "command line: min(intra-node busbw, NICs x rate / 8 x ring efficiency)",
             fmt::format("min({:g}, {} x {:g} Gb/s / 8 x {:g})", p.intra_node_ring_busbw, p.nics,
                         p.nic_rate_gbps, o.ring_efficiency)));
  }
  return p;
}

}  // namespace fabricscope
