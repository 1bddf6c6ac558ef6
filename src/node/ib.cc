#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "fabricscope/node_ib.h"
#include "fabricscope/strings.h"

namespace fabricscope::node {
namespace {

// "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp".
std::string AfterColon(const std::string& text) {
  const size_t colon = text.find(':');
  return std::string(Trim(colon == std::string::npos ? text : text.substr(colon + 1)));
}

bool AllZero(const std::string& gid) {
  return std::all_of(gid.begin(), gid.end(), [](char c) { return c == '0' || c == ':'; });
}

}  // namespace

bool Gid::ipv4() const { return value.starts_with("0000:0000:0000:0000:0000:ffff:"); }

PortRate ParsePortRate(const std::string& text) {
  PortRate r;
  r.text = text;
  static const std::regex kRate(R"(^\s*([0-9.]+)\s*Gb/sec(?:\s*\((\d+)X\s*([A-Za-z]*)\))?)");
  std::smatch m;
  if (std::regex_search(text, m, kRate)) {
    r.gbps = ToNumber<double>(m[1].str()).value_or(0);
    if (m[2].matched) r.lanes = ToNumber<int>(m[2].str()).value_or(0);
    if (m[3].matched) r.generation = m[3].str();
  }
  return r;
}

std::vector<const IbPort*> IbScan::Ports() const {
  std::vector<const IbPort*> out;
  for (const auto& d : devices) {
    for (const auto& p : d.ports) out.push_back(&p);
  }
  return out;
}

const std::vector<ErrorCounter>& ErrorCounters() {
  // The InfiniBand PortCounters (counters/) and, for RoCE, the mlx5 counters of dropped or
  // retransmitted packets (hw_counters/). Cumulative since the driver loaded.
  static const std::vector<ErrorCounter> kCounters = {
      {"counters/symbol_error", "bit errors on the wire: a bad cable, transceiver or port"},
      {"counters/link_error_recovery", "the link retrained: a marginal cable or transceiver"},
      {"counters/link_downed", "the link went down and came back"},
      {"counters/port_rcv_errors", "malformed packets received"},
      {"counters/port_rcv_remote_physical_errors", "packets marked bad upstream"},
      {"counters/local_link_integrity_errors", "the link exceeded its error threshold"},
      {"counters/excessive_buffer_overrun_errors", "receive buffers overran"},
      {"counters/port_xmit_discards", "packets dropped on send: congestion or a down link"},
      {"counters/port_rcv_switch_relay_errors", "packets the switch could not route"},
      {"hw_counters/out_of_sequence", "RoCE packets lost and retransmitted"},
      {"hw_counters/packet_seq_err", "RoCE NAKs for out-of-sequence packets"},
      {"hw_counters/local_ack_timeout_err", "RoCE transport retries after a timeout"},
  };
  return kCounters;
}

IbScan ScanIb(const Root& root) {
  IbScan scan;
  const std::string top = "/sys/class/infiniband";
  if (!root.IsDirectory(top)) {
    scan.unavailable = root.Show(top) + " is absent (no RDMA driver loaded)";
    return scan;
  }
  for (const std::string& name : root.List(top)) {
    const std::string dir = fmt::format("{}/{}", top, name);
    IbDevice dev;
    dev.name = name;
    dev.fw_ver = root.ReadLine(dir + "/fw_ver").value_or("");
    dev.hca_type = root.ReadLine(dir + "/hca_type").value_or("");
    dev.pci_device = root.ReadLine(dir + "/device/device").value_or("");
    if (auto resolved = root.Resolve(dir + "/device")) {
      const auto parts = Split(*resolved, '/');
      if (!parts.empty() && parts.back().find(':') != std::string::npos) dev.pci = parts.back();
    }
    dev.netdevs = root.List(dir + "/device/net");
    for (const std::string& p : root.List(dir + "/ports")) {
      const auto number = ParseInt(p);
      if (!number) continue;
      const std::string pdir = fmt::format("{}/ports/{}", dir, p);
      IbPort port;
      port.device = name;
      port.port = static_cast<int>(*number);
      port.state = AfterColon(root.ReadLine(pdir + "/state").value_or(""));
      port.phys_state = AfterColon(root.ReadLine(pdir + "/phys_state").value_or(""));
      port.rate = ParsePortRate(root.ReadLine(pdir + "/rate").value_or(""));
      port.link_layer = root.ReadLine(pdir + "/link_layer").value_or("");
      for (const std::string& g : root.List(pdir + "/gids")) {
        const auto index = ParseInt(g);
        auto value = root.ReadLine(fmt::format("{}/gids/{}", pdir, g));
        if (!index || !value || AllZero(*value)) continue;
        Gid gid;
        gid.index = static_cast<int>(*index);
        gid.value = *value;
        gid.type = root.ReadLine(fmt::format("{}/gid_attrs/types/{}", pdir, g)).value_or("");
        gid.netdev = root.ReadLine(fmt::format("{}/gid_attrs/ndevs/{}", pdir, g)).value_or("");
        port.gids.push_back(gid);
      }
      std::sort(port.gids.begin(), port.gids.end(),
                [](const Gid& a, const Gid& b) { return a.index < b.index; });
      for (const ErrorCounter& c : ErrorCounters()) {
        if (auto v = root.ReadInt(pdir + "/" + std::string(c.file))) {
          port.counters[std::string(c.file)] = static_cast<uint64_t>(*v);
        }
      }
      dev.ports.push_back(std::move(port));
    }
    std::sort(dev.ports.begin(), dev.ports.end(),
              [](const IbPort& a, const IbPort& b) { return a.port < b.port; });
    scan.devices.push_back(std::move(dev));
  }
  if (scan.devices.empty()) scan.unavailable = root.Show(top) + " lists no device";
  return scan;
}

}  // namespace fabricscope::node
