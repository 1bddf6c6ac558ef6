// The GPUDirect rule: is inter-node data going GPU to NIC, or bouncing through host memory?
// Evidence, strongest first: NCCL's own transport lines; else a figure that matches what the
// platform is published to reach without GPUDirect.
#include <fmt/format.h>

#include "check/rules.h"

namespace fabricscope::check {
namespace {

bool Has(const std::string& line, std::string_view word) {
  return line.find(word) != std::string::npos;
}

// The first line with `word`, or empty.
std::string FirstWith(const std::vector<std::string>& lines, std::string_view word) {
  for (const std::string& line : lines) {
    if (Has(line, word)) return line;
  }
  return "";
}

// A line showing NCCL moved inter-node data over TCP sockets: a connection "via NET/Socket",
// "Using network Socket", or the Socket transport's start-up line when no other network
// transport appears.
std::string SocketEvidence(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    if (Has(line, "via NET/Socket") || Has(line, "Using network Socket")) return line;
  }
  bool other = false;
  for (const std::string& line : lines) {
    if ((Has(line, "via NET/") || Has(line, "Using network ")) && !Has(line, "Socket")) {
      other = true;
    }
  }
  const std::string start = FirstWith(lines, "NET/Socket");
  return other ? "" : start;
}

// The NCCL variables the platform needs, as a hint: "NCCL_NET=GPUDirectTCPX_v7, ...".
std::string EnvHint(const Platform& p) {
  std::string out;
  size_t shown = 0;
  for (const EnvSetting& e : p.nccl_env) {
    if (shown++ == 4) break;
    out += (out.empty() ? "" : ", ") + e.name + "=" + e.value;
  }
  return out.empty() ? "" : "; " + p.name + " needs " + out + " (docs/catalog.md)";
}

bool Below(const BandwidthJudgement& j) {
  return j.status == Severity::kWarn || j.status == Severity::kCritical;
}

std::string HowFar(const BandwidthJudgement& j) {
  if (!j.measured || !j.expected) return "";
  return fmt::format(", which explains busbw at {} of the expected {}",
                     Percent(*j.measured / j.expected->typical), Gbs(j.expected->typical));
}

}  // namespace

std::optional<Finding> GpuDirectRule(const RuleContext& c) {
  if (!PlatformApplies(c.test, c.choice) || c.test.nodes < 2) return std::nullopt;
  const Platform& p = *c.choice.platform;
  if (p.transport == "TCP") return std::nullopt;  // sockets are the platform's own transport
  const BandwidthJudgement& j = c.bandwidth;
  const std::vector<std::string>& lines = c.test.transports;
  Finding f;

  if (const std::string socket = SocketEvidence(lines); !socket.empty()) {
    f.severity = Below(j) ? Severity::kCritical : Severity::kWarn;
    f.what = "GPUDirect/RDMA is not in use: NCCL's log shows '" + socket +
             "': inter-node data goes through host memory and TCP sockets instead of " +
             p.transport + HowFar(j) + EnvHint(p) + "; run fabricscope doctor on the nodes";
    return f;
  }
  const std::string gdr = FirstWith(lines, "GDRDMA");
  // gIB (Google's plugin over RoCE NICs) names its connections "via NET/gIB".
  std::string ib = FirstWith(lines, "via NET/IB");
  if (ib.empty()) ib = FirstWith(lines, "via NET/gIB");
  const bool rdma = p.transport == "IB" || p.transport == "RoCE" || p.transport == "gIB";
  if (gdr.empty() && !ib.empty() && rdma) {
    f.severity = Below(j) ? Severity::kCritical : Severity::kWarn;
    f.what = "RDMA without GPUDirect: NCCL's log shows '" + ib +
             "' with no GDRDMA, so data is staged through host memory" + HowFar(j) +
             "; load nvidia_peermem (or use DMA-BUF) and check NCCL_NET_GDR_LEVEL; run "
             "fabricscope doctor on the nodes";
    return f;
  }
  if (lines.empty() && j.status == Severity::kCritical && j.measured && p.without_gpudirect_busbw &&
      *j.measured <= 1.5 * *p.without_gpudirect_busbw) {
    f.severity = Severity::kCritical;
    f.figures["without_gpudirect_busbw"] = *p.without_gpudirect_busbw;
    f.what = fmt::format(
        "GPUDirect is most likely not in use: busbw {} matches the about {} {} reaches without "
        "GPUDirect-{} ({}), not the {} it reaches with it. These results hold no NCCL log to "
        "confirm: rerun with NCCL_DEBUG=INFO and look for NET/Socket{}",
        Gbs(*j.measured), Gbs(*p.without_gpudirect_busbw), p.name, p.transport,
        p.without_gpudirect_source, Gbs(j.expected->typical), EnvHint(p));
    return f;
  }
  // GPUDirect-TCPX and TCPXO ("FasTrak") name their plugin rather than GDRDMA.
  std::string plugin = !gdr.empty() ? gdr : FirstWith(lines, "GPUDirectTCPX");
  if (plugin.empty()) plugin = FirstWith(lines, "FasTrak");
  if (!plugin.empty()) {
    f.severity = Severity::kOk;
    f.what = "NCCL's log shows GPUDirect in use: '" + plugin + "'";
    return f;
  }
  return std::nullopt;
}

}  // namespace fabricscope::check
