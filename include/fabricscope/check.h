// Verdicts: benchmark results judged against what the platform can deliver, OK, WARN or
// CRITICAL per test, each rule's judgement a finding (finding.h) with the reason a person can
// act on.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/failures.h"
#include "fabricscope/finding.h"
#include "fabricscope/node.h"
#include "fabricscope/parse.h"
#include "fabricscope/platform.h"
#include "fabricscope/result.h"

namespace fabricscope {

namespace fabric {
struct FabricReport;
}

// A rule's judgement of one test is a Finding: `source` the rule ("bandwidth"), `what` what
// was seen, against what, and what to do; `where` the switch or link it points at ("" when it
// is about the test as a whole, whose verdict it sits under); `evidence` the lines it rests on;
// `figures` the numbers behind `what`. Its severity is OK, WARN or CRITICAL, or INFO when the
// rule stood aside with a reason worth showing: INFO does not judge the test.

// How sure a verdict from several runs is: a Student-t interval of the mean busbw.
struct VerdictConfidence {
  size_t samples = 0;  // runs (or -N cycles) that reached the judged sizes
  double mean = 0;     // GB/s
  double stddev = 0;
  double low = 0;  // the interval, GB/s
  double high = 0;
  double level = 0.95;
  // How likely the true mean is at or above the healthy minimum, and how likely it lies in
  // the verdict's own band (healthy, warn or fail), from the same t distribution.
  double probability_healthy = 0;
  double probability_verdict = 0;
  double cv_percent = 0;  // run-to-run variation
};

// What a test's busbw was judged against.
struct ExpectedBusbw {
  double typical = 0;     // GB/s, what a healthy run reaches
  double healthy = 0;     // GB/s, the lowest healthy value: below it WARN
  double fail_below = 0;  // GB/s: below it CRITICAL
  size_t from_size = 0;   // the sizes judged: this one and larger
  std::string algorithm;  // NCCL algorithm of the figure, when known
  std::string basis;      // "published", "derived" (catalog) or "model"
  std::string source;
};

// One test: a collective at one scale, over every run of it that was given.
struct TestVerdict {
  std::string collective;
  std::vector<std::string> sources;  // "file:line" of each run; empty for a run measured here
  int ranks = 0;
  int nodes = 0;           // 0: unknown
  std::string nodes_from;  // "host names", "--nodes", "ranks / GPUs per node"
  size_t runs = 0;
  Severity status = Severity::kOk;       // the worst finding that judged it (OK, WARN, CRITICAL)
  std::optional<double> measured_busbw;  // mean busbw over the judged sizes (and runs)
  std::optional<ExpectedBusbw> expected;
  std::optional<VerdictConfidence> confidence;  // with two or more samples
  std::vector<Finding> findings;                // one per rule that applied, in the rules' order
};

// Knobs of the judgement; the defaults are the documented ones (docs/check.md).
struct CheckOptions {
  std::optional<int> nodes;          // overrides the node count read from the results
  std::optional<size_t> judge_from;  // judge busbw from this size up instead of the band's
  double warn_floor = 0.8;           // CRITICAL below this fraction of the healthy minimum
  double model_healthy = 0.8;        // a model prediction's healthy minimum, as a fraction
  double latency_warn_ratio = 2.0;   // WARN when small messages take longer than this x floor
  double confidence_level = 0.95;
  size_t latency_max_size = 64UL * 1024;       // sizes at or below this show the latency floor
  size_t model_min_size = 32UL * 1024 * 1024;  // the model judges bandwidth from this size up
  // In-network reduction (InfiniBand SHARP, NCCL's CollNet) on the fabric the runs crossed
  // (--sharp yes|no); empty: the run's NCCL log or environment says, else not known.
  std::optional<bool> sharp;
  // The fabric the runs crossed (check --fabric DIR), for the `fabric` rule; nullptr: none.
  const fabric::FabricReport* fabric = nullptr;
  // The HCAs of the run's hosts in rank order (--fabric-hosts); empty: the run's host names.
  std::vector<std::string> fabric_hosts;
};

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
  size_t init_complete = 0;              // "Init COMPLETE" lines
  size_t nthread_headers = 0;            // nccl-tests' "# nThread ..." headers
  std::vector<std::string> rank0_hosts;  // the host of each "#  Rank  0 ..." device line
  std::vector<std::string> late_env;     // "file:line: NCCL_X=1": assignments after the command
  std::optional<double> avg_busbw;       // a trailer's "# Avg bus bandwidth : N"
  size_t avg_line = 0;
  std::vector<double> trailers;  // every trailer's value, in order
  int launcher_ranks = 0;        // "-np N" / "-n N" of an mpirun or srun line
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
  std::string last_line;  // the log's last line, for how it ended
  size_t last_line_no = 0;

  // Whether anything in it can be judged: a signature, an NCCL line, a trailer or a figure.
  bool Judgeable() const;
};

// The runs all_reduce_bench's figures stand for, one row each (all_reduce, float, sum), so that
// check judges them as it judges nccl-tests rows; each run's source is "file:line".
std::vector<RunResult> RunsFromFigures(const PasteEvidence& paste);

// Reads pasted logs for check: give it as ParseOptions::observer to the readers, then Take.
class PasteReader : public LineObserver {
 public:
  explicit PasteReader(const FailureBase& base = FailureBase::Builtin());
  ~PasteReader() override;
  PasteReader(const PasteReader&) = delete;
  PasteReader& operator=(const PasteReader&) = delete;
  void Begin(const std::string& source) override;
  void Line(std::string_view line, size_t line_no) override;
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

// Every test of a check and the overall outcome (the worst test).
struct CheckReport {
  PlatformChoice platform;
  std::vector<TestVerdict> tests;
  std::vector<PasteDiagnosis> diagnoses;
  Severity status = Severity::kOk;
  std::vector<std::string> notes;
};

// Judges every test of `runs` (runs of the same collective, rank and node count are repeats
// of one test). Never throws for what the results hold: what cannot be judged is a WARN
// with the reason.
// `pastes`: what PasteReader read of the same inputs; each is diagnosed (the cause of a failed
// or slow run, from the knowledge base), and a test's NCCL WARN lines that the knowledge base
// calls harmless where they stand do not fail it.
CheckReport Check(const std::vector<RunResult>& runs, const PlatformChoice& platform,
                  const CheckOptions& options = {}, const std::vector<PasteEvidence>& pastes = {});

// The diagnosis of one paste against the platform (its transport) and the runs read from it.
PasteDiagnosis DiagnosePaste(const PasteEvidence& paste, const std::vector<RunResult>& runs,
                             const PlatformChoice& platform,
                             const FailureBase& base = FailureBase::Builtin());

// How a check was told which platform to judge against (check's flags, docs/check.md).
struct PlatformRequest {
  std::string name;                               // --platform NAME (or an alias)
  std::optional<GenericPlatformOptions> generic;  // a generic description on the command line
  std::string root = "/";                         // where detection reads the node
  bool root_given = false;                        // --root: this node's tree, not the logs
};

// The platform to judge against: the named one; else the generic description; else the one
// `runs`' logs say (unless --root was given; `runs` is empty when the benchmark runs here);
// else this node's, detected under `root`. Throws UsageError for a name and a description
// together, or --root beside either, and for an unknown transport or name.
PlatformChoice ChoosePlatform(const Catalog& catalog, const PlatformRequest& request,
                              const std::vector<RunResult>& runs);

// The platform results ran on, as their logs say it: the GPU model, ranks and nodes of the
// device lines (a list cut to its last line still tells the rank count), NCCL's network lines
// (NICs, their rate, IB / RoCE / gIB / EFA / TCPX / TCPXO / sockets), NVLS and MNNVL lines.
// The catalog platforms that fit, less those the measured busbw rules out (above what their
// NICs allow with any algorithm, each named with why); the one with the least network bandwidth
// of the rest is judged against and the others kept as candidates. Else a generic platform from
// the log's NICs and that GPU's intra-node figure; `evidence` names each fact's line. No
// platform when the logs name no GPU.
PlatformChoice InferPlatform(const Catalog& catalog, const std::vector<RunResult>& runs);

// A rule of the registry, for help texts and docs.
struct CheckRuleInfo {
  std::string_view name;
  std::string_view description;
};
std::vector<CheckRuleInfo> CheckRules();

// A registry entry: an output format of a check.
struct CheckFormat {
  std::string_view name;
  std::string_view description;
  std::string (*render)(const CheckReport& report);
};

// text (for people) and json (for programs).
const std::vector<CheckFormat>& CheckFormats();
// Throws UsageError listing the formats.
const CheckFormat& FindCheckFormat(std::string_view name);

}  // namespace fabricscope
