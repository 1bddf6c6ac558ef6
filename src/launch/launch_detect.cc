// Which launcher started this process, from the variables each one sets.
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <ostream>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/host_list.h"
#include "fabricscope/launch.h"
#include "fabricscope/strings.h"
#include "fabricscope/tcp_store.h"

namespace fabricscope {
namespace {

int ParseInt(const std::string& name, const std::string& value, int lo) {
  const std::optional<int> v = ToNumber<int>(value);
  if (!v || *v < lo) {
    throw UsageError("environment variable " + name + "='" + value + "' is not a valid number" +
                     (lo > 0 ? " (at least " + std::to_string(lo) + ")" : " (0 or more)"));
  }
  return *v;
}

// The first of `names` that is set, parsed; nullopt when none is.
std::optional<int> FirstInt(const Env& env, std::initializer_list<const char*> names, int lo) {
  for (const char* name : names) {
    if (const auto value = env.Get(name)) return ParseInt(name, *value, lo);
  }
  return std::nullopt;
}

// Where a process sits among those of its host, from whichever launcher set it: torchrun's
// LOCAL_RANK, srun's SLURM_LOCALID, Open MPI's, MPICH's.
constexpr std::initializer_list<const char*> kLocalRankVariables = {
    "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"};

// An MPI launcher: the variables that say it started this process and what they tell.
struct MpiLauncher {
  const char* name;
  const char* rank;                               // set by it for every process
  std::initializer_list<const char*> size;        // the first one set is the size
  std::initializer_list<const char*> local_rank;  // the first one set is the local rank
  const char* unless;                             // not this launcher when this is set
  const char* why;                                // for the stderr line
};
// In order: mpirun inside a Slurm allocation also sees SLURM_*, srun --mpi=pmix sets both
// PMIX_RANK and SLURM_*, and srun --mpi=pmi2 sets PMI_RANK, which Open MPI cannot use.
const MpiLauncher kMpiLaunchers[] = {
    {"Open MPI's mpirun",
     "OMPI_COMM_WORLD_RANK",
     {"OMPI_COMM_WORLD_SIZE"},
     {"OMPI_COMM_WORLD_LOCAL_RANK"},
     nullptr,
     "MPI numbers the processes"},
    {"PMIx",
     "PMIX_RANK",
     {"SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"},
     {"SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"},
     nullptr,
     "a PMIx server is there (srun --mpi=pmix or prterun), so MPI can start"},
    {"MPICH's Hydra",
     "PMI_RANK",
     {"PMI_SIZE"},
     {"MPI_LOCALRANKID"},
     "SLURM_PROCID",
     "MPI numbers the processes"},
};

std::optional<LaunchInfo> FromMpi(const Env& env) {
  for (const MpiLauncher& launcher : kMpiLaunchers) {
    const auto rank = env.Get(launcher.rank);
    if (!rank || (launcher.unless != nullptr && env.Get(launcher.unless))) continue;
    const std::optional<int> size = FirstInt(env, launcher.size, 1);
    if (!size && launcher.size.size() == 1) continue;  // a stray rank variable alone
    LaunchInfo info;
    info.kind = LaunchKind::kMpi;
    info.process_rank = ParseInt(launcher.rank, *rank, 0);
    info.process_count = size.value_or(1);  // MPI_Comm_size tells the truth later
    info.local_rank = FirstInt(env, launcher.local_rank, 0).value_or(0);
    info.detected_from = launcher.rank;
    info.reason = std::string(launcher.name) + ": " + launcher.why;
    return info;
  }
  return std::nullopt;
}

uint64_t ParseId(const std::string& name, const std::string& value) {
  const std::optional<uint64_t> v = ToNumber<uint64_t>(value);
  if (!v) {
    throw UsageError("environment variable " + name + "='" + value +
                     "' is not a Slurm id (a number)");
  }
  return *v;
}

uint16_t ParsePort(const std::string& name, const std::string& value) {
  const int p = ParseInt(name, value, 1);
  if (p > 65535) throw UsageError(name + "=" + value + " is not a TCP port (1..65535)");
  return static_cast<uint16_t>(p);
}

// MASTER_PORT, where 0 asks process 0 to bind a free port and publish it in
// FABRICSCOPE_PORT_FILE, which the other processes read (the JobStore of store.h).
void ReadStorePort(const Env& env, const std::string& port, LaunchInfo& info) {
  const auto file = env.Get("FABRICSCOPE_PORT_FILE");
  if (port != "0") {
    info.master_port = ParsePort("MASTER_PORT", port);
    return;
  }
  if (!file || file->empty()) {
    throw UsageError(
        "MASTER_PORT=0 lets process 0 pick the store's port, which the others then read from "
        "a file: set FABRICSCOPE_PORT_FILE to a path every process can read, or MASTER_PORT to "
        "a free port");
  }
  info.master_port = 0;
  info.port_file = *file;
}

// srun without PMIx: Slurm numbers the tasks, and the step's first node, where srun puts
// task 0, serves the store. MASTER_ADDR and MASTER_PORT override the derived address.
std::optional<LaunchInfo> FromSlurm(const Env& env) {
  const auto rank = env.Get("SLURM_PROCID");
  const auto size = env.Get("SLURM_NTASKS");
  // A batch script or salloc's shell sees SLURM_PROCID too, but no step: one process.
  const auto step = env.Get("SLURM_STEP_ID");
  if (!rank || !size || !step) return std::nullopt;
  LaunchInfo info;
  info.kind = LaunchKind::kEnv;
  info.process_rank = ParseInt("SLURM_PROCID", *rank, 0);
  info.process_count = ParseInt("SLURM_NTASKS", *size, 1);
  if (info.process_count == 1) return std::nullopt;  // one task of an allocation: one process
  info.local_rank = FirstInt(env, {"SLURM_LOCALID"}, 0).value_or(0);
  info.detected_from = "SLURM_PROCID/SLURM_NTASKS";
  const auto nodelist = env.Get("SLURM_STEP_NODELIST") ? env.Get("SLURM_STEP_NODELIST")
                                                       : env.Get("SLURM_JOB_NODELIST");
  const auto job = env.Get("SLURM_JOB_ID");
  const auto addr = env.Get("MASTER_ADDR");
  const auto port = env.Get("MASTER_PORT");
  if ((!nodelist && !addr) || (!job && !port)) {
    throw UsageError(
        "srun set SLURM_PROCID and SLURM_NTASKS but not " +
        std::string(!nodelist && !addr ? "SLURM_STEP_NODELIST " : "") +
        (!job && !port ? "SLURM_JOB_ID " : "") +
        ": start the tasks with srun, set MASTER_ADDR and MASTER_PORT to where task 0 may "
        "serve the store, or use srun --mpi=pmix with the mpi launcher");
  }
  info.master_addr = addr ? *addr : FirstSlurmHost(*nodelist);
  if (port) {
    ReadStorePort(env, *port, info);
  } else {
    info.master_port =
        SlurmStorePort(ParseId("SLURM_JOB_ID", *job), ParseId("SLURM_STEP_ID", *step));
  }
  if (const auto node = env.Get("SLURM_NODEID");
      node && info.process_rank == 0 && *node != "0" && !addr) {
    throw UsageError("task 0 runs on node " + *node + " of the step, not on its first node " +
                     info.master_addr +
                     " where the others look for the store: use srun's "
                     "default (block) or cyclic distribution, or set MASTER_ADDR to task 0's host");
  }
  info.reason =
      std::string("srun without PMIx (") +
      (env.Get("PMI_RANK") ? "only PMI-2, which this Open MPI does not speak" : "no PMIX_RANK") +
      "): tasks from SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, store on " + info.master_addr + ":" +
      std::to_string(info.master_port) +
      (port ? " (MASTER_PORT)" : " (port from SLURM_JOB_ID and SLURM_STEP_ID)") +
      "; srun --mpi=pmix gives MPI instead";
  return info;
}

std::optional<LaunchInfo> FromTorchrunEnv(const Env& env, bool required) {
  const auto rank = env.Get("RANK");
  const auto size = env.Get("WORLD_SIZE");
  if (!rank || !size) {
    if (!required) return std::nullopt;
    throw UsageError(
        "--launcher env needs RANK and WORLD_SIZE (and MASTER_ADDR, MASTER_PORT when "
        "WORLD_SIZE > 1), the torchrun convention; missing: " +
        std::string(!rank ? "RANK " : "") + (!size ? "WORLD_SIZE" : ""));
  }
  LaunchInfo info;
  info.kind = LaunchKind::kEnv;
  info.process_rank = ParseInt("RANK", *rank, 0);
  info.process_count = ParseInt("WORLD_SIZE", *size, 1);
  if (info.process_rank >= info.process_count) {
    throw UsageError("RANK=" + *rank + " is not below WORLD_SIZE=" + *size +
                     "; ranks are numbered 0..WORLD_SIZE-1");
  }
  info.local_rank = FirstInt(env, kLocalRankVariables, 0).value_or(0);
  info.detected_from = "RANK/WORLD_SIZE";
  const auto addr = env.Get("MASTER_ADDR");
  const auto port = env.Get("MASTER_PORT");
  if (info.process_count > 1 && (!addr || !port)) {
    throw UsageError("RANK and WORLD_SIZE are set but " + std::string(!addr ? "MASTER_ADDR " : "") +
                     (!port ? "MASTER_PORT " : "") +
                     "is not: set MASTER_ADDR to rank 0's host and MASTER_PORT to a free port");
  }
  if (addr) info.master_addr = *addr;
  if (port) ReadStorePort(env, *port, info);
  info.reason = "the torchrun convention: store on " + info.master_addr + ":" +
                (info.port_file.empty() ? std::to_string(info.master_port)
                                        : "the port process 0 publishes in " + info.port_file) +
                " (MASTER_ADDR, MASTER_PORT)";
  return info;
}

int64_t ParseSplitNumber(const std::string& text, const std::string& variable) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 0);  // 0x.. hex, 0.. octal, decimal
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < 0) {
    throw UsageError(variable + ": '" + text +
                     "' is not a number; write e.g. NCCL_TESTS_SPLIT=\"AND 0x7\", \"MOD 8\", "
                     "\"DIV 8\" or NCCL_TESTS_SPLIT_MASK=0x7");
  }
  return v;
}

// NCCL_TESTS_SPLIT_MASK as nccl-tests reads it: strtoul(value, NULL, 16), so "f" is 15 and
// "10" is 16 (nccl-tests 2.19.6 src/common.cu:1498). A value that is not hex is refused
// where strtoul would read its leading digits or 0 (a deliberate difference: docs/env.md).
int64_t ParseHexMask(const std::string& text) {
  std::string_view digits = Trim(text);
  if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
  const auto v = ToNumber<int64_t>(digits, 16);
  if (!v || *v < 0) {
    throw UsageError("NCCL_TESTS_SPLIT_MASK='" + text +
                     "' is not a hex mask (nccl-tests reads it in base 16): write e.g. "
                     "NCCL_TESTS_SPLIT_MASK=0x7 or 7");
  }
  return *v;
}

}  // namespace

LaunchInfo DetectLaunch(const Env& env, std::string_view requested) {
  if (requested == "single") return LaunchInfo{};
  if (requested == "mpi") {
    LaunchInfo info = FromMpi(env).value_or(LaunchInfo{});
    info.kind = LaunchKind::kMpi;  // MPI itself will tell rank and size
    if (info.detected_from.empty()) info.detected_from = "--launcher mpi";
    info.reason = "--launcher mpi";
    info.local_rank = FirstInt(env, kLocalRankVariables, 0).value_or(info.local_rank);
    return info;
  }
  if (requested == "env") {
    if (!env.Get("RANK") && !env.Get("WORLD_SIZE")) {
      if (auto slurm = FromSlurm(env)) return *slurm;
    }
    return *FromTorchrunEnv(env, true);
  }
  if (requested != "auto") {
    throw UsageError("unknown --launcher '" + std::string(requested) +
                     "': choose auto, single, mpi or env");
  }
  if (auto mpi = FromMpi(env)) return *mpi;
  // torchrun started by srun: torchrun's numbering is the innermost, so it wins.
  if (auto torchrun = FromTorchrunEnv(env, false)) return *torchrun;
  if (auto slurm = FromSlurm(env)) return *slurm;
  return LaunchInfo{};
}

std::string DescribeLaunch(const LaunchInfo& launch) {
  switch (launch.kind) {
    case LaunchKind::kSingle:
      return "";
    case LaunchKind::kMpi:
      return "launcher: mpi (" + launch.reason + ")";
    case LaunchKind::kEnv:
      return "launcher: env (" + launch.reason + ")";
  }
  return "";
}

void AnnounceLaunch(const LaunchInfo& launch, std::ostream& out) {
  const std::string line = DescribeLaunch(launch);
  if (launch.process_rank == 0 && !line.empty()) out << "# fabricscope: " << line << "\n";
}

std::string FirstSlurmHost(std::string_view nodelist) {
  const std::vector<std::string> hosts = ExpandHostList(nodelist);
  if (hosts.empty()) {
    throw UsageError("Slurm host list '" + std::string(nodelist) +
                     "' names no host; expected e.g. 'node1', 'gpu[07-09,12]' or 'a1,b[2-3]'");
  }
  return hosts.front();
}

uint16_t SlurmStorePort(uint64_t job_id, uint64_t step_id) {
  return static_cast<uint16_t>(20000 + (job_id * 31 + step_id) % 12000);
}

int SplitColor(const Env& env, int rank) {
  // NCCL_TESTS_SPLIT_MASK first, as nccl-tests checks it (src/common.cu:1497-1499), in hex.
  if (const auto mask = env.Get("NCCL_TESTS_SPLIT_MASK")) {
    return static_cast<int>(static_cast<int64_t>(rank) & ParseHexMask(*mask));
  }
  std::string op;
  std::string operand;
  std::string variable;
  if (const auto split = env.Get("NCCL_TESTS_SPLIT")) {
    variable = "NCCL_TESTS_SPLIT";
    std::string s = *split;
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j])) &&
           !std::isdigit(static_cast<unsigned char>(s[j]))) {
      ++j;
    }
    op = s.substr(i, j - i);
    while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    operand = s.substr(j);
    op = Upper(op);
  } else {
    return 0;
  }
  const int64_t n = ParseSplitNumber(operand, variable);
  const int64_t r = rank;
  if (op == "AND" || op == "&") return static_cast<int>(r & n);
  if (op == "OR" || op == "|") return static_cast<int>(r | n);
  if (op == "MOD" || op == "%" || op == "DIV" || op == "/") {
    if (n == 0) throw UsageError(variable + ": division by 0 in '" + op + " 0'");
    return static_cast<int>(op == "MOD" || op == "%" ? r % n : r / n);
  }
  throw UsageError(variable + ": unknown operation '" + op +
                   "'; use AND (&), OR (|), MOD (%) or DIV (/) followed by a number");
}

}  // namespace fabricscope
