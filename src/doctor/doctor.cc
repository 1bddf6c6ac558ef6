// The check registry and one node's doctor run.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <exception>

#include "doctor/check.h"
#include "doctor/topo_file.h"
#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/node.h"
#include "fabricscope/strings.h"

namespace fabricscope::doctor {
namespace {

std::string HostName(const Root& root) {
  if (root.live()) {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0) return name;
  }
  for (const char* file : {"/proc/sys/kernel/hostname", "/etc/hostname"}) {
    if (auto line = root.ReadLine(file); line && !line->empty()) return *line;
  }
  return root.dir().filename().string();
}

std::vector<const CheckEntry*> Select(const std::vector<std::string>& wanted) {
  const auto& all = CheckRegistry();
  std::vector<const CheckEntry*> out;
  if (wanted.empty()) {
    for (const auto& e : all) out.push_back(&e);
    return out;
  }
  std::vector<bool> chosen(all.size(), false);
  for (const std::string& w : wanted) {
    bool any = false;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].name.starts_with(w)) chosen[i] = any = true;
    }
    if (!any) {
      throw UsageError("unknown check '" + w + "' in --check: the checks are " + NamesOf(all) +
                       " (a prefix selects several; --list describes them)");
    }
  }
  for (size_t i = 0; i < all.size(); ++i) {
    if (chosen[i]) out.push_back(&all[i]);
  }
  return out;
}

}  // namespace

Severity CheckResult::severity() const { return Worst(findings); }

// A node (or cluster) whose findings are OK or INFO is OK: a check that cannot run here
// is not a problem of the node.
Severity NodeReport::severity() const {
  Severity worst = Severity::kOk;
  for (const auto& c : checks) worst = std::max(worst, c.severity());
  return worst == Severity::kInfo ? Severity::kOk : worst;
}

Severity ClusterReport::severity() const {
  Severity worst = Severity::kOk;
  for (const auto& n : nodes) worst = std::max(worst, n.severity());
  for (const auto& d : drift) worst = std::max(worst, d.severity);
  return worst;
}

Finding& CheckOutput::Add(Severity severity, std::string what, std::vector<std::string> evidence,
                          std::string fix) {
  findings_.push_back(MakeFinding(severity, std::move(what), std::move(evidence), std::move(fix)));
  return findings_.back();
}

Finding MakeFinding(Severity severity, std::string what, std::vector<std::string> evidence,
                    std::string fix) {
  Finding f;
  f.severity = severity;
  f.what = std::move(what);
  f.evidence = std::move(evidence);
  f.fix = std::move(fix);
  return f;
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  std::string number = fmt::format("{:.{}f}", v, v < 10 ? 2 : v < 100 ? 1 : 0);
  if (number.find('.') != std::string::npos) {
    while (number.back() == '0') number.pop_back();
    if (number.back() == '.') number.pop_back();
  }
  return number + " " + kUnits[unit];
}

const std::vector<CheckEntry>& CheckRegistry() {
  static const std::vector<CheckEntry> kChecks = {
      {"pci", "GPUs and NICs on the PCI bus (class codes), their drivers and PCIe link widths",
       MakePciCheck},
      {"numa", "NUMA layout (sysfs; hwloc on this machine) and how GPUs and NICs spread over it",
       MakeNumaCheck},
      {"gpu_nic_affinity",
       "for every GPU the closest NIC: same PCIe switch, same NUMA node, or across the socket",
       MakeAffinityCheck},
      {"topo_file",
       "GPU-NIC affinity from `nvidia-smi topo -m` or NCCL topology XML (--topo-file, "
       "NCCL_TOPO_FILE)",
       MakeTopoFileCheck},
      {"gpudirect", "GPUDirect RDMA: nvidia_peermem / nv_peer_mem, memory_peers, dma-buf",
       MakeGpuDirectCheck},
      {"ib_ports",
       "InfiniBand/RoCE ports: state, rate against the fastest port, RoCE v2 GID, error counters",
       MakeIbPortsCheck},
      {"mtu", "MTU of the RoCE interfaces (4096-byte RDMA packets need 4192 or more)",
       MakeMtuCheck},
      {"shm", "size of /dev/shm (NCCL's shared-memory segments)", MakeShmCheck},
      {"memlock", "locked-memory limit (RDMA memory registration)", MakeMemlockCheck},
      {"nccl_env",
       "NCCL variables of the environment and /etc/nccl.conf: harmful values, missing devices, "
       "unknown names",
       MakeNcclEnvCheck},
      {"nccl_log",
       "NCCL's NCCL_DEBUG=INFO log: transport of every connection, GPUDirect, version, channels",
       MakeNcclLogCheck},
  };
  return kChecks;
}

std::vector<CheckInfo> ListChecks() {
  std::vector<CheckInfo> out;
  for (const auto& e : CheckRegistry()) out.push_back({e.name, e.description});
  return out;
}

namespace {

// The node's catalog platform: the one named, else the one detection recognises (DMI, GPUs).
void ChoosePlatform(const DoctorOptions& options, NodeContext& node) {
  const Catalog catalog = Catalog::Builtin();
  if (!options.platform.empty()) {
    const Platform* named = catalog.Find(options.platform);
    if (named == nullptr) {
      throw UsageError("--platform '" + options.platform +
                       "' is not a platform of the catalog; give one of " +
                       Joined(catalog.Names()) + " (or leave --platform out to detect it)");
    }
    node.platform = *named;
    node.platform_from = "--platform";
    return;
  }
  try {
    PlatformChoice choice = DetectPlatform(catalog, options.root);
    if (!choice.platform) return;
    node.platform = std::move(choice.platform);
    node.platform_from = "detected";
    if (!choice.evidence.empty())
      node.platform_from += fmt::format(": {}", fmt::join(choice.evidence, "; "));
  } catch (const std::exception&) {
    // Detection is a help, not a check: a node it cannot read is judged without a platform.
  }
}

}  // namespace

NodeReport RunDoctor(const DoctorOptions& options) {
  const Root root(options.root);
  const auto selected = Select(options.checks);
  NodeContext node{root,
                   options,
                   ScanPci(root),
                   ScanIb(root),
                   options.lint_env ? CollectNcclSettings(root, options.env) : EnvSettings{},
                   std::nullopt,
                   std::nullopt,
                   ""};
  ChoosePlatform(options, node);
  if (!options.nccl_log.empty()) node.nccl_log = ParseNcclLog(options.nccl_log);
  if (!options.topo_file.empty()) {
    node.topo_file = ParseTopoFile(options.topo_file);
  } else if (auto it = node.env.find("NCCL_TOPO_FILE"); it != node.env.end()) {
    // From the environment rather than the command line: a bad file is a finding, not an
    // error of this command.
    if (!root.Exists(it->second.value)) {
      node.topo_file_problem =
          "NCCL_TOPO_FILE names " + root.Show(it->second.value) + ", which does not exist";
    } else {
      try {
        node.topo_file = ParseTopoFile(root.Host(it->second.value).string());
      } catch (const UsageError& e) {
        node.topo_file_problem = std::string("NCCL_TOPO_FILE: ") + e.what();
      }
    }
  }

  NodeReport report;
  report.rank = options.rank;
  report.root = root.dir().string();
  report.host = HostName(root);
  if (auto kernel = root.ReadLine("/proc/sys/kernel/osrelease")) report.facts["kernel"] = *kernel;
  for (const CheckEntry* entry : selected) {
    CheckResult result;
    result.name = std::string(entry->name);
    result.description = std::string(entry->description);
    const auto check = entry->make();
    CheckOutput out;
    try {
      if (auto reason = check->SkipReason(node)) {
        out.Add(Severity::kInfo, *reason);
      } else {
        check->Run(node, out);
      }
    } catch (const std::exception& e) {
      // One check's surprise (a file shaped unlike any seen) must not cost the others.
      out.Add(Severity::kWarn, std::string("the check stopped: ") + e.what(), {},
              "report this with the files the evidence names");
    }
    if (out.findings().empty()) out.Add(Severity::kOk, "nothing to report");
    result.findings = std::move(out.findings());
    // Every finding of a node's checks blames that node; its ports' checks a NIC of it.
    const bool nic = result.name == "ib_ports" || result.name == "mtu";
    for (Finding& f : result.findings) {
      f.source = result.name;
      if (f.element.empty()) f.element = nic ? "nic" : "node";
      if (f.nodes.empty()) f.nodes = {report.host};
    }
    for (auto& [key, value] : out.facts()) report.facts[key] = value;
    report.checks.push_back(std::move(result));
  }
  return report;
}

}  // namespace fabricscope::doctor
