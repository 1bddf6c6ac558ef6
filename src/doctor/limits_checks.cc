// Host limits that cap NCCL: the MTU of the RoCE NICs, the size of /dev/shm, the
// locked-memory limit.
#include <fmt/format.h>

#include <map>
#include <sstream>

#include "doctor/check.h"

namespace fabricscope::doctor {
namespace {

// RoCE carries IB packets in UDP/IP: the kernel subtracts GRH, UDP, BTH, the XRC and atomic
// extension headers and the ICRC (96 bytes, iboe_get_mtu) from the netdev MTU and takes the
// largest IB MTU that fits.
constexpr int kRoceHeaderBytes = 96;
constexpr int kIbMtus[] = {4096, 2048, 1024, 512, 256};

int RoceMtu(int netdev_mtu) {
  for (int m : kIbMtus) {
    if (netdev_mtu - kRoceHeaderBytes >= m) return m;
  }
  return 0;
}

// NCCL's troubleshooting guide asks containers for --shm-size=1g; below a quarter of that
// (Docker's default is 64 MiB) NCCL fails to create its segments on an 8-GPU node.
constexpr uint64_t kShmRecommended = 1ull << 30;
constexpr uint64_t kShmCritical = 256ull << 20;

// "size=65536k", "64m", "1g", "50%".
std::optional<uint64_t> ParseTmpfsSize(const std::string& text, uint64_t mem_total) {
  if (text.empty()) return std::nullopt;
  const char unit = static_cast<char>(std::tolower(static_cast<unsigned char>(text.back())));
  const std::string digits = std::isdigit(static_cast<unsigned char>(text.back()))
                                 ? text
                                 : text.substr(0, text.size() - 1);
  const auto n = ParseInt(digits);
  if (!n || *n < 0) return std::nullopt;
  const uint64_t v = static_cast<uint64_t>(*n);
  switch (unit) {
    case 'k':
      return v << 10;
    case 'm':
      return v << 20;
    case 'g':
      return v << 30;
    case 't':
      return v << 40;
    case '%':
      return mem_total / 100 * v;
    default:
      return v;
  }
}

class MtuCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (node.ib.devices.empty()) return node.ib.unavailable;
    for (const IbPort* p : node.ib.Ports()) {
      if (p->roce()) return std::nullopt;
    }
    return "no RoCE port: InfiniBand ports take their MTU from the subnet manager";
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    std::vector<std::string> good;
    std::map<int64_t, std::vector<std::string>> small;  // MTU -> evidence, per interface
    for (const IbDevice& d : node.ib.devices) {
      const bool roce =
          std::any_of(d.ports.begin(), d.ports.end(), [](const IbPort& p) { return p.roce(); });
      if (!roce) continue;
      std::vector<std::string> netdevs = d.netdevs;
      if (netdevs.empty()) {
        for (const IbPort& p : d.ports) {
          for (const Gid& g : p.gids) {
            if (!g.netdev.empty() &&
                std::find(netdevs.begin(), netdevs.end(), g.netdev) == netdevs.end()) {
              netdevs.push_back(g.netdev);
            }
          }
        }
      }
      if (netdevs.empty()) {
        out.Add(Severity::kWarn, "is RoCE but no network interface belongs to it",
                {node.root.Show("/sys/class/infiniband/" + d.name + "/device/net") + ": absent"},
                "check that the Ethernet driver (mlx5_core) created its interface")
            .where = d.name;
        continue;
      }
      for (const std::string& netdev : netdevs) {
        const std::string file = "/sys/class/net/" + netdev + "/mtu";
        std::string why;
        const auto mtu = node.root.ReadInt(file, &why);
        if (!mtu) {
          out.Add(Severity::kWarn, "cannot read the MTU (of " + d.name + ")",
                  {node.root.Show(file) + ": " + why})
              .where = netdev;
          continue;
        }
        out.Fact("mtu." + netdev, std::to_string(*mtu));
        const std::string evidence = fmt::format("{}: {} ({})", node.root.Show(file), *mtu, d.name);
        if (RoceMtu(static_cast<int>(*mtu)) < 4096) {
          small[*mtu].push_back(evidence);
        } else {
          good.push_back(evidence);
        }
      }
    }
    for (const auto& [mtu, evidence] : small) {
      out.Add(Severity::kWarn,
              fmt::format("{} RoCE interface(s) have MTU {}: RoCE packets carry only {} bytes "
                          "instead of 4096, more headers and more packets for the same data",
                          evidence.size(), mtu, RoceMtu(static_cast<int>(mtu))),
              evidence,
              fmt::format("set MTU {} or more (9000 is usual) on each interface (ip link set "
                          "<interface> mtu 9000) and on every switch port on the path",
                          4096 + kRoceHeaderBytes));
    }
    if (!good.empty()) {
      out.Add(Severity::kOk,
              fmt::format("{} RoCE interface(s) carry 4096-byte RDMA packets", good.size()), good);
    }
  }
};

class ShmCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    std::string why;
    if (!node.root.Read("/proc/mounts", &why)) return node.root.Show("/proc/mounts") + " is " + why;
    return std::nullopt;
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    const std::string mounts = node.root.Read("/proc/mounts").value_or("");
    uint64_t mem_total = 0;
    if (const auto meminfo = node.root.Read("/proc/meminfo")) {
      std::istringstream in(*meminfo);
      std::string key;
      uint64_t kib = 0;
      while (in >> key >> kib) {
        if (key == "MemTotal:") mem_total = kib << 10;
        in.ignore(1 << 10, '\n');
      }
    }
    // The last mount on /dev/shm hides the others; /dev's tmpfs holds it when it is no
    // mount of its own.
    std::string shm_line, dev_line, options, mountpoint;
    std::istringstream in(mounts);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string source, point, type, opts;
      fields >> source >> point >> type >> opts;
      if (point == "/dev/shm") shm_line = line;
      if (point == "/dev" && type == "tmpfs") dev_line = line;
    }
    const std::string& used = !shm_line.empty() ? shm_line : dev_line;
    const std::string where = node.root.Show("/proc/mounts");
    if (used.empty()) {
      if (!node.root.IsDirectory("/dev/shm")) {
        out.Add(Severity::kCritical,
                "/dev/shm does not exist: NCCL's shared-memory transport and proxy buffers fail",
                {where + ": no /dev/shm mount", node.root.Show("/dev/shm") + ": absent"},
                "mount a tmpfs on /dev/shm (containers: --shm-size=1g or --ipc=host)");
      } else {
        out.Add(Severity::kWarn,
                "/dev/shm is not a tmpfs mount: its size is that of the filesystem below it",
                {where + ": no /dev/shm or /dev tmpfs mount"},
                "mount a tmpfs of at least 1 GiB on /dev/shm");
      }
      return;
    }
    {
      std::istringstream fields(used);
      std::string source, point, type;
      fields >> source >> point >> type >> options;
    }
    std::optional<uint64_t> size;
    for (const std::string& option : Split(options, ',')) {
      if (option.starts_with("size=")) size = ParseTmpfsSize(option.substr(5), mem_total);
    }
    std::vector<std::string> evidence = {where + ": " + used};
    if (!size) {
      // tmpfs without size= gets half of RAM.
      size = mem_total / 2;
      evidence.push_back(
          node.root.Show("/proc/meminfo") +
          fmt::format(": MemTotal {} (tmpfs default: half)", FormatBytes(mem_total)));
    }
    out.Fact("shm.size", FormatBytes(*size));
    if (*size < kShmCritical) {
      out.Add(Severity::kCritical,
              "/dev/shm is " + FormatBytes(*size) +
                  ": NCCL cannot create its shared-memory segments ('failed to extend "
                  "/dev/shm', unhandled system error at init)",
              evidence,
              "give containers --shm-size=1g or more (or --ipc=host); on Kubernetes "
              "mount an emptyDir with medium: Memory on /dev/shm");
    } else if (*size < kShmRecommended) {
      out.Add(Severity::kWarn,
              "/dev/shm is " + FormatBytes(*size) + ", below the 1 GiB NCCL recommends", evidence,
              "raise it to 1 GiB or more (--shm-size=1g)");
    } else {
      out.Add(Severity::kOk, "/dev/shm is " + FormatBytes(*size), evidence);
    }
  }
};

class MemlockCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    if (node.ib.devices.empty()) {
      return "no RDMA device: the locked-memory limit only caps RDMA memory registration";
    }
    std::string why;
    if (!node.root.Read("/proc/self/limits", &why)) {
      return node.root.Show("/proc/self/limits") + " is " + why;
    }
    return std::nullopt;
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    const std::string file = node.root.Show("/proc/self/limits");
    std::istringstream in(node.root.Read("/proc/self/limits").value_or(""));
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("Max locked memory")) continue;
      std::istringstream fields(line.substr(17));
      std::string soft, hard;
      fields >> soft >> hard;
      out.Fact("memlock", soft);
      const std::vector<std::string> evidence = {file + ": " + std::string(Trim(line))};
      if (soft == "unlimited") {
        out.Add(Severity::kOk, "locked memory is unlimited", evidence);
        return;
      }
      const auto bytes = ParseInt(soft);
      out.Add(Severity::kWarn,
              "locked memory is limited to " +
                  (bytes ? FormatBytes(static_cast<uint64_t>(*bytes)) : soft) +
                  ": RDMA registration of host buffers can fail ('Cannot allocate memory')",
              evidence,
              "raise it to unlimited: ulimit -l unlimited, memlock in "
              "/etc/security/limits.conf, LimitMEMLOCK=infinity for systemd services, "
              "--ulimit memlock=-1 for containers");
      return;
    }
    out.Add(Severity::kWarn, "no 'Max locked memory' line in " + file, {file});
  }
};

}  // namespace

std::unique_ptr<Check> MakeMtuCheck() { return std::make_unique<MtuCheck>(); }
std::unique_ptr<Check> MakeShmCheck() { return std::make_unique<ShmCheck>(); }
std::unique_ptr<Check> MakeMemlockCheck() { return std::make_unique<MemlockCheck>(); }

}  // namespace fabricscope::doctor
