// Whether this node has GPUs, from the files their drivers create, apart from whether this
// process can use one: a node with GPUs where the default backend falls back to host memory
// would measure the wrong thing and could say OK, so `run` and `check` refuse it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/env.h"

namespace fabricscope {

// The GPU driver files found on a node, as node paths ("/dev/nvidia0", "/sys/module/amdgpu").
struct NodeGpus {
  // Device nodes a process computes through: /dev/nvidia<N> (NVIDIA), /dev/kfd (AMD ROCm).
  std::vector<std::string> device_files;
  // The driver loaded in the kernel: /proc/driver/nvidia, /sys/module/nvidia,
  // /sys/module/amdgpu. Seen from a container too, which shares the host's kernel.
  std::vector<std::string> driver_files;
  bool nvidia = false;
  bool amd = false;

  bool Any() const { return nvidia || amd; }
};

// Looks for the files of NodeGpus below `root` ("/" on a real node; a directory with a fake
// node's tree in a test). Reads only the file system.
NodeGpus ProbeNodeGpus(const std::filesystem::path& root);

// The node's root: FABRICSCOPE_NODE_ROOT when set (a test's fake node), else "/".
std::filesystem::path NodeRoot(const Env& env);

// Throws UsageError (exit 2) when `node` has GPUs but the default backend chose host memory
// because none is usable here (`probe_reason`: why the GPU library probe failed). The message
// says why none is visible (CUDA_VISIBLE_DEVICES and the like, a Slurm job without GPUs, a
// container without the device files, the library) and how to fix it, and that
// `--backend gloo` runs on host memory on purpose. Reads the variables from `env`.
void RefuseHostFallback(const NodeGpus& node, const Env& env, std::string_view probe_reason);

}  // namespace fabricscope
