// The NCCL checks: the variables it will read, and what its own log says it did.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "doctor/check.h"

namespace fabricscope::doctor {
namespace {

// Log lines quoted as evidence: enough to find the rest, few enough to read.
constexpr size_t kQuotedLines = 4;

std::string Cite(const NcclLog& log, int line, const std::string& text) {
  return fmt::format("{}:{}: {}", log.file, line, text);
}

void CiteLines(const NcclLog& log, const std::vector<LogLine>& lines,
               std::vector<std::string>& evidence) {
  for (size_t i = 0; i < lines.size() && i < kQuotedLines; ++i) {
    evidence.push_back(Cite(log, lines[i].line, lines[i].text));
  }
  if (lines.size() > kQuotedLines) {
    evidence.push_back(fmt::format("... and {} more such lines", lines.size() - kQuotedLines));
  }
}

class NcclEnvCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (!node.options.lint_env) return "--no-env: the NCCL variables are not linted";
    return std::nullopt;
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    const LintContext context{node.env, node.ib, node.root.List("/sys/class/net"), node.root,
                              node.platform ? &*node.platform : nullptr};
    std::vector<std::string> settings;
    for (const auto& [name, setting] : node.env) {
      out.Fact("env." + name, setting.value);
      settings.push_back(name + "=" + setting.value + " (" + setting.source + ")");
    }
    std::vector<Finding> findings = LintNcclSettings(context);
    const bool problems = std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
      return f.severity > Severity::kInfo;
    });
    if (node.env.empty()) {
      out.Add(Severity::kOk,
              "no NCCL variable set (environment or /etc/nccl.conf): NCCL's "
              "defaults apply");
    } else if (!problems) {
      out.Add(Severity::kOk,
              fmt::format("{} NCCL variable(s) set, none known to cost bandwidth", node.env.size()),
              settings);
    }
    for (Finding& f : findings) out.findings().push_back(std::move(f));
  }
};

class NcclLogCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (!node.nccl_log) return "no --nccl-log given (a log written with NCCL_DEBUG=INFO)";
    return std::nullopt;
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    const NcclLog& log = *node.nccl_log;
    Summarize(log, out);
    int intra = 0;
    std::map<std::string, Tally> nets = TallyConnections(log, &intra);
    if (nets.empty()) JudgeNoNetwork(log, intra, out);
    for (const auto& [network, t] : nets) JudgeNetwork(log, network, t, out);
    if (!log.gdr_disabled.empty() &&
        (nets.count("IB") == 0 || nets["IB"].gdr == nets["IB"].total)) {
      std::vector<std::string> evidence;
      CiteLines(log, log.gdr_disabled, evidence);
      out.Add(Severity::kWarn,
              fmt::format("NCCL turned GPUDirect RDMA off for {} GPU/HCA pair(s)",
                          log.gdr_disabled.size()),
              evidence, "see the gpudirect and gpu_nic_affinity checks");
    }
    CompareNodes(log.node_comparison, out);
    Diagnose(log, out);
    // A log that failed is not OK in any part: what it did before failing is a fact, INFO.
    if (log.diagnosis.status == Severity::kCritical) {
      for (Finding& f : out.findings()) {
        if (f.severity == Severity::kOk) f.severity = Severity::kInfo;
      }
    }
  }

 private:
  // The log's failure or slowness as the failure knowledge base names it; its findings are
  // the log's nodes', not this node's (doctor runs elsewhere than the log's job). WARN lines
  // no cause explains stay a WARN with the lines.
  static void Diagnose(const NcclLog& log, CheckOutput& out) {
    std::string hosts;
    for (const auto& [host, lines] : log.hosts) hosts += (hosts.empty() ? "" : ", ") + host;
    const std::string where =
        log.hosts.empty()
            ? "the log's job"
            : "the log's node" + std::string(log.hosts.size() == 1 ? "" : "s") + " (" + hosts + ")";
    for (Finding f : log.diagnosis.findings) {
      if (f.source == "note") continue;
      f.where = where;
      f.source.clear();
      out.findings().push_back(std::move(f));
    }
    if (!log.diagnosis.cause.empty() || log.warnings.empty()) return;
    std::vector<std::string> evidence;
    CiteLines(log, log.warnings, evidence);
    out.Add(Severity::kWarn,
            fmt::format("NCCL logged {} warning(s) that the failure knowledge base does not "
                        "explain",
                        log.warnings.size()),
            evidence,
            "the first WARN line names the failing call; rerun with NCCL_DEBUG=INFO "
            "NCCL_DEBUG_SUBSYS=INIT,NET for the lines before it");
  }

  // Network connections of one network, with and without GPUDirect RDMA.
  struct Tally {
    int total = 0, gdr = 0, pxn = 0;
    std::vector<LogLine> without_gdr;
    std::vector<LogLine> all;
  };

  // The version, network, driver, devices and hosts the log names, as one OK line.
  static void Summarize(const NcclLog& log, CheckOutput& out) {
    if (!log.version.empty()) out.Fact("nccl.version", log.version);
    if (!log.network.empty()) out.Fact("nccl.network", log.network);
    if (!log.cuda_driver.empty()) out.Fact("nccl.cuda_driver", log.cuda_driver);

    std::vector<std::string> summary_evidence;
    if (!log.cuda_driver.empty())
      summary_evidence.push_back("cudaDriverVersion " + log.cuda_driver);
    if (!log.ib_devices.empty()) {
      std::string devices;
      for (const auto& d : log.ib_devices) devices += " " + d;
      summary_evidence.push_back("NET/IB devices:" + devices);
    }
    if (!log.socket_devices.empty()) {
      std::string devices;
      for (const auto& d : log.socket_devices) devices += " " + d;
      summary_evidence.push_back("NET/Socket devices:" + devices);
    }
    for (const auto& [host, lines] : log.hosts) {
      summary_evidence.push_back(fmt::format("host {}: {} NCCL lines", host, lines));
    }
    out.Add(Severity::kOk,
            fmt::format(
                "NCCL {}{}{}{}", log.version.empty() ? "(version not logged)" : log.version,
                log.network.empty() ? "" : ", network " + log.network,
                log.ranks > 0 ? fmt::format(", {} ranks on {} node(s)", log.ranks, log.nodes) : "",
                log.channels > 0 ? fmt::format(", {} channels", log.channels) : ""),
            summary_evidence);
  }

  // The inter-node connections by network; `intra` counts the others.
  static std::map<std::string, Tally> TallyConnections(const NcclLog& log, int* intra) {
    std::map<std::string, Tally> nets;
    for (const NcclConnection& c : log.connections) {
      if (c.transport != "NET") {
        ++*intra;
        continue;
      }
      Tally& t = nets[c.network];
      ++t.total;
      t.gdr += c.gdr ? 1 : 0;
      t.pxn += c.pxn ? 1 : 0;
      const LogLine line{
          c.line, fmt::format("channel {} {} -> {} [{}] via NET/{}/{}{}", c.channel, c.from, c.to,
                              c.direction, c.network, c.net_device, c.gdr ? "/GDRDMA" : "")};
      t.all.push_back(line);
      if (!c.gdr) t.without_gdr.push_back(line);
    }
    return nets;
  }

  // A log without inter-node connections: sockets, a multi-node log missing its NET lines, or
  // a single node.
  static void JudgeNoNetwork(const NcclLog& log, int intra, CheckOutput& out) {
    if (log.network == "Socket") {
      std::vector<std::string> evidence;
      CiteLines(log, log.no_device, evidence);
      CiteLines(log, log.plugin, evidence);
      out.Add(Severity::kCritical, "NCCL chose TCP sockets as its network (Using network Socket)",
              evidence, SocketFix());
    } else if (log.nodes > 1) {
      out.Add(Severity::kWarn,
              fmt::format("the log spans {} nodes but shows no network connection: were "
                          "NCCL_DEBUG_SUBSYS's INIT and NET logged?",
                          log.nodes),
              {}, "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET");
    } else {
      out.Add(Severity::kOk,
              fmt::format("no inter-node connection in the log ({} intra-node)", intra));
    }
  }

  // The connections of one network: sockets, IB with or without GPUDirect RDMA, or a plugin.
  static void JudgeNetwork(const NcclLog& log, const std::string& network, const Tally& t,
                           CheckOutput& out) {
    if (network == "Socket") {
      std::vector<std::string> evidence;
      CiteLines(log, t.all, evidence);
      CiteLines(log, log.no_device, evidence);
      CiteLines(log, log.plugin, evidence);
      out.Add(Severity::kCritical,
              fmt::format("{} inter-node connection(s) fell back to TCP sockets (NET/Socket): "
                          "no RDMA, every byte through the kernel's TCP stack",
                          t.total),
              evidence, SocketFix());
    } else if (network == "IB") {
      if (t.gdr == t.total) {
        out.Add(Severity::kOk,
                fmt::format("all {} NET/IB connection(s) use GPUDirect RDMA (GDRDMA){}", t.total,
                            t.pxn > 0 ? fmt::format(", {} through PXN", t.pxn) : ""));
      } else {
        std::vector<std::string> evidence;
        CiteLines(log, t.without_gdr, evidence);
        CiteLines(log, log.gdr_disabled, evidence);
        out.Add(Severity::kCritical,
                fmt::format("{} of {} NET/IB connection(s) run without GPUDirect RDMA: data "
                            "is staged through host memory",
                            t.total - t.gdr, t.total),
                evidence,
                "load nvidia_peermem (see the gpudirect check); where NCCL says the GPU is too "
                "far from the HCA, fix the affinity or raise NCCL_NET_GDR_LEVEL");
      }
    } else {
      out.Add(
          Severity::kOk,
          fmt::format("{} inter-node connection(s) through the {} network plugin{}", t.total,
                      network, t.gdr > 0 ? fmt::format(" ({} with GPUDirect RDMA)", t.gdr) : ""));
    }
  }

  // A log of many nodes: the nodes whose NCCL said something else than most nodes' did.
  static void CompareNodes(const NcclNodeComparison& c, CheckOutput& out) {
    if (c.nodes.size() < 2) return;
    if (c.differences.empty()) {
      std::vector<std::string> aspects;
      for (const auto& [aspect, value] : c.majority) aspects.push_back(aspect);
      out.Add(Severity::kOk,
              fmt::format("{} nodes agree on {}", c.nodes.size(), fmt::join(aspects, ", ")));
      return;
    }
    for (const NcclNodeDifference& d : c.differences) {
      out.Add(Severity::kWarn,
              fmt::format("node {} differs from most nodes ({} of {}) in {}: {} (most: {})", d.host,
                          d.majority_nodes, c.nodes.size(), d.aspect, d.value, d.majority),
              d.lines,
              "run fabricscope doctor on " + d.host +
                  " and compare its NCCL variables and "
                  "drivers with a node of the majority");
    }
  }

  static std::string SocketFix() {
    return "make the RDMA stack visible (ib_ports check; containers need /dev/infiniband), "
           "check NCCL_IB_DISABLE, NCCL_NET and NCCL_IB_HCA (nccl_env check); on GCP the "
           "GPUDirect-TCPX/TCPXO plugin must load (NCCL_NET_PLUGIN)";
  }
};

}  // namespace

std::unique_ptr<Check> MakeNcclEnvCheck() { return std::make_unique<NcclEnvCheck>(); }
std::unique_ptr<Check> MakeNcclLogCheck() { return std::make_unique<NcclLogCheck>(); }

}  // namespace fabricscope::doctor
