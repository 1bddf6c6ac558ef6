// `fabricscope locate`: find the slow node and the slow link in a predictable number of
// rounds. The planner (which pairs meet when) is apart from the measurement (a real job, or
// a simulated cluster), so the same schedule and classifier run on both.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/backend.h"
#include "fabricscope/fabric_sim.h"
#include "fabricscope/finding.h"
#include "fabricscope/host_list.h"  // ExpandHostList, for topology.conf
#include "fabricscope/launch.h"
#include "fabricscope/options.h"
#include "fabricscope/result.h"
#include "fabricscope/statistics.h"

namespace fabricscope {

// ---------------------------------------------------------------------------------------
// Planner

// Two nodes (indices into ClusterLayout::names) measured against each other; a < b.
struct NodePair {
  int a = 0;
  int b = 0;
  auto operator<=>(const NodePair&) const = default;
};

// Pairs measured at the same time: no node is in two of them.
struct Round {
  std::vector<NodePair> pairs;
};

// The circle method: every pair of `nodes` nodes exactly once, every node busy in every
// round: nodes - 1 rounds for an even count; for an odd count, nodes rounds in each of
// which one node sits out (the bye). Throws UsageError below 2 nodes.
std::vector<Round> RoundRobinSchedule(int nodes);

// Quick mode: the first `coverage` rounds of the round-robin schedule under a random
// relabelling of the nodes (seeded): each node meets `coverage` distinct random peers
// (one fewer for the node that sits out a round when the count is odd). Throws UsageError
// when coverage is below 1 or above what the full schedule has.
std::vector<Round> QuickSchedule(int nodes, int coverage, uint64_t seed);

// Pairs packed in order into rounds of disjoint pairs (first fit): a pair goes into the
// first round that has neither of its nodes yet.
std::vector<Round> PackRounds(const std::vector<NodePair>& pairs);

// ---------------------------------------------------------------------------------------
// Measurement

// One pair on one rail: bus bandwidth of sendrecv and all_reduce between the two nodes'
// ranks of that rail, in GB/s, and elements that failed validation.
struct PairSample {
  NodePair pair;
  int rail = 0;
  double sendrecv_busbw = 0;
  double all_reduce_busbw = 0;
  int64_t wrong = 0;
  int round = -1;  // the round it was measured in, counted from 0 over the run (Locate sets it)
};

// One node alone: all_reduce bus bandwidth among its own ranks (the per-node test).
struct NodeSample {
  int node = 0;
  double all_reduce_busbw = 0;
  int64_t wrong = 0;
  int round = -1;  // as PairSample's
};

// Where measurements come from: a real job (through a backend and the launch layer), or a
// simulated cluster. The planner and the classifier see nothing else.
class PairMeasurer {
 public:
  virtual ~PairMeasurer() = default;
  // Measures every pair of `round` at the same time, on every rail: one sample per pair
  // and rail.
  virtual std::vector<PairSample> MeasureRound(const Round& round) = 0;
  // Measures every node alone, all at once: one sample per node that has two or more
  // ranks; empty when none has.
  virtual std::vector<NodeSample> MeasureNodes() { return {}; }
  // One collective over every rank: each rank's time per call (the engine's RankTimes);
  // empty when this measurer cannot, or on ranks that do not report.
  virtual std::optional<RankTimes> MeasureWorld() { return std::nullopt; }
  // Seconds spent measuring so far, the same number on every rank of a job (rank 0's
  // clock, shared with the round's numbers): what the time budget is checked against.
  virtual double Elapsed() const { return 0; }
};

// The job's nodes: node i is names[i]; its rail r is global rank ranks[i][r].
struct ClusterLayout {
  std::vector<std::string> names;
  std::vector<std::vector<int>> ranks;
  int rails = 1;                   // rails measured: the fewest ranks any node has
  std::vector<std::string> notes;  // e.g. ranks left out because nodes differ
};

// What makes ranks one node.
enum class NodeGrouping {
  kHost,     // the same hostname (one node per machine: the real thing)
  kProcess,  // the same process (processes on one machine as separate nodes)
  kRank,     // every rank its own node
};

// Parses "host", "process" or "rank"; throws UsageError.
NodeGrouping ParseNodeGrouping(std::string_view name);
std::string_view NameOf(NodeGrouping grouping);

// Nodes in order of their first rank; a node's ranks (its rails) in rank order.
ClusterLayout GroupRanks(const std::vector<RankInfo>& ranks, NodeGrouping grouping);

// ---------------------------------------------------------------------------------------
// The procedure

// Which leaf switch each host hangs from: from a host-to-switch map file or Slurm's
// topology.conf. Locate then blames a leaf's uplinks, not the nodes or links behind it.
// With the routes known (a simulated fat-tree), a slow set of pairs is blamed on the one
// switch-to-switch link they all cross.
struct Topology {
  std::map<std::string, std::string> leaf_of;  // host name -> leaf switch
  std::string source;                          // the file it came from
  // The switch-to-switch links the traffic between two hosts crosses on a rail, both
  // directions, named "from->to" (e.g. "leaf3->spine1", "spine1->leaf5"): set when the
  // routes are known; unset (a map file, topology.conf, ECMP's hash unknown), the blame
  // can only say which leaf's uplinks a subset of slow pairs shares.
  std::function<std::vector<std::string>(const std::string& a, const std::string& b, int rail)>
      route;
  bool empty() const { return leaf_of.empty(); }
};

// "HOST SWITCH" per line (whitespace between; '#' starts a comment). Throws UsageError
// naming the line.
Topology ParseHostSwitchMap(std::string_view text, const std::string& source);
// Slurm's topology.conf (topology/tree): "SwitchName=S Nodes=host[1-4,7]" lines give the
// leaves; "Switches=" lines (the spines) are read past. Throws UsageError naming the line.
Topology ParseSlurmTopology(std::string_view text, const std::string& source);
// The InfiniBand fabric's own: each HCA's leaf switch, from a directory of saved
// infiniband-diags outputs (as `fabricscope fabric --from DIR` reads it). Throws UsageError
// when DIR holds no outputs or they show no HCA on a switch.
Topology ReadFabricTopology(const std::string& dir);
// A directory is read as the fabric's outputs; a file as either of the above, by its content
// (SwitchName= means Slurm's); throws SystemError when unreadable.
Topology ReadTopology(const std::string& path);

// Full: the round-robin schedule (every pair); quick: `coverage` random peers per node.
enum class LocateMode { kFull, kQuick };

// What locate does and how it decides.
struct LocateOptions {
  LocateMode mode = LocateMode::kFull;
  int coverage = 3;   // quick mode: rounds, i.e. peers per node
  uint64_t seed = 1;  // quick mode's pairing
  // A pair, node or link is slow when its bandwidth is below `threshold` x the pairs it is
  // compared with AND significantly below them at `confidence`; fine when significantly
  // above `threshold` x them. Both on log bandwidth, with the noise measured from repeats
  // of the same pair.
  double threshold = 0.7;
  // The chance that one run names anyone wrongly, at most 1 - confidence: each test is
  // corrected (Bonferroni) for the pairs and the remeasurements it is one of.
  double confidence = 0.999;
  // After the first pass, remeasure what is undecided until everything is decided, or
  // `budget_s` seconds of measuring again (the measurer's Elapsed) or `max_sweeps` passes
  // have been spent; what is still undecided then is reported inconclusive, never guessed.
  double budget_s = 300;
  int max_sweeps = 16;
  // Two nodes have one pair and nothing to compare it with: the pair's expected sendrecv
  // bus bandwidth (GB/s), e.g. check's expectation for the platform; 0 = none given.
  double expect_gbs = 0;
  // Where expect_gbs comes from, for the report ("dgx-h100: check's expectation ..."); empty
  // when given by hand (--expect).
  std::string expect_source;
  Topology topology;       // hosts to leaf switches; empty: blame nodes and links only
  bool per_node = true;    // the per-node round (nodes with two or more ranks)
  bool stragglers = true;  // the collective over every rank, for per-rank times
  // Each round's shared effect taken off its samples (docs/locate.md, "Round effects");
  // false: not, for comparison (bench/locate_accuracy.cc --no-round-effects).
  bool round_effects = true;
  // Stragglers: a rank stands out below threshold x the median time (or above it over
  // threshold) and more than this many robust standard deviations from it.
  double min_robust_z = 3.0;
  // Told before each round: the phase ("per-node", "pairs", "again", "world"), the round's
  // number in it (from 1) and the phase's rounds. For a progress line.
  std::function<void(std::string_view phase, int round, int rounds)> progress;
};

// What a suspect is.
enum class SuspectKind {
  kNode,         // slow with every peer, on every rail
  kNic,          // slow with every peer, on some rails only: that rail's NIC, cable or port
  kLink,         // slow with one peer only: the path between the two
  kIntraNode,    // its own ranks are slow together (the per-node test)
  kUplink,       // a leaf switch's uplinks: its nodes slow with every node behind other leaves
                 // (element "leaf3"), or one uplink, leaf to spine (element "leaf3-spine1")
  kSpineLink,    // one link from a spine down to a leaf (element "spine1-leaf3")
  kSomeUplinks,  // some of a leaf's links to the spines (which: the routes are unknown)
  kRail,         // every pair on one rail slow against the other rails: its switch or plane
  kSpine,        // a spine switch: a named link between it and every leaf (element "spine1")
};
std::string_view NameOf(SuspectKind kind);

// A node, NIC, link or node interior that measured slow, with the evidence.
struct Suspect {
  SuspectKind kind = SuspectKind::kNode;
  std::vector<int> nodes;  // one node; two for a link; a leaf's nodes for an uplink
  // kUplink, kSpineLink, kSomeUplinks: the switch or the link between two ("leaf3",
  // "leaf3-spine1", "spine1-leaf3"); kRail: "rail1".
  std::string element;
  std::vector<int> rails;  // the rails it is slow on
  // Median bandwidth of its slow measurements over the typical pair's (0.25 = a quarter).
  double ratio = 1.0;
  // Measurements that agree with the verdict over all that bear on it (0..1): for a node,
  // its slow pairs; for a link, the pair slow and both ends fine with other peers;
  // confirmation retests included.
  double confidence = 0.0;
  int agreeing = 0;
  int measurements = 0;
  bool confirmed = false;  // decided at the stated confidence: named
  std::string evidence;    // one sentence with the numbers
};

// What the evidence says about one pair on one rail.
enum class PairCall {
  kFine,       // significantly above threshold x the pairs it is compared with
  kSlow,       // below threshold x them, and significantly below them
  kUndecided,  // neither, at this noise and this many measurements
};
std::string_view NameOf(PairCall call);

// One pair on one rail after every measurement of it: the matrix shows these.
struct PairJudgement {
  NodePair pair;
  int rail = 0;
  int samples = 0;
  double sendrecv = 0;    // median GB/s
  double all_reduce = 0;  // median GB/s
  int64_t wrong = 0;
  // Its bandwidth over the pairs it is compared with, and the confidence interval of that.
  double ratio = 1.0;
  double low = 1.0;
  double high = 1.0;
  PairCall call = PairCall::kUndecided;
};

// The answer, in one word.
enum class LocateStatus {
  kClear,         // every node and pair decided, nothing slow
  kFound,         // a culprit named
  kInconclusive,  // something undecided when the budget ran out: nobody guessed
  kAmbiguous,     // slow, but the measurements cannot tell which part (two nodes)
};
std::string_view NameOf(LocateStatus status);

// A rank whose time in the collective over every rank stands out.
struct Straggler {
  int rank = 0;
  int node = 0;
  double time_us = 0;
  double ratio = 1.0;  // its time over the median time
  // Late: the shortest time, because every other rank waited for it in the call.
  // Otherwise: the longest time, held up inside the call.
  bool late = false;
};

// Rounds run, by phase: what locate costs.
struct LocateRounds {
  int per_node = 0;
  int pairs = 0;
  int again = 0;  // remeasurements of what was undecided
  int world = 0;
  int Total() const { return per_node + pairs + again + world; }
};

// The bandwidth every pair on one rail is judged against.
struct RailBaseline {
  int rail = 0;
  // The typical pair, GB/s: the median over nodes of each node's median pair (robust to a
  // slow node, which is in half the pairs of four nodes but a minority of any one's peers).
  double sendrecv_typical = 0;
  double all_reduce_typical = 0;
  // The noise: robust standard deviation of log bandwidth between repeated measurements
  // of the same pair (a fault does not inflate it), and its degrees of freedom.
  double sigma = 0;
  double noise_df = 0;
};

// Everything locate found, and how.
struct LocateReport {
  // Header facts, as in the benchmark's record.
  std::string version;
  std::string backend;
  std::string backend_version;
  std::string start_time;
  std::string end_time;
  std::vector<std::string> args;
  std::vector<RankInfo> ranks;
  size_t bytes = 0;  // message size of each measurement
  int iters = 0;

  LocateOptions options;
  ClusterLayout layout;
  LocateRounds rounds;
  std::vector<PairSample> samples;       // every pair measurement, in the order taken
  int sweeps = 0;                        // passes over the pairs: 1 + remeasurements
  std::vector<NodeSample> node_samples;  // the per-node round
  std::vector<NodeSample> node_retests;  // the per-node round again, for suspects
  std::vector<RailBaseline> baselines;
  std::vector<PairJudgement> judgements;  // every pair and rail, as decided
  LocateStatus status = LocateStatus::kClear;
  std::vector<Suspect> suspects;  // decided at the stated confidence: the culprits named
  // Slow-looking nodes and links not decided when the budget ran out (not named).
  std::vector<Suspect> undecided;
  // Inconclusive or ambiguous: what is not known, and the command that would decide it.
  std::string unknown;
  std::string next_step;
  std::optional<RankTimes> world_times;
  std::vector<Straggler> stragglers;
  std::vector<std::string> notes;
  // The verdict above as findings of the one model (LocateFindings): what the text and JSON
  // print as findings, and what the exit code comes from.
  std::vector<Finding> findings;

  // True when locate names a culprit (the exit code says so).
  bool Found() const { return !suspects.empty(); }
  // The host name of node `node` (its first rank's); "" when the report does not say (a
  // simulated cluster, an index out of range).
  std::string HostOfNode(int node) const;
};

// The report's verdict as findings, for people and programs alike: each named culprit a
// CRITICAL finding (source its kind: "node", "link", "uplink", "rail", ...; where the nodes or
// the element; what its evidence); each undecided suspect, and an inconclusive or ambiguous
// verdict, an undecided finding (WARN, decided = false) with the noise and, as its fix, the
// command that would decide; a cleared cluster one OK finding ("verdict"); each straggler a
// WARN finding; each note an INFO one. OutcomeOf of them is the exit code's outcome: failed
// when a culprit is named, inconclusive when nobody is and something is undecided.
std::vector<Finding> LocateFindings(const LocateReport& report);

// Runs the procedure against `measurer`: the per-node round, the pair rounds, the
// classifier, remeasurement of what is undecided (within the budget), the collective over
// every rank. Deterministic for deterministic measurements: every rank of a real job runs
// it and takes the same decisions. Throws UsageError for fewer than 2 nodes.
LocateReport Locate(const LocateOptions& options, const ClusterLayout& layout,
                    PairMeasurer& measurer);

// Ranks whose time is below threshold x the median (late) or above it / threshold, and
// more than min_robust_z robust standard deviations away. `node_of_rank` maps rank to node.
std::vector<Straggler> FindStragglers(const RankTimes& times, const std::vector<int>& node_of_rank,
                                      const LocateOptions& options);

// ---------------------------------------------------------------------------------------
// A simulated cluster

// A fault injected into a simulated cluster: a slow node, a slow NIC (one node, one rail),
// a slow link (two nodes), a slow node interior, or a late rank.
struct SimulatedFault {
  // kNode, kNic, kLink, kIntraNode, kUplink (nodes or a fat-tree link), kSpineLink, kRail
  SuspectKind kind = SuspectKind::kNode;
  int node = 0;
  int peer = -1;         // kLink: the other node; kUplink: the leaf's last node
  int rail = -1;         // kNic, kRail: the rail
  double factor = 0.25;  // bandwidth multiplier
  // A link of the fat-tree (SimulatedClusterOptions::fat_tree), as the fabric simulator names
  // it: "leaf3->spine1" one direction, "leaf3-spine1" both.
  std::string fabric_link;
  // A switch of the fat-tree: every link to or from it (e.g. "leaf2", a rail's leaf in a
  // rail-optimized design).
  std::string fabric_switch;
};

// A fat-tree of the fabric simulator (src/model, as `fabricscope model --simulate` builds
// it) under the simulated nodes: node i's rail r is the fabric's node i, NIC r. Each pair's
// bandwidth is the narrowest link on its route (both directions, each hashed by ECMP on its
// own with a seeded hash that is the same for every measurement of the pair).
struct SimulatedFatTree {
  bool enabled = false;
  int tiers = 2;
  sim::FabricDesign design = sim::FabricDesign::kRailOptimized;
  int leaf_ports = 8;
  double oversubscription = 1;
  int leaves_per_pod = 32;
  double pod_oversubscription = 1;
  sim::Routing routing = sim::Routing::kEcmp;
  uint64_t seed = 1;  // the ECMP hash's
};

// "leaf-ports=8,oversubscription=2,tiers=2,design=classic,routing=ecmp,seed=3" (every key
// optional, as `fabricscope model --simulate` names them). Throws UsageError naming the key.
SimulatedFatTree ParseFatTree(std::string_view spec);

// The model: every pair at `bandwidth` GB/s times the smallest factor of the faults on its
// path, times log-normal noise; now and then (transient_rate) a measurement loses a random
// share up to transient_depth, as a burst of other traffic would cause; and now and then
// (stall_rate) one collective's measurement keeps only 1 - stall_depth of it, as when
// another process takes the CPU for the whole measurement (30-50x slower on a loaded
// machine: thread ranks, shared cores).
// Noise recorded on a real job (`--save-samples` files), replayed by a simulated cluster
// (`--noise-from`): built by LoadRecordedNoise.
class RecordedNoise;
// Reads samples files (docs/locate.md, "Saved samples") of runs without a fault. Throws
// UsageError naming the file and line for anything that is not one, or a file with fewer
// than two pair rounds.
std::shared_ptr<const RecordedNoise> LoadRecordedNoise(const std::vector<std::string>& paths);

struct SimulatedClusterOptions {
  int nodes = 8;
  int rails = 1;
  double bandwidth = 25.0;         // GB/s between two healthy nodes
  double intra_bandwidth = 150.0;  // GB/s inside a healthy node (rails >= 2)
  double noise = 0.03;             // sigma of the log-normal noise
  double transient_rate = 0.0;     // share of measurements hit by a transient
  double transient_depth = 0.5;    // a transient takes up to this share away
  double stall_rate = 0.0;         // share of measurements stalled
  double stall_depth = 0.97;       // a stall takes exactly this share away
  double round_s = 1.0;            // modelled seconds per round (Elapsed, for the budget)
  uint64_t seed = 1;
  std::vector<SimulatedFault> faults;
  std::vector<int> late_ranks;  // ranks that arrive late at the collective over every rank
  SimulatedFatTree fat_tree;    // the fabric under the nodes; disabled: none
  // When set, each pair measurement's deviation is drawn from these recordings instead of
  // noise/transients/stalls: a whole recorded round per simulated round (its slowdown
  // shared by every pair of the round), each pair a recorded pair's persistent offset,
  // each measurement a residual of that round (both collectives of one recorded
  // measurement together).
  std::shared_ptr<const RecordedNoise> recorded_noise;
};

// Parses "node:N[:F]", "nic:N/R[:F]", "link:A-B[:F]", "intra:N[:F]", "uplink:A-B[:F]" (the
// uplinks of a leaf switch with nodes A to B: every pair with one end behind it),
// "rail:R[:F]" (every node's NIC R), and on a fat-tree "uplink:leafL-spineS[:F]" (leaf L to
// spine S), "spine-link:spineS-leafL[:F]" (spine S down to leaf L), "fabric:LINK[:F]" (any
// link by the fabric simulator's name), "switch:NAME[:F]" (every link of a switch) (F the bandwidth
// factor, 0 < F < 1; default 0.25). Throws UsageError naming the form.
SimulatedFault ParseSimulatedFault(std::string_view text);

// A cluster of nodes that exists only as this model: seeded, so every run is the same.
class SimulatedCluster : public PairMeasurer {
 public:
  // Throws UsageError for a fault naming a node, rail or peer that is not there.
  explicit SimulatedCluster(SimulatedClusterOptions options);
  ~SimulatedCluster() override;
  std::vector<PairSample> MeasureRound(const Round& round) override;
  std::vector<NodeSample> MeasureNodes() override;
  std::optional<RankTimes> MeasureWorld() override;
  double Elapsed() const override;
  // Node names sim0..simN-1 (zero-padded), rails ranks each.
  ClusterLayout Layout() const;
  // Rounds measured so far.
  int rounds() const { return rounds_; }
  // The fat-tree's topology: each node's leaf (its rail 0's) and every pair's route, as
  // the blame reads them; empty without a fat-tree.
  Topology FabricTopology() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rounds_ = 0;
};

// ---------------------------------------------------------------------------------------
// The platform's expectation of a pair

struct Platform;

// The expected sendrecv bus bandwidth of one pair of ranks on two nodes, and where it comes
// from.
struct PairExpectation {
  double gbs = 0;
  std::string source;
  std::vector<std::string> notes;  // what it rests on, for the report (e.g. detection's evidence)
};

// What `fabricscope check` expects of a 2-node sendrecv on `platform` at `bytes`: the
// catalog's band for it when there is one, else the model of the platform (src/model), as
// check falls back to it. What two nodes' pair is judged against (LocateOptions::expect_gbs).
// Throws UsageError when the platform gives no figure.
PairExpectation PlatformPairExpectation(const Platform& platform, size_t bytes);

// ---------------------------------------------------------------------------------------
// A real job

// How a real job measures: the launch and backend, and the size of each measurement.
struct LocateJobOptions {
  LocateOptions locate;
  NodeGrouping grouping = NodeGrouping::kHost;
  // Backend, message size (min_bytes = max_bytes), iterations, warm-up, -T; the
  // collectives are set by locate (sendrecv, all_reduce).
  RunOptions measure;
  // Measure the pairs on the job's communicator where the backend has point-to-point
  // (BackendCapabilities::point_to_point): no communicator per round. false: one
  // communicator per pair and rail in every round, the way of backends without it.
  bool point_to_point = true;
  // A pair's number is its fastest timed iteration (each iteration timed on its own, the
  // engine's -I), not the mean of its iterations: waiting for a CPU only ever adds time, so
  // on a shared or busy host the fastest iteration is the steadiest measure of the path.
  // false: the mean, as `run` reports it.
  bool fastest_iteration = true;
  // Two nodes and no expectation given (locate.expect_gbs 0): what their pair is judged
  // against, from global rank 0's host (the CLI: the platform detected there, as `check`
  // detects it). Called on rank 0 only, and its answer shared with every rank, so that all
  // judge the same figure (detection on each host could differ). Must not throw; empty
  // function or answer: none.
  std::function<std::optional<PairExpectation>()> expectation_on_rank0;
};

// Runs locate over the job this process is part of: every rank gathers the hostnames,
// then each round runs sendrecv and all_reduce on the round's pairs (one per pair and rail)
// through `backend`: on the job's communicator where the backend has point-to-point
// (all_reduce then only on host memory), else on sub-communicators of the round's pairs; the
// per-node rounds of nodes with three or more ranks (or on device memory, two or more) join
// one communicator per node, once. The results reach every rank, which all take the same
// decisions. Returns the report on the process of
// global rank 0 (an empty report elsewhere: `ranks` is empty).
LocateReport RunLocateJob(const LocateJobOptions& options, Backend& backend,
                          const LaunchInfo& launch, const Env& env);

// ---------------------------------------------------------------------------------------
// Output

// The report as people read it: what ran, the node x node matrix (up to 16 nodes), the
// verdict line, then report.findings in the one text form (FindingsText).
void WriteLocateText(const LocateReport& report, std::ostream& out);
// The whole report as one JSON document.
std::string LocateJson(const LocateReport& report);
// Every measurement as JSON lines (`--save-samples`, docs/locate.md "Saved samples"): a
// header line, then one line per collective measured of each pair or node, in round order.
void WriteLocateSamples(const LocateReport& report, std::ostream& out);
// The node x node heatmap of pair bandwidth over the typical pair (rail 0 unless `rail`),
// suspects outlined; above 256 nodes, a cell is a block of nodes and shows its slowest pair.
std::string LocateHeatmapSvg(const LocateReport& report, int rail = 0);

}  // namespace fabricscope
