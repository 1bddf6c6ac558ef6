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

#include "fabricscope/finding.h"
#include "fabricscope/node.h"
#include "fabricscope/paste.h"
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
  // The host names its runs name, sorted, each once; empty when the results name none. Its
  // findings blame them (element "node" for one host, "nodes" for several).
  std::vector<std::string> hosts{};
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
