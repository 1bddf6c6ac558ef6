// Whether the node has GPUs, and why none is visible to this process when the default backend
// would fall back to host memory (include/fabricscope/node_gpus.h).
#include "fabricscope/node_gpus.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <system_error>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;

bool Exists(const fs::path& root, std::string_view node_path) {
  std::error_code ec;
  return fs::exists(root / node_path.substr(1), ec);
}

// /dev/nvidia0, /dev/nvidia1, ...: one per GPU (nvidiactl, nvidia-uvm and nvidia-caps are not).
std::vector<std::string> NvidiaDeviceFiles(const fs::path& root) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / "dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("nvidia")) continue;
    const std::string_view rest = std::string_view(name).substr(6);
    if (!rest.empty() &&
        std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(c) != 0; })) {
      found.push_back("/dev/" + name);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool Blank(const std::optional<std::string>& value) {
  return value && (value->empty() || *value == "-1" || *value == "none" || *value == "void");
}

// One reason a GPU of the node may be invisible here: its test and its explanation with the fix.
struct Cause {
  std::string_view name;
  std::function<std::optional<std::string>(const NodeGpus&, const Env&)> explain;
};

std::optional<std::string> HiddenByVariable(const NodeGpus& node, const Env& env) {
  std::vector<std::string> hidden;
  const auto check = [&](bool vendor, std::string_view name) {
    const auto value = env.Get(name);
    if (vendor && Blank(value)) hidden.push_back(fmt::format("{}='{}'", name, *value));
  };
  check(node.nvidia, "CUDA_VISIBLE_DEVICES");
  check(node.nvidia, "NVIDIA_VISIBLE_DEVICES");
  check(node.amd, "HIP_VISIBLE_DEVICES");
  check(node.amd, "ROCR_VISIBLE_DEVICES");
  if (hidden.empty()) return std::nullopt;
  return fmt::format(
      "{} hides every GPU from this process: unset it, or list the devices "
      "(CUDA_VISIBLE_DEVICES=0,1,...)",
      Joined(hidden));
}

std::optional<std::string> SlurmWithoutGpus(const NodeGpus& /*node*/, const Env& env) {
  if (!env.Get("SLURM_JOB_ID")) return std::nullopt;
  for (std::string_view name : {"SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE"}) {
    if (env.Get(name)) return std::nullopt;
  }
  return std::string(
      "this Slurm job requested no GPUs (none of SLURM_JOB_GPUS, SLURM_STEP_GPUS, "
      "SLURM_GPUS_ON_NODE is set), and where Slurm confines devices a task sees only those it "
      "requested: add `#SBATCH --gpus-per-node=8` (or srun --gpus-per-node=N)");
}

std::optional<std::string> ContainerWithoutDevices(const NodeGpus& node, const Env& /*env*/) {
  if (!node.device_files.empty() || node.driver_files.empty()) return std::nullopt;
  return fmt::format(
      "the GPU driver is loaded in the kernel ({}) but there is no device file here (no "
      "/dev/nvidia<N>, no /dev/kfd): a container started without the devices; start it with "
      "them (podman/docker --device nvidia.com/gpu=all or --gpus all; for AMD --device /dev/kfd "
      "--device /dev/dri; on Kubernetes request nvidia.com/gpu or amd.com/gpu in the "
      "container's resources.limits)",
      Joined(node.driver_files));
}

const std::vector<Cause>& Causes() {
  static const std::vector<Cause> causes = {
      {"visible-devices variable", HiddenByVariable},
      {"Slurm job without GPUs", SlurmWithoutGpus},
      {"container without devices", ContainerWithoutDevices},
  };
  return causes;
}

}  // namespace

NodeGpus ProbeNodeGpus(const fs::path& root) {
  NodeGpus node;
  node.device_files = NvidiaDeviceFiles(root);
  node.nvidia = !node.device_files.empty();
  if (Exists(root, "/dev/kfd")) {
    node.device_files.emplace_back("/dev/kfd");
    node.amd = true;
  }
  for (std::string_view path : {"/proc/driver/nvidia", "/sys/module/nvidia"}) {
    if (Exists(root, path)) {
      node.driver_files.emplace_back(path);
      node.nvidia = true;
    }
  }
  if (Exists(root, "/sys/module/amdgpu")) {
    node.driver_files.emplace_back("/sys/module/amdgpu");
    node.amd = true;
  }
  return node;
}

fs::path NodeRoot(const Env& env) {
  const auto root = env.Get("FABRICSCOPE_NODE_ROOT");
  return root && !root->empty() ? fs::path(*root) : fs::path("/");
}

void RefuseHostFallback(const NodeGpus& node, const Env& env, std::string_view probe_reason) {
  if (!node.Any()) return;
  std::vector<std::string> why;
  for (const Cause& cause : Causes()) {
    if (auto text = cause.explain(node, env)) why.push_back(std::move(*text));
  }
  if (why.empty()) {
    why.push_back(fmt::format(
        "the device files are here but the GPU library could not be used ({}): install NCCL "
        "and the CUDA runtime (RCCL and HIP on AMD), put them on LD_LIBRARY_PATH or name them "
        "with --nccl-lib and --gpu-runtime-lib",
        probe_reason));
  }
  const std::string vendors = node.nvidia && node.amd ? "NVIDIA and AMD"
                              : node.nvidia           ? "NVIDIA"
                                                      : "AMD";
  std::vector<std::string> files = node.device_files;
  files.insert(files.end(), node.driver_files.begin(), node.driver_files.end());
  throw UsageError(fmt::format(
      "this node has {} GPUs ({}) but none is visible to this process, so the run would "
      "measure host memory through Gloo instead of the GPUs' network: {}. Give --backend gloo "
      "to measure host memory on purpose",
      vendors, Joined(files), fmt::join(why, "; ")));
}

}  // namespace fabricscope
