// InfiniBand and RoCE ports: state, rate against the node's fastest port, link layer, the
// RoCE v2 GID, and the error counters.
#include <fmt/format.h>

#include <algorithm>

#include "doctor/check.h"
#include "doctor/hca_models.h"
#include "fabricscope/joined.h"

namespace fabricscope::doctor {
namespace {

std::string PortDir(const IbPort& p) {
  return "/sys/class/infiniband/" + p.device + "/ports/" + std::to_string(p.port);
}

std::string NetdevsOf(const IbScan& ib, const std::string& device) {
  for (const IbDevice& d : ib.devices) {
    if (d.name != device || d.netdevs.empty()) continue;
    return Joined(d.netdevs);
  }
  return "the netdev of " + device;
}

// An InfiniBand port below what its own adapter model can run: found even when no other
// port of the node is up to compare with. Returns whether it added a finding.
bool BelowModelRate(const NodeContext& node, const IbPort& p, CheckOutput& out) {
  const auto device = std::find_if(node.ib.devices.begin(), node.ib.devices.end(),
                                   [&](const IbDevice& d) { return d.name == p.device; });
  if (device == node.ib.devices.end() || p.roce() || p.state != "ACTIVE") return false;
  const auto model = FindHcaModel(device->hca_type, device->pci_device);
  if (!model || p.rate.gbps <= 0 || p.rate.gbps + 1e-9 >= model->gbps) return false;
  const std::string dev_dir = "/sys/class/infiniband/" + device->name;
  const std::string identity =
      device->hca_type.empty()
          ? node.root.Show(dev_dir + "/device/device") + ": " + device->pci_device
          : node.root.Show(dev_dir + "/hca_type") + ": " + device->hca_type;
  const bool fewer_lanes = p.rate.lanes > 0 && p.rate.lanes < model->lanes;
  out.Add(fewer_lanes ? Severity::kCritical : Severity::kWarn,
          fmt::format("runs at {} while its {} can run {}X {} ({:g} Gb/s): {:g}% of the card's "
                      "rate{}",
                      p.rate.text, model->name, model->lanes, model->generation, model->gbps,
                      100.0 * p.rate.gbps / model->gbps,
                      fewer_lanes ? ", the link trained down to fewer lanes" : ""),
          {node.root.Show(PortDir(p) + "/rate") + ": " + p.rate.text, identity},
          fmt::format("if the switch port and cable are rated for {} (check with iblinkinfo), "
                      "reseat or replace the cable/transceiver; if this card is a slower SKU or "
                      "the fabric runs at {}, nothing is wrong",
                      model->generation,
                      p.rate.generation.empty() ? p.rate.text : p.rate.generation))
      .where = p.name();
  return true;
}

// Whether the platform's GPU-fabric NICs are ports of this link layer (IB, or RoCE, which gIB,
// Google's NCCL plugin, also runs over); the other transports (TCPX, EFA, TCP) are not RDMA
// ports of the doctor's scan.
bool PlatformPort(const Platform& platform, const IbPort& p) {
  if (platform.transport == "IB") return !p.roce();
  if (platform.transport == "RoCE" || platform.transport == "gIB") return p.roce();
  return false;
}

// How many active ports run at the platform's NIC rate: when the platform's NIC count of them
// do, the slower others are extra NICs (storage, management), not a fault.
int PortsAtCatalogRate(const Platform& platform, const std::vector<const IbPort*>& ports) {
  return static_cast<int>(std::count_if(ports.begin(), ports.end(), [&](const IbPort* p) {
    return PlatformPort(platform, *p) && p->state == "ACTIVE" &&
           p->rate.gbps + 1e-9 >= platform.nic_rate_gbps;
  }));
}

// A GPU-fabric port below the catalog's NIC rate for this platform. Returns whether it added
// a finding.
bool BelowCatalogRate(const NodeContext& node, const IbPort& p, int at_rate, CheckOutput& out) {
  if (!node.platform) return false;
  const Platform& platform = *node.platform;
  if (!PlatformPort(platform, p) || p.state != "ACTIVE" || p.rate.gbps <= 0 ||
      p.rate.gbps + 1e-9 >= platform.nic_rate_gbps || at_rate >= platform.nics) {
    return false;
  }
  const auto device = std::find_if(node.ib.devices.begin(), node.ib.devices.end(),
                                   [&](const IbDevice& d) { return d.name == p.device; });
  // Whether the card itself could run the platform's rate: a slower card is the wrong NIC.
  std::string slower_card;
  if (device != node.ib.devices.end()) {
    if (const auto model = FindHcaModel(device->hca_type, device->pci_device);
        model && model->gbps + 1e-9 < platform.nic_rate_gbps) {
      slower_card =
          fmt::format(", and its {} cannot run faster ({:g} Gb/s)", model->name, model->gbps);
    }
  }
  const bool card_can = slower_card.empty();
  out.Add(Severity::kCritical,
          fmt::format("runs at {} where {} has {} x {:g} Gb/s {} NICs: {:g}% of the "
                      "platform's NIC rate; every ring through it runs at that speed{}",
                      p.rate.text, platform.name, platform.nics, platform.nic_rate_gbps,
                      platform.nic_model.empty() ? platform.transport : platform.nic_model,
                      100.0 * p.rate.gbps / platform.nic_rate_gbps, slower_card),
          {node.root.Show(PortDir(p) + "/rate") + ": " + p.rate.text,
           fmt::format("catalog {}: {} x {:g} Gb/s {} ({}; platform {})", platform.name,
                       platform.nics, platform.nic_rate_gbps, platform.transport,
                       platform.nic_model, node.platform_from),
           fmt::format("{} of {} port(s) run at {:g} Gb/s", at_rate, platform.nics,
                       platform.nic_rate_gbps)},
          card_can ? fmt::format("check the switch port and the cable with iblinkinfo (both rated "
                                 "for {:g} Gb/s?), reseat or replace the cable/transceiver; if "
                                 "this is not {} (--platform), name the right platform",
                                 platform.nic_rate_gbps, platform.name)
                   : fmt::format("this card is not the platform's NIC: fit a {} (or name the "
                                 "right platform with --platform)",
                                 platform.nic_model.empty() ? "faster NIC" : platform.nic_model))
      .where = p.name();
  return true;
}

// The port's state: not ACTIVE is a finding. Returns whether the port is fine.
bool CheckState(const Root& root, const IbPort& p, CheckOutput& out) {
  const std::string dir = PortDir(p);
  bool ok = true;
  const std::vector<std::string> state_evidence = {
      root.Show(dir + "/state") + ": " + p.state,
      root.Show(dir + "/phys_state") + ": " + p.phys_state};
  if (p.state != "ACTIVE") {
    ok = false;
    if (p.phys_state == "LinkUp") {
      out.Add(Severity::kCritical,
              "has a physical link but is " + p.state + ": no subnet manager has configured it",
              state_evidence,
              p.roce() ? "check the switch port and the interface (ip link set <if> up)"
                       : "start a subnet manager (opensm, or the switch's SM) for this "
                         "fabric")
          .where = p.name();
    } else if (p.phys_state == "Disabled") {
      out.Add(Severity::kWarn, "is administratively disabled (physical state Disabled)",
              state_evidence,
              "if the port should carry traffic, enable it (ibportstate / ip link set up); "
              "otherwise keep NCCL off it with NCCL_IB_HCA")
          .where = p.name();
    } else {
      out.Add(Severity::kCritical,
              std::string("is ") + (p.state.empty() ? "in an unknown state" : p.state) +
                  " (physical state " + (p.phys_state.empty() ? "?" : p.phys_state) +
                  "): no traffic can use it",
              state_evidence,
              "check the cable, the transceiver and the switch port; `ibstat " + p.device +
                  "` shows the same")
          .where = p.name();
    }
  }
  return ok;
}

// Slower than the node's fastest port of the same link layer.
bool CheckAgainstFastest(const Root& root, const std::vector<const IbPort*>& ports, const IbPort& p,
                         double fastest, CheckOutput& out) {
  const std::string dir = PortDir(p);
  bool ok = true;
  if (p.state == "ACTIVE" && p.rate.gbps > 0 && p.rate.gbps < fastest) {
    ok = false;
    // Same generation, fewer lanes: the link trained down. Another generation may be a
    // different card (a slower storage or management NIC).
    const IbPort* faster = *std::find_if(ports.begin(), ports.end(), [&](const IbPort* q) {
      return q->roce() == p.roce() && q->state == "ACTIVE" && q->rate.gbps == fastest;
    });
    const bool degraded = !p.rate.generation.empty() &&
                          p.rate.generation == faster->rate.generation &&
                          p.rate.lanes < faster->rate.lanes;
    out.Add(degraded ? Severity::kCritical : Severity::kWarn,
            fmt::format("runs at {} ({:g}% of the node's fastest port, {} at {}){}", p.rate.text,
                        100.0 * p.rate.gbps / fastest, faster->name(), faster->rate.text,
                        degraded ? ": the link trained down to fewer lanes" : ""),
            {root.Show(dir + "/rate") + ": " + p.rate.text,
             root.Show(PortDir(*faster) + "/rate") + ": " + faster->rate.text},
            degraded ? "reseat or replace the cable/transceiver; a ring runs at the speed of "
                       "its slowest link"
                     : "if this port carries GPU traffic, it slows every ring through it; "
                       "otherwise exclude it with NCCL_IB_HCA=^" +
                           p.device)
        .where = p.name();
  }
  return ok;
}

// RoCE: a v2 GID, and one that routes (not only link-local).
bool CheckRoceGids(const NodeContext& node, const IbPort& p, const std::string& key,
                   CheckOutput& out) {
  const Root& root = node.root;
  const std::string dir = PortDir(p);
  bool ok = true;
  if (p.roce()) {
    const auto v2 = std::find_if(p.gids.begin(), p.gids.end(),
                                 [](const Gid& g) { return g.type == "RoCE v2"; });
    if (v2 == p.gids.end()) {
      ok = false;
      out.Add(Severity::kCritical,
              "is RoCE but has no RoCE v2 GID: the interface has no IP address "
              "(or the kernel lacks RoCE v2)",
              {root.Show(dir + "/gid_attrs/types") + ": no 'RoCE v2' entry"},
              "give the port's interface (" + NetdevsOf(node.ib, p.device) +
                  ") an IP address: RoCE v2 GIDs are made from it")
          .where = p.name();
    } else {
      // Link-local GIDs (fe80::) exist without any address; only the others route.
      const auto routable = std::find_if(p.gids.begin(), p.gids.end(), [](const Gid& g) {
        return g.type == "RoCE v2" && !g.value.starts_with("fe80:");
      });
      if (routable == p.gids.end()) {
        ok = false;
        out.Add(Severity::kWarn,
                "has only link-local RoCE v2 GIDs: its interface (" + NetdevsOf(node.ib, p.device) +
                    ") has no IP address, so RoCE cannot leave the local subnet",
                {root.Show(dir + "/gids") + ": only fe80:: entries"},
                "give the interface its IP address on the RDMA network")
            .where = p.name();
      } else {
        out.Fact(key + ".roce_v2_gid", std::to_string(routable->index));
      }
    }
  }
  return ok;
}

// Non-zero error counters.
bool CheckCounters(const Root& root, const IbPort& p, CheckOutput& out) {
  const std::string dir = PortDir(p);
  bool ok = true;
  std::vector<std::string> counters;
  for (const ErrorCounter& c : ErrorCounters()) {
    const auto it = p.counters.find(std::string(c.file));
    if (it == p.counters.end() || it->second == 0) continue;
    counters.push_back(fmt::format("{}: {} ({})", root.Show(dir + "/" + std::string(c.file)),
                                   it->second, c.meaning));
  }
  if (!counters.empty()) {
    ok = false;
    out.Add(
           Severity::kWarn,
           fmt::format("has {} non-zero error counter(s) since the driver loaded", counters.size()),
           counters,
           "watch whether they grow during a run (perfquery -x / rdma statistic); symbol "
           "and link errors point at the cable or transceiver, discards at congestion")
        .where = p.name();
  }
  return ok;
}

class IbPortsCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (node.ib.devices.empty()) return node.ib.unavailable;
    return std::nullopt;
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    const Root& root = node.root;
    const auto ports = node.ib.Ports();
    for (const IbDevice& d : node.ib.devices) {
      if (!d.fw_ver.empty()) out.Fact("ib." + d.name + ".fw_ver", d.fw_ver);
    }
    // The fastest port of each link layer: a slower port of the same kind is suspect.
    double fastest_ib = 0, fastest_roce = 0;
    for (const IbPort* p : ports) {
      if (p->state != "ACTIVE") continue;
      double& fastest = p->roce() ? fastest_roce : fastest_ib;
      fastest = std::max(fastest, p->rate.gbps);
    }
    const int at_rate = node.platform ? PortsAtCatalogRate(*node.platform, ports) : 0;
    if (node.platform) {
      out.Fact("platform", node.platform->name);
      out.Fact("platform.nic_rate", fmt::format("{:g} Gb/s", node.platform->nic_rate_gbps));
    }
    int healthy = 0;
    std::vector<std::string> healthy_evidence;
    for (const IbPort* p : ports) {
      const std::string key = "ib." + p->name();
      out.Fact(key + ".state", p->state);
      out.Fact(key + ".rate", p->rate.text);
      out.Fact(key + ".link_layer", p->link_layer);
      const double fastest = p->roce() ? fastest_roce : fastest_ib;
      bool ok = CheckState(root, *p, out);
      ok = CheckAgainstFastest(root, ports, *p, fastest, out) && ok;
      // One rate finding a port: against the node's fastest, else the catalog, else the card.
      if (!(p->rate.gbps < fastest) &&
          (BelowCatalogRate(node, *p, at_rate, out) || BelowModelRate(node, *p, out))) {
        ok = false;
      }
      if (p->roce()) ok = CheckRoceGids(node, *p, key, out) && ok;
      ok = CheckCounters(root, *p, out) && ok;
      if (ok) {
        ++healthy;
        healthy_evidence.push_back(
            fmt::format("{}: {} {}, {}", p->name(), p->state, p->rate.text, p->link_layer));
      }
    }
    if (healthy > 0) {
      Finding& f = out.Add(Severity::kOk, fmt::format("{} of {} RDMA port(s) active at full rate "
                                                      "without errors",
                                                      healthy, ports.size()));
      f.evidence = healthy_evidence;
    }
  }
};

}  // namespace

std::unique_ptr<Check> MakeIbPortsCheck() { return std::make_unique<IbPortsCheck>(); }

}  // namespace fabricscope::doctor
