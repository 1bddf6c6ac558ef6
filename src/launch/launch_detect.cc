// Which launcher started this process, from the variables each one sets.
#include <cctype>
#include <cstdlib>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/launch.h"

namespace fabricscope {
namespace {

// The variables an MPI launcher sets: rank, size, local rank.
struct MpiVariables {
  const char* rank;
  const char* size;
  const char* local_rank;
};
constexpr MpiVariables kMpiLaunchers[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},  // OpenMPI
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},                                     // MPICH
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},                               // srun
};

int ParseInt(const std::string& name, const std::string& value, int lo) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value.c_str(), &end, 10);
  if (errno != 0 || end == value.c_str() || *end != '\0' || v < lo || v > INT32_MAX) {
    throw UsageError("environment variable " + name + "='" + value + "' is not a valid number" +
                     (lo > 0 ? " (at least " + std::to_string(lo) + ")" : " (0 or more)"));
  }
  return static_cast<int>(v);
}

std::optional<LaunchInfo> FromMpi(const EnvLookup& env) {
  for (const MpiVariables& vars : kMpiLaunchers) {
    const auto rank = env(vars.rank);
    const auto size = env(vars.size);
    if (!rank || !size) continue;
    LaunchInfo info;
    info.kind = LaunchKind::kMpi;
    info.process_rank = ParseInt(vars.rank, *rank, 0);
    info.process_count = ParseInt(vars.size, *size, 1);
    if (const auto local = env(vars.local_rank))
      info.local_rank = ParseInt(vars.local_rank, *local, 0);
    info.detected_from = std::string(vars.rank) + "/" + vars.size;
    return info;
  }
  return std::nullopt;
}

std::optional<LaunchInfo> FromTorchrunEnv(const EnvLookup& env, bool required) {
  const auto rank = env("RANK");
  const auto size = env("WORLD_SIZE");
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
  if (const auto local = env("LOCAL_RANK")) info.local_rank = ParseInt("LOCAL_RANK", *local, 0);
  info.detected_from = "RANK/WORLD_SIZE";
  const auto addr = env("MASTER_ADDR");
  const auto port = env("MASTER_PORT");
  if (info.process_count > 1 && (!addr || !port)) {
    throw UsageError("RANK and WORLD_SIZE are set but " + std::string(!addr ? "MASTER_ADDR " : "") +
                     (!port ? "MASTER_PORT " : "") +
                     "is not: set MASTER_ADDR to rank 0's host and MASTER_PORT to a free port");
  }
  if (addr) info.master_addr = *addr;
  if (port) {
    const int p = ParseInt("MASTER_PORT", *port, 1);
    if (p > 65535) throw UsageError("MASTER_PORT=" + *port + " is not a TCP port (1..65535)");
    info.master_port = static_cast<uint16_t>(p);
  }
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

}  // namespace

EnvLookup ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

LaunchInfo DetectLaunch(const EnvLookup& env, std::string_view requested) {
  if (requested == "single") return LaunchInfo{};
  if (requested == "mpi") {
    LaunchInfo info = FromMpi(env).value_or(LaunchInfo{});
    info.kind = LaunchKind::kMpi;  // MPI itself will tell rank and size
    if (info.detected_from.empty()) info.detected_from = "--launcher mpi";
    return info;
  }
  if (requested == "env") return *FromTorchrunEnv(env, true);
  if (requested != "auto") {
    throw UsageError("unknown --launcher '" + std::string(requested) +
                     "': choose auto, single, mpi or env");
  }
  if (auto mpi = FromMpi(env)) {
    // srun inside an allocation sets SLURM_* for a single task too; that is one process.
    if (mpi->process_count > 1 || mpi->detected_from.rfind("SLURM", 0) != 0) return *mpi;
  }
  if (auto torchrun = FromTorchrunEnv(env, false)) return *torchrun;
  return LaunchInfo{};
}

int SplitColor(const EnvLookup& env, int rank) {
  std::string op;
  std::string operand;
  std::string variable;
  if (const auto split = env("NCCL_TESTS_SPLIT")) {
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
    for (char& c : op) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  } else if (const auto mask = env("NCCL_TESTS_SPLIT_MASK")) {
    variable = "NCCL_TESTS_SPLIT_MASK";
    op = "AND";
    operand = *mask;
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
