// GPUDirect RDMA: can the NICs read and write GPU memory directly? Through a peer-memory
// module (nvidia_peermem, or the older nv_peer_mem), or through Linux dma-buf.
#include <fmt/format.h>

#include <cstdlib>
#include <sstream>

#include "doctor/check.h"

namespace fabricscope::doctor {
namespace {

// The files whose presence NCCL's IB transport takes as "a peer-memory module is loaded".
constexpr const char* kPeerMemoryFiles[] = {
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
    "/sys/module/nv_peer_mem/version",
};
constexpr const char* kPeerModules[] = {"nvidia_peermem", "nv_peer_mem"};

// dma-buf registration of GPU memory needs Linux 5.12 (ibv_reg_dmabuf_mr) and NVIDIA's
// open GPU kernel modules.
constexpr int kDmaBufKernel[2] = {5, 12};

bool KernelAtLeast(const std::string& release, int major, int minor) {
  int a = 0, b = 0;
  char dot = 0;
  std::istringstream in(release);
  if (!(in >> a >> dot >> b) || dot != '.') return false;
  return a > major || (a == major && b >= minor);
}

class GpuDirectCheck : public Check {
 public:
  std::optional<std::string> SkipReason(const NodeContext& node) const override {
    bool nvidia_gpu = false;
    for (const PciDevice* g : node.pci.topology.Gpus())
      nvidia_gpu = nvidia_gpu || g->vendor == 0x10de;
    if (!nvidia_gpu && !node.root.Exists("/sys/module/nvidia")) {
      return "no NVIDIA GPU on the PCI bus and no nvidia driver loaded";
    }
    if (node.ib.devices.empty()) {
      return "no RDMA device (" + node.ib.unavailable +
             "): GPUDirect RDMA needs an InfiniBand or RoCE NIC";
    }
    return std::nullopt;
  }

  void Run(const NodeContext& node, CheckOutput& out) const override {
    std::vector<std::string> evidence;
    std::string modules_why;
    const auto modules = node.root.Read("/proc/modules", &modules_why);
    for (const char* module : kPeerModules) {
      if (!modules) continue;
      std::istringstream in(*modules);
      for (std::string line; std::getline(in, line);) {
        if (line.starts_with(std::string(module) + " ")) {
          out.Fact("gpudirect", module);
          out.Add(Severity::kOk, std::string("GPUDirect RDMA available: ") + module + " is loaded",
                  {node.root.Show("/proc/modules") + ": " + line});
          return;
        }
      }
    }
    evidence.push_back(node.root.Show("/proc/modules") + ": " +
                       (modules ? "no nvidia_peermem, no nv_peer_mem" : modules_why));
    for (const char* file : kPeerMemoryFiles) {
      if (const auto version = node.root.ReadLine(file)) {
        out.Fact("gpudirect", "peer memory");
        out.Add(Severity::kOk, "GPUDirect RDMA available: a peer-memory module is registered",
                {node.root.Show(file) + ": " + *version});
        return;
      }
      evidence.push_back(node.root.Show(file) + ": absent");
    }

    // No peer-memory module: dma-buf is the other way.
    const std::string release = node.root.ReadLine("/proc/sys/kernel/osrelease").value_or("");
    const std::string nvrm = node.root.ReadLine("/proc/driver/nvidia/version").value_or("");
    const bool new_kernel = KernelAtLeast(release, kDmaBufKernel[0], kDmaBufKernel[1]);
    const bool open_module = nvrm.find("Open Kernel Module") != std::string::npos;
    evidence.push_back(node.root.Show("/proc/sys/kernel/osrelease") + ": " +
                       (release.empty() ? "absent" : release));
    evidence.push_back(node.root.Show("/proc/driver/nvidia/version") + ": " +
                       (nvrm.empty() ? "absent" : nvrm));
    const auto dmabuf = node.env.find("NCCL_DMABUF_ENABLE");
    const bool dmabuf_off = dmabuf != node.env.end() && Trim(dmabuf->second.value) == "0";
    if (new_kernel && open_module && !dmabuf_off) {
      out.Fact("gpudirect", "dma-buf");
      out.Add(Severity::kOk,
              "GPUDirect RDMA through dma-buf: Linux " + release +
                  " and NVIDIA's open kernel modules (no peer-memory module needed)",
              evidence);
      return;
    }
    out.Fact("gpudirect", "none");
    std::string why = "neither nvidia_peermem nor nv_peer_mem is loaded";
    if (dmabuf_off) {
      why += ", and NCCL_DMABUF_ENABLE=0 turns dma-buf off";
    } else if (!new_kernel) {
      why += fmt::format(", and dma-buf needs Linux {}.{} or later", kDmaBufKernel[0],
                         kDmaBufKernel[1]);
    } else {
      why += ", and dma-buf needs NVIDIA's open GPU kernel modules";
    }
    out.Add(Severity::kCritical,
            "GPUDirect RDMA is inactive: " + why +
                "; NCCL stages every inter-node transfer through host memory",
            evidence,
            "modprobe nvidia_peermem, and list it in /etc/modules-load.d/ so it loads at boot "
            "(or install the open kernel modules on Linux 5.12+ for dma-buf)");
  }
};

}  // namespace

std::unique_ptr<Check> MakeGpuDirectCheck() { return std::make_unique<GpuDirectCheck>(); }

}  // namespace fabricscope::doctor
