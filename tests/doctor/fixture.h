// Node trees for the doctor tests, written as files in a temporary directory the way Linux
// lays out /sys and /proc: a healthy 8-GPU, 8-NIC node by default, and one knob per fault.
#pragma once

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "fabricscope/doctor.h"

namespace fabricscope::doctor::testing {

// What the tree looks like; the defaults are a healthy DGX-H100-like node: two sockets,
// eight GPUs and eight 400G InfiniBand HCAs, each pair behind one PCIe switch.
struct NodeSpec {
  std::string host = "gpu-node";
  bool roce = false;  // Ethernet link layer (RoCE) instead of InfiniBand
  std::array<int, 8> nic_switch = {0, 1, 2, 3, 4, 5, 6, 7};  // the GPU switch each NIC is under
  bool peermem = true;                                       // nvidia_peermem loaded
  std::string kernel = "5.15.0-91-generic";
  bool open_kernel_module = false;  // NVIDIA's open GPU kernel modules
  std::string driver_version = "535.129.03";
  std::array<std::string, 8> port_state = {};  // "" = "4: ACTIVE"
  std::array<std::string, 8> phys_state = {};  // "" = "5: LinkUp"
  std::array<std::string, 8> rate = {};        // "" = "400 Gb/sec (4X NDR)"
  std::string hca_type = "MT4129";             // sysfs hca_type of every HCA ("" none)
  std::string nic_device = "0x1021";           // PCI device id of every HCA (ConnectX-7)
  int errors_on_port = -1;                     // a port with non-zero error counters
  bool roce_v2_gids = true;                    // RoCE: v2 GIDs present
  bool roce_ip = true;                         // RoCE: the interfaces have IPv4 addresses (GIDs)
  int mtu = 9000;                              // RoCE netdev MTU
  std::string shm_option = "size=67108864k";   // /proc/mounts options of /dev/shm ("" = none)
  bool shm_mount = true;
  std::string memlock = "unlimited";
  bool numa_known = true;  // numa_node files say 0/1 (else -1)
  int gpu0_link_width = 16;
  bool gpu0_driver = true;
  std::vector<std::string> nccl_conf;  // lines of /etc/nccl.conf
};

// A node tree on disk, removed with the object.
class NodeTree {
 public:
  NodeTree(const std::filesystem::path& dir, const NodeSpec& spec);
  ~NodeTree();
  NodeTree(const NodeTree&) = delete;
  NodeTree& operator=(const NodeTree&) = delete;

  const std::filesystem::path& root() const { return root_; }
  // Writes `text` to the node's `path` (creating directories).
  void Write(const std::string& path, const std::string& text) const;

 private:
  std::filesystem::path root_;
};

// A fresh directory for one test, under the system's temporary directory.
std::filesystem::path TestDir(const std::string& tag);

// Runs the doctor on `root` with `env` as the NCCL variables.
NodeReport Diagnose(const std::filesystem::path& root,
                    const std::map<std::string, std::string>& env = {},
                    const std::string& nccl_log = "", const std::string& topo_file = "");

// The result of one check; fails the test when it is missing.
const CheckResult& Find(const NodeReport& report, const std::string& check);

// True when some finding of the check has this severity and its sentence as the text form
// shows it ("where: what") contains `text`.
bool Has(const CheckResult& check, Severity severity, const std::string& text);

// Every finding in the text form, evidence included, for failure messages.
std::string Dump(const NodeReport& report);

}  // namespace fabricscope::doctor::testing
