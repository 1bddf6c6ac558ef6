// The registry of the variables fabricscope reads, and the one reader of the process
// environment. Built into the library and into the NCCL profiler plugin, which loads without
// the library: it needs nothing but the standard library.
#include "fabricscope/env.h"

#include <algorithm>
#include <array>
#include <stdexcept>

extern char** environ;

namespace fabricscope {
namespace {

constexpr std::string_view kLaunchers = "run, check, doctor, locate";
constexpr std::string_view kJobs = "run, check, locate";
constexpr std::string_view kGpuJobs = "run, check, locate (nccl, rccl)";
constexpr std::string_view kPlugin = "profiler plugin";
constexpr std::string_view kUnset = "unset";

// docs/env.md lists the same rows in the same order (tests/core/env_test.cc compares them).
constexpr std::array kVariables = {
    // How this process was started (src/launch/launch_detect.cc, docs/launch.md).
    EnvVariable{"OMPI_COMM_WORLD_RANK", kUnset,
                "this process's rank under Open MPI's mpirun: the mpi launcher", kLaunchers},
    EnvVariable{"OMPI_COMM_WORLD_SIZE", kUnset,
                "the process count under mpirun, and under PMIx without SLURM_NTASKS", kLaunchers},
    EnvVariable{"OMPI_COMM_WORLD_LOCAL_RANK", kUnset,
                "the process's index on its host under mpirun (and PMIx)", kLaunchers},
    EnvVariable{"PMIX_RANK", kUnset,
                "a PMIx server started this process (srun --mpi=pmix, prterun): the mpi launcher",
                kLaunchers},
    EnvVariable{"PMI_RANK", kUnset,
                "MPICH's Hydra numbers the processes (without SLURM_PROCID): the mpi launcher",
                kLaunchers},
    EnvVariable{"PMI_SIZE", kUnset, "the process count under Hydra", kLaunchers},
    EnvVariable{"MPI_LOCALRANKID", kUnset, "the process's index on its host under Hydra",
                kLaunchers},
    EnvVariable{"SLURM_PROCID", kUnset,
                "the task's rank under srun without PMIx (the env launcher)", kLaunchers},
    EnvVariable{"SLURM_NTASKS", kUnset,
                "the task count under srun; more than one makes a job of processes", kLaunchers},
    EnvVariable{"SLURM_STEP_ID", kUnset,
                "srun's step: without it SLURM_PROCID is a batch script's, one process; with "
                "SLURM_JOB_ID it picks the store's port",
                kLaunchers},
    EnvVariable{"SLURM_LOCALID", kUnset, "the task's index on its node under srun", kLaunchers},
    EnvVariable{"SLURM_STEP_NODELIST", kUnset,
                "the step's hosts: the first one serves the store (unless MASTER_ADDR)",
                kLaunchers},
    EnvVariable{"SLURM_JOB_NODELIST", kUnset, "the job's hosts, when SLURM_STEP_NODELIST is unset",
                kLaunchers},
    EnvVariable{"SLURM_JOB_ID", kUnset,
                "the store's port under srun (unless MASTER_PORT); the profiler's job label",
                "run, check, doctor, locate; profiler plugin"},
    EnvVariable{"SLURM_NODEID", kUnset,
                "the task's node: task 0 off the first node is a usage error (unless "
                "MASTER_ADDR)",
                kLaunchers},
    EnvVariable{"RANK", kUnset, "this process's rank, torchrun's convention: the env launcher",
                kLaunchers},
    EnvVariable{"WORLD_SIZE", kUnset, "the process count, torchrun's convention", kLaunchers},
    EnvVariable{"LOCAL_RANK", kUnset,
                "the process's index on its host (torchrun); picks its first device", kLaunchers},
    EnvVariable{"MASTER_ADDR", kUnset, "the host of process 0, which serves the store", kLaunchers},
    EnvVariable{"MASTER_PORT", kUnset,
                "the store's TCP port; 0 lets process 0 pick one and publish it in "
                "FABRICSCOPE_PORT_FILE",
                kLaunchers},
    EnvVariable{"FABRICSCOPE_PORT_FILE", kUnset,
                "with MASTER_PORT=0: the file, readable by every process, where process 0 "
                "publishes the store's port",
                kLaunchers},
    // The job (src/launch/launcher.cc, docs/benchmark.md).
    EnvVariable{"NCCL_TESTS_SPLIT", kUnset,
                "splits the ranks into communicators by colour: \"AND 0x7\", \"OR n\", \"MOD n\", "
                "\"DIV n\" (nccl-tests)",
                kJobs},
    EnvVariable{"NCCL_TESTS_SPLIT_MASK", kUnset,
                "colour = rank AND mask, the mask in hex as nccl-tests reads it (f = 15, 10 = 16); "
                "read before NCCL_TESTS_SPLIT",
                kJobs},
    EnvVariable{"NCCL_TESTS_MIN_BW", kUnset,
                "the average bus bandwidth (GB/s) the run must reach: below 0.9 x this is "
                "FAILED, exit 1",
                kJobs},
    EnvVariable{"GLOO_SOCKET_IFNAME", kUnset,
                "the interface Gloo listens on, instead of the one that reaches the store", kJobs},
    EnvVariable{"NCCL_DEBUG", kUnset,
                "INFO or TRACE: fabricscope reads NCCL's log for the transport of each rank",
                kGpuJobs},
    EnvVariable{"NCCL_DEBUG_FILE", kUnset,
                "where NCCL writes that log; unset: a temporary file, echoed to stderr", kGpuJobs},
    // A GPU node whose GPUs none is visible here: run and check refuse the host-memory fallback
    // (src/node/node_gpus.cc, docs/gpu.md).
    EnvVariable{"CUDA_VISIBLE_DEVICES", kUnset,
                "empty, -1, none or void: hides the NVIDIA GPUs; named in the refusal of a node "
                "whose GPUs none is visible (exit 2)",
                "run, check"},
    EnvVariable{"NVIDIA_VISIBLE_DEVICES", kUnset,
                "the NVIDIA container runtime's: empty, none or void starts a container without "
                "GPUs; named the same way",
                "run, check"},
    EnvVariable{"HIP_VISIBLE_DEVICES", kUnset,
                "empty or -1: hides the AMD GPUs; named the same way", "run, check"},
    EnvVariable{"ROCR_VISIBLE_DEVICES", kUnset,
                "empty or -1: hides the AMD GPUs from ROCm; named the same way", "run, check"},
    EnvVariable{"SLURM_JOB_GPUS", kUnset,
                "the job's GPUs under Slurm: with SLURM_STEP_GPUS and SLURM_GPUS_ON_NODE unset "
                "too, a job on a GPU node that requested none is refused (exit 2)",
                "run, check"},
    EnvVariable{"SLURM_STEP_GPUS", kUnset, "the step's GPUs under srun (see SLURM_JOB_GPUS)",
                "run, check"},
    EnvVariable{"SLURM_GPUS_ON_NODE", kUnset,
                "the GPUs Slurm gave the job on this node (see SLURM_JOB_GPUS)", "run, check"},
    EnvVariable{"FABRICSCOPE_NODE_ROOT", kUnset,
                "where the node's device files are looked for (/dev/nvidia<N>, /dev/kfd, "
                "/proc/driver/nvidia, /sys/module/nvidia, amdgpu); unset: / (a test's fake node)",
                "run, check"},
    EnvVariable{"FABRICSCOPE_DB", kUnset,
                "the results store every command records in when --db is not given: a SQLite "
                "file (or sqlite:///path) or a postgresql:// URL (docs/fleet.md); unset: none",
                "run, check, locate, doctor, watch, fabric, history"},
    EnvVariable{"PATH", "/bin:/usr/bin",
                "where --drain and --resume look for scontrol (and kubectl); the tools "
                "themselves are started from it too",
                "check, doctor, locate, watch (--drain)"},
    // Recorded with the results ("env" in the JSON): what changes a library's behaviour.
    EnvVariable{"NCCL_*", kUnset,
                "recorded with the results; doctor lints them (unknown names, bad values)",
                "run, check, locate, doctor"},
    // The families of NCCL's neighbours, linted by doctor against their sources' tables.
    EnvVariable{"RCCL_*", kUnset, "doctor lints them against RCCL's source (unknown names)",
                "doctor"},
    EnvVariable{"HSA_*", kUnset,
                "doctor lints them against the ROCm runtime's source; names it lacks are not "
                "checked",
                "doctor"},
    EnvVariable{"OFI_NCCL_*", kUnset,
                "doctor lints them against aws-ofi-nccl's source (unknown, removed names)",
                "doctor"},
    EnvVariable{"FI_*", kUnset,
                "doctor: those aws-ofi-nccl reads or sets are known, other names not checked",
                "doctor"},
    EnvVariable{"FABRICSCOPE_*", kUnset, "recorded with the results", kJobs},
    EnvVariable{"GLOO_*", kUnset, "recorded with the results", kJobs},
    EnvVariable{"OMPI_*", kUnset, "recorded with the results", kJobs},
    EnvVariable{"UCX_*", kUnset, "recorded with the results", kJobs},
    EnvVariable{"CUDA_*", kUnset, "recorded with the results", kJobs},
    // The NCCL profiler plugin (src/profiler/settings.cc, docs/watch.md).
    EnvVariable{"FABRICSCOPE_PROFILER_ENABLE", "1",
                "0: the plugin does nothing at all: no event, file, thread or port", kPlugin},
    EnvVariable{"FABRICSCOPE_PROFILER_JSONL", "1", "0: no JSONL files", kPlugin},
    EnvVariable{"FABRICSCOPE_PROFILER_DUMP_DIR", "fabricscope-profiler-<job>",
                "where each process writes <hostname>-<pid>.jsonl", kPlugin},
    EnvVariable{"FABRICSCOPE_PROFILER_PROM_LISTEN", kUnset,
                "ADDRESS:PORT of the Prometheus endpoint (port 0: the kernel picks); unset: none",
                kPlugin},
    EnvVariable{"FABRICSCOPE_PROFILER_PROM_SD_DIR", "the dump directory",
                "where the endpoint's file_sd target file goes", kPlugin},
    EnvVariable{"FABRICSCOPE_PROFILER_INTERVAL_MS", "1000",
                "how often completed records are drained to the outputs", kPlugin},
    EnvVariable{"FABRICSCOPE_PROFILER_RING", "4096",
                "completed records kept per communicator between drains", kPlugin},
    EnvVariable{"FABRICSCOPE_PROFILER_ACTIVE", "256", "collectives in flight per communicator",
                kPlugin},
    EnvVariable{"FABRICSCOPE_PROFILER_MIN_BYTES", "0", "smaller collectives are not recorded",
                kPlugin},
    EnvVariable{"TORCHELASTIC_RUN_ID", kUnset, "the job label when SLURM_JOB_ID is unset", kPlugin},
    EnvVariable{"FABRICSCOPE_JOB_ID", kUnset,
                "the job label when SLURM_JOB_ID and TORCHELASTIC_RUN_ID are unset (else "
                "\"unknown\")",
                kPlugin},
};

bool IsFamily(std::string_view name) { return name.ends_with('*'); }

// The registry entry for `name`, which must be a variable (family = false) or a family.
const EnvVariable& Registered(std::string_view name, bool family) {
  const EnvVariable* v = FindEnvVariable(name);
  if (v == nullptr || IsFamily(v->name) != family) {
    throw std::logic_error(std::string(family ? "environment variable family '"
                                              : "environment "
                                                "variable '") +
                           std::string(name) +
                           "' is read but not listed in src/core/env.cc: add it there and to "
                           "docs/env.md");
  }
  return *v;
}

}  // namespace

std::span<const EnvVariable> EnvVariables() { return kVariables; }

const EnvVariable* FindEnvVariable(std::string_view name) {
  const auto it = std::find_if(kVariables.begin(), kVariables.end(),
                               [&](const EnvVariable& v) { return v.name == name; });
  return it == kVariables.end() ? nullptr : &*it;
}

bool VariableShapesRun(std::string_view name) {
  // What NCCL reads only for its log (src/debug.cc), its dumps (graph/topo.cc, graph/search.cc),
  // its profiler and RAS plugins, and the interface each host names for itself.
  constexpr std::string_view kLocalOnly[] = {
      "NCCL_DEBUG",
      "NCCL_DEBUG_FILE",
      "NCCL_DEBUG_SUBSYS",
      "NCCL_DEBUG_TIMESTAMP_FORMAT",
      "NCCL_DEBUG_TIMESTAMP_LEVELS",
      "NCCL_WARN_ENABLE_DEBUG_INFO",
      "NCCL_TOPO_DUMP_FILE",
      "NCCL_GRAPH_DUMP_FILE",
      "NCCL_PROFILER_PLUGIN",
      "NCCL_SOCKET_IFNAME",
      "GLOO_SOCKET_IFNAME",
      "NCCL_HOSTID",
  };
  constexpr std::string_view kLocalFamilies[] = {"NCCL_INSPECTOR_", "NCCL_RAS_", "NCCL_PROFILE_"};
  if (std::find(std::begin(kLocalOnly), std::end(kLocalOnly), name) != std::end(kLocalOnly)) {
    return false;
  }
  return std::none_of(std::begin(kLocalFamilies), std::end(kLocalFamilies),
                      [&](std::string_view prefix) { return name.starts_with(prefix); });
}

Env::Env() : variables_(std::make_shared<const Variables>()) {}

Env::Env(Variables variables)
    : variables_(std::make_shared<const Variables>(std::move(variables))) {}

Env Env::Process() {
  Variables variables;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    variables.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return Env(std::move(variables));
}

std::optional<std::string> Env::Get(std::string_view name) const {
  Registered(name, false);
  const auto it = variables_->find(std::string(name));
  if (it == variables_->end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, std::string>> Env::Family(std::string_view family) const {
  Registered(family, true);
  const std::string prefix(family.substr(0, family.size() - 1));
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = variables_->lower_bound(prefix);
       it != variables_->end() && it->first.starts_with(prefix); ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

}  // namespace fabricscope
