// Launchers: how this process was started, and running the ranks of a job with it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fabricscope/backend.h"
#include "fabricscope/env.h"
#include "fabricscope/options.h"
#include "fabricscope/report.h"
#include "fabricscope/result.h"

namespace fabricscope {

// How the processes of a job find each other.
enum class LaunchKind {
  kSingle,  // one process: ranks are its threads
  kMpi,     // mpirun, MPICH's Hydra, srun --mpi=pmix: MPI numbers the processes and carries
            // the rendezvous
  kEnv,     // a TCP store at master_addr:master_port: RANK, WORLD_SIZE, MASTER_ADDR,
            // MASTER_PORT (torchrun, Kubernetes), or plain srun's SLURM_* without PMIx
};

// This process's place in the job.
struct LaunchInfo {
  LaunchKind kind = LaunchKind::kSingle;
  int process_rank = 0;
  int process_count = 1;
  int local_rank = 0;  // among the processes of this host
  std::string master_addr;
  uint16_t master_port = 0;   // 0 under the env launcher: process 0 picks it (port_file)
  std::string port_file;      // FABRICSCOPE_PORT_FILE: where process 0 publishes its port
  std::string detected_from;  // the variables that decided, for messages
  std::string reason;         // why this path and not another, for the stderr line
};

// `requested` is --launcher: "auto", "single", "mpi" or "env". Throws UsageError for a bad
// value or an incomplete environment (naming the missing variables). Under auto: Open MPI's
// mpirun, PMIx (srun --mpi=pmix, prterun) and MPICH's Hydra are MPI; then RANK /
// WORLD_SIZE (torchrun, also under srun); then srun without PMIx, which bootstraps from
// SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and SLURM_STEP_NODELIST with a TCP store on the
// step's first node (port from SLURM_JOB_ID and SLURM_STEP_ID, or MASTER_ADDR /
// MASTER_PORT); else one process.
LaunchInfo DetectLaunch(const Env& env, std::string_view requested = "auto");

// One line for stderr: which launch path was chosen and why ("launcher: env (srun without
// PMIx: ...)"). Empty for one process, which needs no explaining.
std::string DescribeLaunch(const LaunchInfo& launch);
// Writes DescribeLaunch as a "# fabricscope: " line on `out` (the CLI's stderr), from the
// first process only, so a job of N processes says it once.
void AnnounceLaunch(const LaunchInfo& launch, std::ostream& out);

// The first host of a Slurm host list ("gpu[07-09,12],login1" -> "gpu07"). Throws UsageError
// for an empty or malformed list.
std::string FirstSlurmHost(std::string_view nodelist);

// The store port of a Slurm job step without an override: 20000 + (job x 31 + step) mod
// 12000, below Linux's ephemeral ports (32768-60999), and different for each step of a job.
uint16_t SlurmStorePort(uint64_t job_id, uint64_t step_id);

// The NCCL_TESTS_SPLIT / NCCL_TESTS_SPLIT_MASK colour of a rank: ranks of one colour form
// one communicator. "AND 0x7" / "&0x7", "OR n" / "|n", "MOD n" / "%n", "DIV n" / "/n";
// a mask alone is "AND mask". No variable: colour 0 for every rank. Throws UsageError.
int SplitColor(const Env& env, int rank);

// One rank of a job once the job's communicator is up: what a tool that drives its own
// measurements (locate) gets in place of the benchmark sweep.
struct RankContext {
  RankInfo self;  // this rank: global rank, host, pid, device index
  int nranks = 0;
  Communicator* world = nullptr;  // the job's communicator (of this rank's split colour)
  // How `world` was joined. To join another group of the job's ranks, copy it, set color,
  // rank, size and a prefix of its own, and call join.
  ConnectOptions connect;
  // Connects through the job's backend, watched by the -T watchdog when -T is set.
  std::function<std::unique_ptr<Communicator>(const ConnectOptions&)> join;
};
// What every rank runs in place of the benchmark sweep.
using RankBody = std::function<void(RankContext& context)>;

// Runs the job: options.nthreads ranks in each process, numbered process x threads + thread
// as nccl-tests numbers them. Returns global rank 0's record (an empty record elsewhere).
// Throws the first error of this process's ranks. With `body`, each rank runs it instead
// of the sweep (options still set -t, -T and what the backend is checked against).
RunResult RunJob(const RunOptions& options, Backend& backend, Reporter* sink,
                 const LaunchInfo& launch, const Env& env, const RankBody& body = {});

// RunJob in one process with an in-memory store, in `env` (by default: no variable set).
RunResult RunThreads(const RunOptions& options, Backend& backend, Reporter* sink,
                     const Env& env = Env());

// Fills the header part of the record (version, backend, config, start time, the variables
// of `env` that change a library's behaviour, NCCL_TESTS_MIN_BW). Throws UsageError for a
// NCCL_TESTS_MIN_BW that is not a number.
RunResult MakeHeader(const RunOptions& options, const Backend& backend, const Env& env);

}  // namespace fabricscope
