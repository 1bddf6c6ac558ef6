// What users paste, read besides its tables: the failure knowledge base's signatures that
// match its lines, NCCL's own facts (hosts, ranks, versions, NICs), other benchmarks'
// figures and the shapes of how a run ended; and the diagnosis of a paste: the cause, the
// evidence that decided it and the fix, or the candidates ranked (docs/failures.md). Its own
// layer so that check and doctor --nccl-log diagnose a log alike.
#pragma once

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/failures.h"
#include "fabricscope/finding.h"
#include "fabricscope/node.h"
#include "fabricscope/parse.h"
#include "fabricscope/result.h"

namespace fabricscope {

// One line of a log that a failure signature matched (data/failures, failures.h).
struct PasteHit {
  size_t signature = 0;  // index in the knowledge base's signatures()
  size_t line = 0;
  std::string text;  // the line, as the log has it
  size_t count = 1;  // lines the signature matched in all
};

// A figure a benchmark other than nccl-tests printed: all_reduce_bench.py's (stas00/
// ml-engineering network/benchmarks/all_reduce_bench.py, and the copies of it cloud recipes
// run) "The average bandwidth of all_reduce with a 4.0GB payload (5 trials, 16 ranks):" then
// "algbw: 44.947 GBps (359.6 Gbps)" and "busbw: 84.275 GBps (674.2 Gbps)".
struct PastedFigure {
  double busbw = 0;  // GB/s
  double algbw = 0;  // GB/s; 0 when not printed
  size_t bytes = 0;  // the payload (its "GB" are 1e9 bytes: M*N*4/1e9); 0 when not printed
  int ranks = 0;     // 0 when not printed
  size_t line = 0;
  std::string text;
};

// What one pasted log says besides its tables: the signatures it matched, NCCL's own facts
// (its hosts and processes, nranks, versions), trailers without a table, other tools' figures,
// and the shapes that tell how a run ended.
struct PasteEvidence {
  std::string source;
  std::vector<PasteHit> hits;            // each signature's first line, in order of appearance
  std::vector<std::string> log_holds;    // the knowledge base's watched texts some line holds
  size_t lines = 0;                      // lines read that are not table rows
  size_t nccl_lines = 0;                 // NCCL INFO / WARN lines
  int nranks = 0;                        // the largest "nranks N" NCCL printed
  size_t nthread_headers = 0;            // nccl-tests' "# nThread ..." headers
  std::vector<std::string> rank0_hosts;  // the host of each "#  Rank  0 ..." device line
  std::vector<std::string> late_env;     // "file:line: NCCL_X=1": assignments after the command
  std::vector<double> trailers;          // every trailer's "# Avg bus bandwidth : N", in order
  int launcher_ranks = 0;                // "-np N" / "-n N" of an mpirun or srun line
  size_t ranks_seen = 0;
  int nics_used = 0;  // the most devices an "NET/IB : Using [0]... [N]" line lists
  size_t nics_line = 0;
  std::vector<std::string> nccl_hosts;  // the hosts of NCCL's "host:pid:tid [dev] NCCL" prefixes //
                                        // distinct "rank N" of NCCL's init lines
  // A table header ("... algbw  busbw ...") the readers did not take (an old or quoted layout),
  // and the lines after it that start with a digit; 0 none.
  size_t header_line = 0;
  size_t lines_after_header = 0;
  // Old nccl-tests' device lines ("Rank  0 uses device  0 [0x05] Tesla M40"): one process
  // drove every GPU, so the run was on one node.
  size_t single_process_devices = 0;
  std::vector<PastedFigure> figures;
  // Other tools' own bandwidth verdicts: Azure's health checks (azurehpc-health-checks,
  // check_nccl_allreduce) print "BUS BW (expected >=431.0 GB/s, but measured 15.1043 GB/s)".
  struct ToolVerdict {
    double expected = 0;  // GB/s
    double measured = 0;
    size_t line = 0;
    std::string text;
  };
  std::vector<ToolVerdict> tool_verdicts;
  // Each host's "NCCL version" line (the host of NCCL's prefix; "" for a line without one).
  struct HostVersion {
    std::string host;
    std::string version;
    size_t line = 0;
  };
  std::vector<HostVersion> versions;
  // The check rules that flagged a test of this input ("gpudirect": the transport rule found
  // GPUDirect not in use), each a shape of the knowledge base ("rule-gpudirect") whose causes
  // the platform's transport tells apart.
  std::vector<std::string> rule_flags;
  // NCCL's channel connections ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"), by transport:
  // SHM between GPUs of a node with no P2P at all says NCCL's P2P transport was off.
  size_t channels_shm = 0;
  size_t channels_p2p = 0;
  size_t channels_net = 0;
  size_t channels_net_gdr = 0;    // via NET/IB/N/GDRDMA (or another net's GDRDMA)
  size_t channels_net_nogdr = 0;  // via NET/IB/N without GDRDMA
  // NCCL's error trace ("misc/socket.cc:567 -> 2", "bootstrap.cc:270 -> 2"): each frame an
  // INFO line as a failed call returns through NCCL, innermost first.
  std::vector<std::string> error_trace;
  size_t error_trace_line = 0;
  // A pasted launcher command (`NCCL_X=1 mpirun -H a,b ...`, backslash-continued lines
  // joined) that gives NCCL variables to mpirun itself, or after `export`, without `-x NAME`:
  // Open MPI's mpirun passes its own environment to the ranks it starts on other hosts only
  // for the names -x lists (MPICH's and Intel MPI's hydra pass all: not counted).
  struct LaunchEnv {
    size_t line = 0;
    std::string text;                      // the command, cut to 512 characters
    std::vector<std::string> unforwarded;  // "NCCL_SHM_DISABLE"
    bool multi_host = false;               // -H a,b / --host a,b / a hostfile
  };
  std::vector<LaunchEnv> launch_env;
  std::string last_line;  // the log's last line, for how it ended
  size_t last_line_no = 0;

  // Whether anything in it can be judged: a signature, an NCCL line, a trailer or a figure.
  bool Judgeable() const;
};

// What a cluster's host names say of where it runs: EC2 names an instance after its private
// address, "ip-172-31-41-23"
// (docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-naming.html), HPE Cray EX its compute
// nodes "nid005471"; empty when the names say nothing or disagree.
struct HostNaming {
  std::string names;            // "EC2's instance names"
  std::string platform_prefix;  // the catalog platforms of that cloud ("aws-"); "" none
};
HostNaming HostNamingOf(const std::set<std::string>& hosts);

// The hosts of the runs' device lines ("#  Rank 0 ... on HOST device 0 ...").
std::set<std::string> RunHosts(const std::vector<RunResult>& runs);

// The runs all_reduce_bench's figures stand for, one row each (all_reduce, float, sum), so that
// check judges them as it judges nccl-tests rows; each run's source is "file:line".
std::vector<RunResult> RunsFromFigures(const PasteEvidence& paste);

// NCCL's own facts over the readers' guesses: a run of a paste whose NCCL lines say a larger
// nranks than the run's (a device list cut after its first lines, a table whose rank count
// was inferred) takes NCCL's, with a note; returns how many runs changed.
size_t ApplyNcclRanks(std::vector<RunResult>& runs, const std::vector<PasteEvidence>& pastes);

// Reads pasted logs for check: give it as ParseOptions::observer to the readers, then Take.
class PasteReader : public LineObserver {
 public:
  explicit PasteReader(const FailureBase& base = FailureBase::Builtin());
  ~PasteReader() override;
  PasteReader(const PasteReader&) = delete;
  PasteReader& operator=(const PasteReader&) = delete;
  void Begin(const std::string& source) override;
  void Line(std::string_view line, size_t line_no,
            size_t info_at = std::string_view::npos) override;
  // One record per text input read, in order.
  std::vector<PasteEvidence> Take();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A pasted log's diagnosis: the cause the signatures and shapes point to, ranked, with the
// evidence that decided it (or, when nothing decides, the candidates and the check that
// would), and the lines that are harmless where they stand.
struct PasteDiagnosis {
  std::string source;
  Severity status = Severity::kInfo;  // INFO: nothing found that judges the run
  std::string cause;                  // the cause's id; "" none
  bool decided = true;
  std::vector<Finding> findings;
};

// The diagnosis of one paste against the platform (its transport) and the runs read from it.
PasteDiagnosis DiagnosePaste(const PasteEvidence& paste, const std::vector<RunResult>& runs,
                             const PlatformChoice& platform,
                             const FailureBase& base = FailureBase::Builtin());

}  // namespace fabricscope
