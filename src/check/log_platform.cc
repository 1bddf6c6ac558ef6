// The platform a log ran on, read from the log itself: its device lines (GPU model, ranks,
// hosts), NCCL's network lines (NICs, their rate and transport), NVLS and MNNVL lines and
// the versions; matched to the catalog, else a generic platform built from what it says.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "check/rules.h"
#include "fabricscope/check.h"
#include "fabricscope/collective.h"
#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/paste.h"
#include "fabricscope/statistics.h"
#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

// What the logs say, each fact with the line it came from.
struct LogFacts {
  std::string gpu_model;
  int gpus_per_node = 0;
  int ranks = 0;
  int nodes = 0;
  int nics = 0;
  double nic_rate_gbps = 0;
  std::string transport;  // IB, RoCE, EFA, TCPX, TCPXO, TCP ("NET/Socket")
  bool nvls = false;
  bool mnnvl = false;
  int nvlink_domain = 0;  // MNNVL clique size, when printed
  std::vector<std::string> evidence;
};

// "file:12: NET/IB : Using ..." -> ("file:12", "NET/IB : Using ...").
std::pair<std::string_view, std::string_view> SplitWhere(std::string_view line) {
  const size_t at = line.find(": ");
  if (at == std::string_view::npos) return {{}, line};
  return {line.substr(0, at), line.substr(at + 2)};
}

// "[0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:..." -> 2: the devices NCCL uses.
int CountDevices(std::string_view text) {
  text = text.substr(0, text.find(';'));
  int count = 0;
  for (size_t at = text.find('['); at != std::string_view::npos; at = text.find('[', at + 1)) {
    if (at + 1 < text.size() && text[at + 1] >= '0' && text[at + 1] <= '9') ++count;
  }
  return count;
}

// The integer after `key` ("speed=" -> 400000), or -1.
long NumberAfter(std::string_view text, std::string_view key) {
  const size_t at = text.find(key);
  if (at == std::string_view::npos) return -1;
  const std::string_view rest = text.substr(at + key.size());
  const std::string_view digits = rest.substr(0, rest.find_first_not_of("0123456789"));
  // A digit string too long for a long is no figure a log states: read as none.
  return ToNumber<long>(digits).value_or(-1);
}

bool Has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The plugin or transport a NET line names, strongest first: a fabric plugin beats the
// socket fallback that NCCL also lists.
struct NetKind {
  std::string_view mark;
  std::string_view transport;
};
constexpr NetKind kNetKinds[] = {
    {"FasTrak", "TCPXO"},      {"GPUDirectTCPXO", "TCPXO"},
    {"GPUDirectTCPX", "TCPX"}, {"NET/OFI", "EFA"},
    {"Libfabric", "EFA"},      {"NET/gIB", "gIB"},
    {"/RoCE", "RoCE"},         {"NET/IB", "IB"},
    {"NET/Socket", "TCP"},
};

int Strength(const std::string& transport) {
  int rank = 0;
  for (const NetKind& kind : kNetKinds) {
    if (kind.transport == transport) return static_cast<int>(std::size(kNetKinds)) - rank;
    ++rank;
  }
  return 0;
}

void ReadNetLine(std::string_view where, std::string_view text, LogFacts& f) {
  for (const NetKind& kind : kNetKinds) {
    if (!Has(text, kind.mark)) continue;
    const std::string transport(kind.transport);
    if (Strength(transport) > Strength(f.transport)) {
      f.transport = transport;
      f.evidence.push_back(fmt::format("transport {}: {} ({})", transport, text, where));
    }
    break;
  }
  if (Has(text, " Using [") && !Has(text, "NET/Socket")) {
    const int devices = CountDevices(text.substr(text.find(" Using [") + 7));
    if (devices > f.nics) {
      f.nics = devices;
      f.evidence.push_back(fmt::format("{} NICs: {} ({})", devices, text, where));
    }
  }
  // NCCL 2.19 and later: "NET/IB : [0] mlx5_0:uverbs0:1/IB provider=Mlx5 speed=400000 ...".
  if (const long speed = NumberAfter(text, "speed="); speed > 0 && f.nic_rate_gbps == 0) {
    f.nic_rate_gbps = static_cast<double>(speed) / 1000.0;
    f.evidence.push_back(fmt::format("NIC rate {:g} Gb/s: {} ({})", f.nic_rate_gbps, text, where));
  }
  // aws-ofi-nccl: "NET/OFI Selected Provider is efa, fabric is efa-direct (found 16 nics)".
  if (const long found = NumberAfter(text, "(found "); found > f.nics) {
    f.nics = static_cast<int>(found);
    f.evidence.push_back(fmt::format("{} NICs: {} ({})", found, text, where));
  }
}

void ReadNvlLine(std::string_view where, std::string_view text, LogFacts& f) {
  if (Has(text, "MNNVL")) {
    const long enabled = NumberAfter(text, "MNNVL ");
    if (enabled != 0 && !f.mnnvl) {
      f.mnnvl = true;
      f.evidence.push_back(fmt::format("multi-node NVLink (MNNVL): {} ({})", text, where));
    }
    if (const long clique = NumberAfter(text, "cliqueSize "); clique > 0) {
      f.nvlink_domain = static_cast<int>(clique);
    }
  } else if (Has(text, "NVLS") && !f.nvls && !Has(text, "NVLS multicast support is not")) {
    f.nvls = true;
    f.evidence.push_back(fmt::format("NVLink SHARP (NVLS): {} ({})", text, where));
  }
}

void ReadDevices(const RunResult& run, LogFacts& f) {
  if (run.ranks.empty()) return;
  std::map<std::string, int> models;
  std::map<std::string, int> per_host;
  int highest_device = 0;
  for (const RankInfo& r : run.ranks) {
    ++models[r.device_name];
    ++per_host[r.hostname];
    highest_device = std::max(highest_device, r.device);
  }
  const auto most =
      std::max_element(models.begin(), models.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string where = run.platform_lines.empty()
                                ? run.source
                                : std::string(SplitWhere(run.platform_lines[0]).first);
  const int ranks = run.nranks > 0 ? run.nranks : static_cast<int>(run.ranks.size());
  const bool complete = static_cast<int>(run.ranks.size()) >= ranks;
  int per_node = highest_device + 1;
  if (complete) {
    for (const auto& [host, count] : per_host) per_node = std::max(per_node, count);
  }
  if (f.gpu_model.empty() && !most->first.empty() && !most->first.starts_with("host memory")) {
    f.gpu_model = most->first;
    f.evidence.push_back(fmt::format("GPU '{}' on {} of {} device lines ({})", f.gpu_model,
                                     most->second, run.ranks.size(), where));
  }
  if (f.gpus_per_node == 0) {
    f.gpus_per_node = per_node;
    f.ranks = ranks;
    f.nodes = complete ? static_cast<int>(per_host.size()) : (ranks + per_node - 1) / per_node;
    f.evidence.push_back(
        complete ? fmt::format("{} ranks on {} host{}, {} GPUs per node ({})", ranks, f.nodes,
                               f.nodes == 1 ? "" : "s", per_node, where)
                 : fmt::format("{} ranks (the highest rank index + 1; the device list shows {}), "
                               "{} GPUs per node (the highest device index + 1), so {} nodes ({})",
                               ranks, run.ranks.size(), per_node, f.nodes, where));
  }
}

// The rank count against busbw / algbw, nccl-tests' factor of the collective on that many
// ranks (2(n-1)/n for all_reduce): a device list that lies (cut, merged from two jobs) shows.
void CrossCheckRanks(const RunResult& run, LogFacts& f, std::vector<std::string>& notes) {
  const int ranks = run.nranks > 0 ? run.nranks : static_cast<int>(run.ranks.size());
  if (ranks < 2 || run.rows.empty()) return;
  const CollectiveSpec* spec = nullptr;
  for (const CollectiveSpec& c : Collectives()) {
    if (c.name == run.rows.front().collective) spec = &c;
  }
  if (spec == nullptr || spec->bus_factor(2) == spec->bus_factor(3)) return;
  std::vector<double> factors;
  for (const ResultRow& row : run.rows) {
    if (row.collective != spec->name) continue;
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      // Two printed decimals: only rows whose algbw has three or more digits tell n apart.
      if (half->has_value() && (*half)->algbw >= 100)
        factors.push_back((*half)->busbw / (*half)->algbw);
    }
  }
  if (factors.empty()) return;
  const double seen = Median(std::move(factors));
  const double expected = spec->bus_factor(ranks);
  if (std::abs(seen - expected) <= 0.002 * expected) {
    f.evidence.push_back(fmt::format("busbw / algbw = {:.4f}, {}'s factor on {} ranks ({})", seen,
                                     spec->name, ranks, run.source));
    return;
  }
  notes.push_back(fmt::format(
      "busbw / algbw = {:.4f} in the rows, but {} on {} ranks has a factor of {:.4f}: the device "
      "lines and the table disagree on the rank count ({})",
      seen, spec->name, ranks, expected, run.source));
}

LogFacts ReadFacts(const std::vector<RunResult>& runs) {
  LogFacts f;
  for (const RunResult& run : runs) {
    ReadDevices(run, f);
    for (const std::string& line : run.platform_lines) {
      const auto [where, text] = SplitWhere(line);
      if (text.starts_with("NET/") || text.starts_with("Using network"))
        ReadNetLine(where, text, f);
      if (Has(text, "NVLS") || Has(text, "MNNVL")) ReadNvlLine(where, text, f);
    }
  }
  for (const RunResult& run : runs) {
    if (!run.version.empty() || !run.backend_version.empty()) {
      std::vector<std::string> versions;
      if (!run.version.empty()) versions.push_back(run.tool + " " + run.version);
      if (!run.backend_version.empty()) versions.push_back(run.backend + " " + run.backend_version);
      f.evidence.push_back(fmt::format("versions: {} ({})", Joined(versions), run.source));
      break;
    }
  }
  return f;
}

// Why the log's GPU is not the platform's; empty when it is. A name from the platform's
// device_names ("NVIDIA Graphics Device") fits several GPUs, so it counts only for a whole
// node of them: exactly the platform's GPUs a node.
std::string GpuMisfit(const Platform& p, const LogFacts& f) {
  if (check::NamesGpu(f.gpu_model, p.gpu_model)) return {};
  if (!p.KnownAsDevice(f.gpu_model)) return "GPU " + p.gpu_model;
  if (f.gpus_per_node != p.gpus_per_node) {
    return fmt::format("{} GPUs per node for a GPU named '{}'", p.gpus_per_node, f.gpu_model);
  }
  return {};
}

// Why a catalog platform does not fit the facts; empty when it does.
std::string Misfit(const Platform& p, const LogFacts& f) {
  if (std::string why = GpuMisfit(p, f); !why.empty()) return why;
  // Fewer ranks a node than GPUs is a run on part of the node (the ranks-per-node rule says
  // so); more cannot be this platform.
  if (f.gpus_per_node > p.gpus_per_node) {
    return fmt::format("{} GPUs per node", p.gpus_per_node);
  }
  // A socket transport on a fabric platform is a symptom for the transport rule to name, not
  // a reason to judge against another platform.
  // gIB is Google's plugin over RoCE NICs: a plain RoCE log fits a gIB platform too.
  const bool rides_roce = f.transport == "RoCE" && p.transport == "gIB";
  if (!f.transport.empty() && f.transport != "TCP" && f.transport != p.transport && !rides_roce) {
    return "transport " + p.transport;
  }
  if (f.nics > 0 && f.nics != p.nics) return fmt::format("{} NICs", p.nics);
  // NCCL found a multi-node NVLink clique: only a platform whose NVLink spans nodes has one.
  if (f.mnnvl && !p.Mnnvl()) return "no multi-node NVLink";
  if (f.nic_rate_gbps > 0 && f.nic_rate_gbps != p.nic_rate_gbps) {
    return fmt::format("{:g} Gb/s NICs", p.nic_rate_gbps);
  }
  return {};
}

// A platform from the facts alone: the NICs the log names and that GPU's intra-node figure
// from a catalog platform that has it.
std::optional<Platform> FromFacts(const Catalog& catalog, const LogFacts& f, PlatformChoice& c) {
  const Platform* same_gpu = nullptr;
  for (const Platform& p : catalog.platforms()) {
    if (check::NamesGpu(f.gpu_model, p.gpu_model) && p.intra_node_ring_busbw > 0) {
      same_gpu = &p;
      break;
    }
  }
  std::vector<std::string> missing;
  if (same_gpu == nullptr)
    missing.push_back("no catalog platform has this GPU's intra-node figure");
  if (f.nics == 0) missing.push_back("no NCCL line names the NICs ('NET/IB : Using [0]mlx5_0...')");
  if (f.nic_rate_gbps == 0) missing.push_back("no NCCL line gives their rate ('speed=400000')");
  if (!missing.empty()) {
    c.unavailable = "the log names " + f.gpu_model + " but fits no catalog platform, and " +
                    fmt::format("{}", fmt::join(missing, "; "));
    return std::nullopt;
  }
  GenericPlatformOptions options;
  options.gpus_per_node = f.gpus_per_node > 0 ? f.gpus_per_node : same_gpu->gpus_per_node;
  options.intra_node_busbw = same_gpu->intra_node_ring_busbw;
  options.nics = f.nics;
  options.nic_rate_gbps = f.nic_rate_gbps;
  options.transport = f.transport == "TCP" || f.transport.empty() ? "IB" : f.transport;
  Platform p = GenericPlatform(options);
  p.name = "from-log";
  p.gpu_model = f.gpu_model;
  p.intra_node_source = same_gpu->name + "'s: " + same_gpu->intra_node_source;
  for (Expectation& e : p.expected) {
    e.source = e.nodes_max == 1
                   ? "the intra-node ring figure of " + same_gpu->name + " (same GPU)"
                   : fmt::format(
                         "the log's NICs: min({:g} GB/s intra-node, {} x {:g} Gb/s / 8 x "
                         "ring efficiency {:g})",
                         options.intra_node_busbw, options.nics, options.nic_rate_gbps,
                         options.ring_efficiency);
  }
  c.notes.push_back("no catalog platform fits the log (" + f.gpu_model +
                    "): judged against a generic platform built from what it says");
  return p;
}

// A device name that is no model ("NVIDIA Graphics Device": the driver had no name for the
// GPU) is decided only when the platforms it fits all have one GPU model; the facts say either
// way. Returns false when it is not decided (choice.unavailable says why).
bool DecideDeviceName(const Catalog& catalog, const std::vector<const Platform*>& fits,
                      const LogFacts& f, PlatformChoice& choice) {
  std::vector<const Platform*> knowing;
  for (const Platform& p : catalog.platforms()) {
    if (check::NamesGpu(f.gpu_model, p.gpu_model)) return true;  // a model name after all
    if (p.KnownAsDevice(f.gpu_model)) knowing.push_back(&p);
  }
  if (knowing.empty()) return true;
  std::set<std::string> models;
  std::vector<std::string> names;
  for (const Platform* p : fits) {
    models.insert(p->gpu_model);
    names.push_back(p->name);
  }
  const std::string what = fmt::format(
      "GPU '{}' is the name a driver prints for a GPU it has no name for; {} show{} it so in "
      "published logs ({})",
      f.gpu_model, knowing.front()->gpu_model, knowing.size() == 1 ? "s" : "",
      knowing.front()->device_names_source);
  if (models.size() == 1) {
    choice.evidence.push_back(fmt::format(
        "{}: taken as {}, as the log's other facts ({} GPUs per node{}{}) fit {} and no other "
        "GPU",
        what, *models.begin(), f.gpus_per_node, f.nics > 0 ? fmt::format(", {} NICs", f.nics) : "",
        f.mnnvl ? ", MNNVL" : "", Joined(names)));
    return true;
  }
  // origin stays "the log": this node says nothing about a log carried from elsewhere.
  choice.unavailable = fmt::format(
      "{}: not decided, as {}; give --platform NAME", what,
      models.empty()
          ? fmt::format("the log's other facts ({} GPUs per node{}) fit no platform "
                        "that shows that name",
                        f.gpus_per_node,
                        f.nic_rate_gbps > 0 ? fmt::format(", {:g} Gb/s NICs", f.nic_rate_gbps) : "")
          : fmt::format("the log fits platforms of {} GPU models ({})", models.size(),
                        Joined(names)));
  choice.evidence.push_back("GPU not decided: " + choice.unavailable);
  return false;
}

// The highest busbw any row of the runs shows (either placement), GB/s.
double PeakBusbw(const std::vector<RunResult>& runs) {
  double peak = 0;
  for (const RunResult& run : runs) {
    for (const ResultRow& row : run.rows) {
      for (const auto* half : {&row.out_of_place, &row.in_place}) {
        if (half->has_value()) peak = std::max(peak, (*half)->busbw);
      }
    }
  }
  return peak;
}

// The most busbw a run on `nodes` nodes of `p` can show, and why; none where no bound is known
// (one node, inside an NVLink domain, in-network reduction possible beyond two nodes). On two
// nodes Tree, NVLS and NVLSTree reduce inside each node and can reach about twice the NIC
// total (nccl-tests #196, shared/reference/platforms.md); beyond, a ring or tree crosses the
// NICs, with 10% for noise.
std::optional<std::pair<double, std::string>> Ceiling(const Platform& p, int nodes) {
  if (nodes < 2 || p.InNvlinkDomain(nodes)) return std::nullopt;
  const double nic = p.NicTotalGBs();
  if (nodes == 2) {
    return std::pair(2 * nic, fmt::format("twice its NIC total of {:.1f} GB/s a node, which Tree "
                                          "or NVLS on two nodes can reach at most",
                                          nic));
  }
  if (p.sharp != "none" || p.Mnnvl()) return std::nullopt;
  return std::pair(1.1 * nic, fmt::format("its NIC total of {:.1f} GB/s a node (+10%), which no "
                                          "algorithm exceeds on {} nodes without in-network "
                                          "reduction",
                                          nic, nodes));
}

// The fitting platforms less those whose NICs cannot carry what the log measured, each of those
// named in a note with why. None left: no platform, saying so.
std::vector<const Platform*> DropContradicted(const std::vector<const Platform*>& fits,
                                              const std::vector<RunResult>& runs, const LogFacts& f,
                                              PlatformChoice& choice) {
  const double peak = PeakBusbw(runs);
  std::vector<const Platform*> kept;
  std::vector<std::string> dropped;
  for (const Platform* p : fits) {
    const auto ceiling = Ceiling(*p, f.nodes);
    if (ceiling && peak > 1.02 * ceiling->first) {
      choice.notes.push_back(fmt::format(
          "ruled out {}: the log's busbw reaches {:.1f} GB/s on {} nodes, above the {:.1f} GB/s "
          "it allows ({})",
          p->name, peak, f.nodes, ceiling->first, ceiling->second));
      dropped.push_back(p->name);
    } else {
      kept.push_back(p);
    }
  }
  if (kept.empty()) {
    choice.unavailable = fmt::format(
        "the log fits {}, but its busbw ({:.1f} GB/s on {} nodes) is above what each allows: "
        "check the node count (--nodes) or give --platform NAME",
        Joined(dropped), peak, f.nodes);
  }
  return kept;
}

// Of the platforms that fit, those of the cloud the host names say (EC2's "ip-172-31-41-23"):
// a log of an H100 on EC2 is an AWS machine, whatever other 8 x H100 platform it also fits.
std::vector<const Platform*> KeepHostsCloud(const std::vector<const Platform*>& fits,
                                            const std::vector<RunResult>& runs,
                                            PlatformChoice& choice) {
  const std::set<std::string> hosts = RunHosts(runs);
  const HostNaming naming = HostNamingOf(hosts);
  if (naming.platform_prefix.empty()) return fits;
  std::vector<const Platform*> kept;
  for (const Platform* p : fits) {
    if (p->name.starts_with(naming.platform_prefix)) kept.push_back(p);
  }
  if (kept.empty() || kept.size() == fits.size()) return fits;
  choice.evidence.push_back(fmt::format("the host names ({}) are {}: only the {}* platforms kept",
                                        *hosts.begin(), naming.names, naming.platform_prefix));
  return kept;
}

}  // namespace

PlatformChoice InferPlatform(const Catalog& catalog, const std::vector<RunResult>& runs) {
  PlatformChoice choice;
  choice.origin = "the log";
  LogFacts f = ReadFacts(runs);
  for (const RunResult& run : runs) CrossCheckRanks(run, f, choice.notes);
  choice.evidence = f.evidence;
  if (f.gpu_model.empty()) {
    choice.origin = "none";
    choice.unavailable = "the log names no GPU (no 'Rank N ... device N [BUS] GPU' line)";
    return choice;
  }
  std::vector<const Platform*> fits;
  std::map<std::string, std::vector<std::string>> misfits;
  for (const Platform& p : catalog.platforms()) {
    const std::string why = Misfit(p, f);
    if (why.empty()) {
      fits.push_back(&p);
    } else {
      misfits[why].push_back(p.name);
    }
  }
  if (!DecideDeviceName(catalog, fits, f, choice)) return choice;
  if (fits.empty()) {
    choice.platform = FromFacts(catalog, f, choice);
    return choice;
  }
  if (fits.size() > 1) fits = KeepHostsCloud(fits, runs, choice);
  if (fits.size() > 1) fits = DropContradicted(fits, runs, f, choice);
  if (fits.empty()) return choice;
  // Of the platforms the numbers allow, the one with the least network bandwidth is the fair
  // yardstick; the others are judged too (check says where they disagree).
  const auto weakest = std::min_element(fits.begin(), fits.end(), [](auto* a, auto* b) {
    return std::pair(a->NicTotalGBs(), a->intra_node_ring_busbw) <
           std::pair(b->NicTotalGBs(), b->intra_node_ring_busbw);
  });
  choice.platform = **weakest;
  choice.network_guessed = f.nics == 0 && f.transport.empty();
  if (fits.size() > 1) {
    std::vector<std::string> names;
    names.reserve(fits.size());
    for (const Platform* p : fits) {
      names.push_back(
          fmt::format("{} ({} x {:g} Gb/s {})", p->name, p->nics, p->nic_rate_gbps, p->transport));
      if (p != *weakest) choice.candidates.push_back(*p);
    }
    choice.notes.push_back(fmt::format(
        "the log fits {} catalog platforms its numbers allow: {}; judged against {}, the one with "
        "the least network bandwidth, and against each of the others (the verdict says where "
        "they disagree); give --platform NAME to judge against yours",
        fits.size(), Joined(names), (*weakest)->name));
  }
  return choice;
}

}  // namespace fabricscope
