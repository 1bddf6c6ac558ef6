#include "doctor/fixture.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace fabricscope::doctor::testing {
namespace fs = std::filesystem;
namespace {

// The first bus of each GPU/NIC pair's PCIe tree: four per socket, as on a DGX H100.
constexpr int kBuses[8] = {0x17, 0x2a, 0x3d, 0x50, 0x97, 0xaa, 0xbd, 0xd0};

std::string Bdf(int bus, int device = 0, int function = 0) {
  return fmt::format("0000:{:02x}:{:02x}.{}", bus, device, function);
}

class Writer {
 public:
  explicit Writer(const fs::path& root) : root_(root) {}

  void File(const std::string& path, const std::string& text) const {
    const fs::path p = root_ / path;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void Dir(const std::string& path) const { fs::create_directories(root_ / path); }
  // A symbolic link at `path` (relative to the root) pointing at `target`, as written.
  void Link(const std::string& path, const std::string& target) const {
    const fs::path p = root_ / path;
    fs::create_directories(p.parent_path());
    fs::create_directory_symlink(target, p);
  }

  // A PCI function at `dir` (below sys/devices) with its sysfs attributes and its
  // /sys/bus/pci/devices link.
  void Pci(const std::string& dir, uint32_t class_code, uint16_t vendor, int numa, int width = 16,
           int max_width = 16, const std::string& driver = "") const {
    File(dir + "/class", fmt::format("0x{:06x}\n", class_code));
    File(dir + "/vendor", fmt::format("0x{:04x}\n", vendor));
    File(dir + "/numa_node", std::to_string(numa) + "\n");
    File(dir + "/current_link_speed", "32.0 GT/s PCIe\n");
    File(dir + "/max_link_speed", "32.0 GT/s PCIe\n");
    File(dir + "/current_link_width", std::to_string(width) + "\n");
    File(dir + "/max_link_width", std::to_string(max_width) + "\n");
    if (!driver.empty()) Link(dir + "/driver", "/sys/bus/pci/drivers/" + driver);
    const std::string bdf = fs::path(dir).filename().string();
    Link("sys/bus/pci/devices/" + bdf, "../../../" + dir.substr(4));  // dir starts "sys/"
  }

 private:
  fs::path root_;
};

}  // namespace

fs::path TestDir(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::temp_directory_path() / fmt::format("fabricscope-doctor-{}-{}-{}", getpid(),
                                                         info != nullptr ? info->name() : "x", tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

NodeTree::NodeTree(const fs::path& dir, const NodeSpec& spec) : root_(dir) {
  fs::remove_all(root_);
  fs::create_directories(root_);
  const Writer w(root_);
  w.File("etc/hostname", spec.host + "\n");
  w.File("proc/sys/kernel/hostname", spec.host + "\n");
  w.File("proc/sys/kernel/osrelease", spec.kernel + "\n");
  w.File("sys/module/nvidia/version", spec.driver_version + "\n");
  w.File("proc/driver/nvidia/version",
         (spec.open_kernel_module
              ? "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  " + spec.driver_version +
                    "  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Oct 19 18:46:10 UTC 2023\n"
              : "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + spec.driver_version +
                    "  Thu Oct 19 18:56:32 UTC 2023\n") +
             "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n");
  std::string modules;
  if (spec.peermem) {
    modules += "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n";
    w.File("sys/module/nvidia_peermem/version", spec.driver_version + "\n");
  }
  modules +=
      "nvidia_uvm 1437696 0 - Live 0x0000000000000000 (OE)\n"
      "nvidia 56598528 3 nvidia_peermem,nvidia_uvm, Live 0x0000000000000000 (OE)\n"
      "mlx5_ib 479232 0 - Live 0x0000000000000000 (OE)\n"
      "ib_uverbs 163840 2 nvidia_peermem,mlx5_ib, Live 0x0000000000000000 (OE)\n"
      "mlx5_core 2129920 1 mlx5_ib, Live 0x0000000000000000 (OE)\n";
  w.File("proc/modules", modules);
  w.File("proc/meminfo", "MemTotal:       2113245184 kB\nMemFree:        2000000000 kB\n");
  std::string mounts =
      "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
      "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
      "tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755 0 0\n";
  if (spec.shm_mount) {
    mounts += "shm /dev/shm tmpfs rw,nosuid,nodev" +
              (spec.shm_option.empty() ? "" : "," + spec.shm_option) + " 0 0\n";
  }
  w.File("proc/mounts", mounts);
  w.Dir("dev/shm");
  w.File("proc/self/limits",
         "Limit                     Soft Limit           Hard Limit           Units     \n"
         "Max cpu time              unlimited            unlimited            seconds   \n"
         "Max open files            1048576              1048576              files     \n" +
             fmt::format("Max locked memory         {:<21}{:<21}bytes     \n", spec.memlock,
                         spec.memlock) +
             "Max address space         unlimited            unlimited            bytes     \n");
  if (!spec.nccl_conf.empty()) {
    std::string conf;
    for (const auto& line : spec.nccl_conf) conf += line + "\n";
    w.File("etc/nccl.conf", conf);
  }
  w.File("sys/devices/system/node/node0/cpulist", "0-55,112-167\n");
  w.File("sys/devices/system/node/node1/cpulist", "56-111,168-223\n");

  // The board's own devices: a BMC display and the management NIC.
  w.Pci("sys/devices/pci0000:00/0000:00:1c.0", 0x060400, 0x8086, spec.numa_known ? 0 : -1);
  w.Pci("sys/devices/pci0000:00/0000:00:1c.0/0000:03:00.0", 0x030000, 0x1a03,
        spec.numa_known ? 0 : -1, 1, 1, "ast");
  w.Pci("sys/devices/pci0000:00/0000:00:1c.4", 0x060400, 0x8086, spec.numa_known ? 0 : -1);
  const std::string mgmt = "sys/devices/pci0000:00/0000:00:1c.4/0000:04:00.0";
  w.Pci(mgmt, 0x020000, 0x8086, spec.numa_known ? 0 : -1, 4, 4, "igb");
  w.File(mgmt + "/net/eno1/mtu", "1500\n");
  w.Link("sys/class/net/eno1", "../../" + mgmt.substr(4) + "/net/eno1");
  w.File("sys/devices/virtual/net/lo/mtu", "65536\n");
  w.Link("sys/class/net/lo", "../../devices/virtual/net/lo");

  // Each socket: four PCIe switches, each with a GPU and (by default) one NIC below it.
  std::array<int, 8> nics_below = {};
  std::array<std::string, 8> switch_dir;
  for (int s = 0; s < 8; ++s) {
    const int bus = kBuses[s];
    const int numa = spec.numa_known ? s / 4 : -1;
    const std::string host_bridge = fmt::format("sys/devices/pci0000:{:02x}", bus);
    const std::string root_port = host_bridge + "/" + Bdf(bus, 1);
    const std::string upstream = root_port + "/" + Bdf(bus + 1);
    w.Pci(root_port, 0x060400, 0x8086, numa);
    w.Pci(upstream, 0x060400, 0x1000, numa);
    switch_dir[s] = upstream;
    const std::string downstream = upstream + "/" + Bdf(bus + 2, 0);
    w.Pci(downstream, 0x060400, 0x1000, numa);
    const std::string gpu = downstream + "/" + Bdf(bus + 3);
    const bool gpu0 = s == 0;
    w.Pci(gpu, 0x030200, 0x10de, numa, gpu0 ? spec.gpu0_link_width : 16, 16,
          gpu0 && !spec.gpu0_driver ? "" : "nvidia");
  }
  for (int n = 0; n < 8; ++n) {
    const int s = spec.nic_switch[static_cast<size_t>(n)];
    const int k = ++nics_below[static_cast<size_t>(s)];
    const int bus = kBuses[s];
    const int numa = spec.numa_known ? s / 4 : -1;
    const std::string downstream = switch_dir[static_cast<size_t>(s)] + "/" + Bdf(bus + 2, k);
    w.Pci(downstream, 0x060400, 0x1000, numa);
    const int nic_bus = bus + 3 + k;
    const std::string nic = downstream + "/" + Bdf(nic_bus);
    w.Pci(nic, spec.roce ? 0x020000 : 0x020700, 0x15b3, numa, 16, 16, "mlx5_core");
    const std::string name = fmt::format("mlx5_{}", n);
    const std::string netdev =
        spec.roce ? fmt::format("enp{}s0np0", nic_bus) : fmt::format("ibp{}s0", nic_bus);
    w.File(nic + "/net/" + netdev + "/mtu", std::to_string(spec.roce ? spec.mtu : 4092) + "\n");
    w.Link("sys/class/net/" + netdev, "../../" + nic.substr(4) + "/net/" + netdev);

    const std::string ib = nic + "/infiniband/" + name;
    w.Link("sys/class/infiniband/" + name, "../../" + ib.substr(4));
    w.Link(ib + "/device", "../../../" + Bdf(nic_bus));
    w.File(ib + "/fw_ver", "28.39.1002\n");
    if (!spec.hca_type.empty()) w.File(ib + "/hca_type", spec.hca_type + "\n");
    w.File(nic + "/device", spec.nic_device + "\n");
    const std::string port = ib + "/ports/1";
    const auto pick = [n](const std::array<std::string, 8>& v, const std::string& fallback) {
      return v[static_cast<size_t>(n)].empty() ? fallback : v[static_cast<size_t>(n)];
    };
    w.File(port + "/state", pick(spec.port_state, "4: ACTIVE") + "\n");
    w.File(port + "/phys_state", pick(spec.phys_state, "5: LinkUp") + "\n");
    w.File(port + "/rate", pick(spec.rate, "400 Gb/sec (4X NDR)") + "\n");
    w.File(port + "/link_layer", std::string(spec.roce ? "Ethernet" : "InfiniBand") + "\n");
    struct GidEntry {
      std::string value, type;
    };
    std::vector<GidEntry> gids;
    const std::string link_local = fmt::format("fe80:0000:0000:0000:b8ce:f6ff:fea1:{:04x}", n);
    if (!spec.roce) {
      gids = {{link_local, "IB/RoCE v1"}};
    } else {
      const std::string ipv4 = fmt::format("0000:0000:0000:0000:0000:ffff:0a00:{:04x}", n + 1);
      gids = {{link_local, "IB/RoCE v1"},
              {link_local, spec.roce_v2_gids ? "RoCE v2" : "IB/RoCE v1"}};
      if (spec.roce_ip) {
        gids.push_back({ipv4, "IB/RoCE v1"});
        gids.push_back({ipv4, spec.roce_v2_gids ? "RoCE v2" : "IB/RoCE v1"});
      }
    }
    for (size_t g = 0; g < gids.size(); ++g) {
      w.File(port + "/gids/" + std::to_string(g), gids[g].value + "\n");
      w.File(port + "/gid_attrs/types/" + std::to_string(g), gids[g].type + "\n");
      if (spec.roce) w.File(port + "/gid_attrs/ndevs/" + std::to_string(g), netdev + "\n");
    }
    // The rest of the 255-entry table: empty slots.
    for (size_t g = gids.size(); g < 8; ++g) {
      w.File(port + "/gids/" + std::to_string(g), "0000:0000:0000:0000:0000:0000:0000:0000\n");
    }
    const bool errors = spec.errors_on_port == n;
    for (const char* counter : {"symbol_error", "link_error_recovery", "link_downed",
                                "port_rcv_errors", "port_rcv_remote_physical_errors",
                                "local_link_integrity_errors", "excessive_buffer_overrun_errors",
                                "port_xmit_discards", "port_rcv_switch_relay_errors"}) {
      int value = 0;
      if (errors && std::string(counter) == "symbol_error") value = 17;
      if (errors && std::string(counter) == "link_downed") value = 2;
      w.File(port + "/counters/" + counter, std::to_string(value) + "\n");
    }
    if (spec.roce) {
      for (const char* counter : {"out_of_sequence", "packet_seq_err", "local_ack_timeout_err"}) {
        w.File(port + "/hw_counters/" + counter, "0\n");
      }
    }
  }
}

NodeTree::~NodeTree() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void NodeTree::Write(const std::string& path, const std::string& text) const {
  Writer(root_).File(path.starts_with("/") ? path.substr(1) : path, text);
}

NodeReport Diagnose(const fs::path& root, const std::map<std::string, std::string>& env,
                    const std::string& nccl_log, const std::string& topo_file) {
  DoctorOptions options;
  options.root = root.string();
  options.env = env;
  options.nccl_log = nccl_log;
  options.topo_file = topo_file;
  return RunDoctor(options);
}

const CheckResult& Find(const NodeReport& report, const std::string& check) {
  for (const auto& c : report.checks) {
    if (c.name == check) return c;
  }
  ADD_FAILURE() << "no check " << check;
  static const CheckResult kNone;
  return kNone;
}

bool Has(const CheckResult& check, Severity severity, const std::string& text) {
  for (const Finding& f : check.findings) {
    // The sentence as the text form prints it: "where: what".
    const std::string sentence = f.where.empty() ? f.what : f.where + ": " + f.what;
    if (f.severity == severity && sentence.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string Dump(const NodeReport& report) {
  FindingTextStyle style;
  style.ok_details = true;
  std::string out;
  for (const auto& c : report.checks) out += FindingsText(c.findings, style);
  return out;
}

}  // namespace fabricscope::doctor::testing
