// `fabricscope fabric`: the InfiniBand fabric itself. The infiniband-diags tools' outputs
// (run live or read from a saved directory) parsed into one record; findings on links,
// error counters, cabling, routing balance and the subnet manager; the topology and routes
// that the simulator, locate and check can take.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/finding.h"

namespace fabricscope::fabric {

// --------------------------------------------------------------------------- the record

// One port as iblinkinfo (or ibnetdiscover) printed it.
struct Port {
  int number = 0;
  int lanes = 0;         // 1, 2, 4, 8, 12; 0 when the port is down
  double lane_gbps = 0;  // signalling rate per lane: 2.5 SDR ... 106.25 NDR
  std::string state;     // logical: Active, Down, Initialize, Armed
  std::string physical;  // LinkUp, Polling, Disabled, ...
  int peer_lid = 0;      // 0: no peer
  int peer_port = 0;
  std::string peer_name;          // node description of the peer
  bool peer_unreachable = false;  // up, but the node behind it did not answer
  std::string evidence;           // the tool's own line, "file:line: text"
};

enum class NodeKind { kSwitch, kHca };

// A switch or an HCA.
struct Node {
  NodeKind kind = NodeKind::kHca;
  std::string guid;  // node GUID (switches) or first port GUID (HCAs), "0x..."
  std::string name;  // node description
  int lid = 0;       // switch LID or the HCA port's LID
  std::vector<Port> ports;
};

// Error counters of one port (ibqueryerrors or perfquery), by the tools' counter names.
struct PortCounters {
  std::string node;  // node description (or "lid N" when perfquery named only a LID)
  std::string guid;
  int port = 0;
  std::map<std::string, uint64_t> counters;
  std::string evidence;
};

// One switch's unicast forwarding table (dump_fts / ibroute).
struct ForwardingTable {
  std::string switch_name;
  std::string guid;
  std::map<int, int> out_port;             // destination LID -> out port (0: the switch itself)
  std::map<int, std::string> destination;  // LID -> node description ("" unknown)
  std::map<int, bool> to_hca;              // LID -> the destination is a channel adapter
};

// What sminfo and the SM's log say.
struct SubnetManager {
  bool queried = false;  // sminfo ran (or its file was there)
  bool present = false;
  int lid = 0;
  std::string guid;
  std::string state;  // SMINFO_MASTER, ...
  int priority = 0;
  std::string routing_engine;  // from the SM's log ("minhop", "ftree", ...); "" unknown
  std::string evidence;
};

// The whole fabric: nodes with their ports, counters, forwarding tables, the SM.
struct Fabric {
  std::vector<Node> nodes;
  std::vector<PortCounters> counters;
  std::vector<ForwardingTable> tables;
  SubnetManager sm;
  std::vector<std::string> sources;   // the tools or files read
  std::vector<std::string> problems;  // what could not be read or parsed, "file:line: why"

  const Node* FindByName(const std::string& name) const;
  const Node* FindByLid(int lid) const;
};

// The tools' outputs, by tool name ("ibnetdiscover", "iblinkinfo", "ibqueryerrors",
// "perfquery", "dump_fts", "sminfo", "opensm.log"), as text.
struct ToolOutputs {
  std::map<std::string, std::string> text;
  std::map<std::string, std::string> origin;    // tool -> file name or command line, for evidence
  std::map<std::string, std::string> failures;  // tool -> why it gave no output
};

// Parses every output present into one record. Never throws on bad input: lines that do
// not parse go to Fabric::problems with file:line.
Fabric ParseFabric(const ToolOutputs& outputs);

// The individual parsers (exposed for tests): each adds to `fabric`.
void ParseIblinkinfo(const std::string& text, const std::string& origin, Fabric& fabric);
void ParseIbnetdiscover(const std::string& text, const std::string& origin, Fabric& fabric);
void ParseIbqueryerrors(const std::string& text, const std::string& origin, Fabric& fabric);
void ParseDumpFts(const std::string& text, const std::string& origin, Fabric& fabric);
void ParseSminfo(const std::string& text, const std::string& origin, Fabric& fabric);
void ParseOpensmLog(const std::string& text, const std::string& origin, Fabric& fabric);

// Link rate names: "4xNDR" -> lanes 4, lane rate 106.25; throws UsageError when unknown.
struct LinkRate {
  int lanes = 0;
  double lane_gbps = 0;
};
LinkRate ParseLinkRate(const std::string& text);
std::string SpeedName(double lane_gbps);            // "QDR"; "" unknown
std::string RateName(int lanes, double lane_gbps);  // "4X QDR"
// Data rate in Gb/s after line encoding (8b/10b up to QDR, 64b/66b from FDR).
double DataGbps(int lanes, double lane_gbps);

// --------------------------------------------------------------------------- topology

// The two-tier view other commands take: host -> leaf switch, leaf -> spine links.
struct Topology {
  std::map<std::string, std::string> host_leaf;  // HCA name -> leaf switch name
  std::vector<std::string> leaves;
  std::vector<std::string> spines;
  // Active leaf-spine links: (leaf, spine) -> count of parallel links.
  std::map<std::pair<std::string, std::string>, int> uplinks;
};
Topology TopologyOf(const Fabric& fabric);

// --------------------------------------------------------------------------- findings

// The findings are fabricscope::Finding (finding.h): `source` is the kind of fault,
// `where` the link, port, switch or host it names, `what` the sentence with its figures,
// `evidence` the tools' own lines. The kinds: "link-width", "link-speed", "link-down",
// "link-mismatch", "error-counter", "error-growth", "missing-uplink", "missing-spine",
// "hosts-per-leaf", "missing-host", "dead-node", "unused-spine", "route-imbalance",
// "unroutable", "no-sm".

// The family a kind belongs to: "link", "counters", "cabling", "routing" or
// "subnet-manager"; "" for a kind that is not fabric's. One table, so that the families the
// report folds and the job's impact groups by cannot drift from the kinds.
std::string_view CategoryOf(std::string_view kind);

// What the findings are judged against.
struct FindingOptions {
  std::optional<LinkRate> expect;    // --expect 4xNDR; else the fabric's majority
  std::vector<std::string> hosts;    // hosts the fabric must reach (empty: no check)
  const Fabric* earlier = nullptr;   // an earlier read, for counter growth (--interval)
  const Fabric* baseline = nullptr;  // a healthy read (--baseline): what was cabled
  double interval_seconds = 0;
};

std::vector<Finding> LinkFindings(const Fabric& fabric, const FindingOptions& options);
std::vector<Finding> CounterFindings(const Fabric& fabric, const FindingOptions& options);
std::vector<Finding> CablingFindings(const Fabric& fabric, const FindingOptions& options);
std::vector<Finding> SubnetManagerFindings(const Fabric& fabric, const FindingOptions& options);

// --------------------------------------------------------------------------- routing

// Destinations per switch out-port, as check_lft_balance counts them (HCA LIDs only).
struct PortBalance {
  std::string switch_name;
  int port = 0;
  std::string peer;  // the switch that port leads to
  int destinations = 0;
};

// Load of one directed link under a collective's traffic, routed through the tables.
struct LinkLoad {
  std::string from;  // "leaf1[5]"
  std::string to;    // "spine1[1]"
  double flows = 0;  // ring hops (all_reduce) or flow shares (all-to-all) on it
  double capacity_gbps = 0;
};

// One collective's traffic pattern on the fabric as routed now.
struct CollectiveLoad {
  std::string collective;       // "all_reduce (ring)", "alltoall"
  std::vector<LinkLoad> links;  // busiest first
  double limit_factor = 1;      // how much the hottest link slows the collective (>= 1)
  double balanced_factor = 1;   // the same with the routes spread evenly
  std::string unroutable;       // why a flow could not be routed ("" all routed)
};

struct RoutingAnalysis {
  std::vector<PortBalance> balance;
  std::vector<std::string> hosts;  // in ring order
  CollectiveLoad ring;
  CollectiveLoad alltoall;
};

// Hosts default to every HCA in natural name order (NCCL's ring order follows the ranks).
RoutingAnalysis AnalyzeRouting(const Fabric& fabric, const std::vector<std::string>& hosts);
std::vector<Finding> RoutingFindings(const Fabric& fabric, const RoutingAnalysis& routing);

// --------------------------------------------------------------------------- prediction

// `fabricscope model --fabric DIR`: the collective's busbw on this fabric as routed now and
// with balanced routes, from max-min fair sharing of every link (the simulator's) over the
// flows routed through the forwarding tables.
struct PredictOptions {
  std::vector<std::string> hosts;         // ring order; empty: every HCA in name order
  std::string collective = "all_reduce";  // all_reduce (ring) or alltoall
  double efficiency = 1.0;                // fraction of a link's data rate a flow reaches
};

struct RoutedPrediction {
  std::string routing;     // "as routed", "balanced"
  double busbw_gbs = 0;    // GB/s
  std::string bottleneck;  // the link the slowest flow is limited by
  double bottleneck_flows = 0;
};

struct FabricPrediction {
  std::string collective;
  std::vector<std::string> hosts;
  double host_gbs = 0;  // a host link's data rate x efficiency, GB/s
  std::string unroutable;
  RoutedPrediction as_routed;
  RoutedPrediction balanced;
};

// Throws UsageError for an unknown collective, fewer than two hosts, or no forwarding tables.
FabricPrediction PredictOnFabric(const Fabric& fabric, const PredictOptions& options);
std::string FormatPredictionText(const FabricPrediction& prediction);
std::string FormatPredictionJson(const FabricPrediction& prediction);

// --------------------------------------------------------------------------- one pair's path

// The route one pair of hosts takes: from the forwarding tables, and as ibtracert saw it.
struct PairPath {
  std::string src;
  std::string dst;
  std::vector<std::string> hops;         // "h1[1] -> leaf1[1]", through the tables
  std::string why;                       // why the tables give no route ("" they do)
  std::vector<std::string> traced_hops;  // the same from ibtracert's output (empty: not run)
  std::vector<std::string> evidence;     // ibtracert's lines
};

// Traces src -> dst through the tables; `ibtracert` (its output, may be empty) adds the
// hops the tool saw. Throws UsageError when src or dst is not an HCA of the fabric.
PairPath TracePair(const Fabric& fabric, const std::string& src, const std::string& dst,
                   const std::string& ibtracert, const std::string& origin);

// --------------------------------------------------------------------------- the report

// Everything `fabricscope fabric` hands to a reporter.
struct FabricReport {
  Fabric fabric;
  Topology topology;
  RoutingAnalysis routing;
  std::vector<Finding> findings;
  std::optional<PairPath> path;  // --path
  Severity worst() const;        // OK when nothing was found
};

struct AnalyzeOptions {
  FindingOptions findings;
};
FabricReport Analyze(Fabric fabric, const AnalyzeOptions& options);

std::string FormatText(const FabricReport& report, bool verbose);
std::string FormatJson(const FabricReport& report);
std::string FormatSvg(const FabricReport& report);
// The fabric as a section of `fabricscope report`'s HTML: the findings, then the picture.
std::string FormatHtmlSection(const FabricReport& report);

// --------------------------------------------------------------------------- one job

// What the fabric does to one job's collective (`fabricscope check --fabric DIR`): the
// findings on its routes, the link that limits it and by how much, and the busbw the
// simulator predicts as routed and balanced.
struct JobImpact {
  std::string collective;            // "all_reduce (ring)" or "alltoall"
  std::vector<std::string> hosts;    // the job's HCAs in ring order
  std::string hosts_from;            // "the run's host names" or "every HCA of the fabric"
  std::vector<std::string> missing;  // job hosts that are not HCAs of the fabric
  CollectiveLoad load;               // through the forwarding tables, hottest link first
  std::optional<FabricPrediction> prediction;  // empty: see prediction_error
  std::string prediction_error;
  std::vector<Finding> on_path;    // on the job's links or switches; the hottest link's first
  std::vector<Finding> elsewhere;  // the fabric's other findings
  // The fraction of its host links' rate the collective reaches on this fabric as routed
  // (the prediction's busbw over a host link's; 1 when nothing in the fabric limits it).
  double RoutedFraction() const;
};

// The HCAs of a job's hosts: a node description equal to the host name, else the first one
// that starts with "HOST " (infiniband-diags' "host mlx5_0"); unmatched names go to
// `missing`.
std::vector<std::string> HcasOfHosts(const Fabric& fabric, const std::vector<std::string>& hosts,
                                     std::vector<std::string>* missing);

// The job over `hosts` (HCA names in ring order; empty, or any unknown: every HCA), its
// traffic as a ring (all_reduce and the other ring collectives) or an all-to-all.
JobImpact ImpactOnJob(const FabricReport& report, const std::vector<std::string>& hosts, bool ring);

// --------------------------------------------------------------------------- collecting

// How the tools are run live.
struct CollectOptions {
  double timeout_seconds = 30;  // per tool
  std::string sm_log;           // the SM's log, for its routing engine ("" none)
};

// Runs the tools found on PATH (no shell, each with a timeout). A missing tool or one that
// fails is recorded in outputs (origin) and later in Fabric::problems; throws SystemError
// only when not even ibnetdiscover or iblinkinfo could be run.
ToolOutputs CollectLive(const CollectOptions& options);
// Reads DIR/<tool>.txt (and .out, or the bare name); throws UsageError when DIR holds none.
ToolOutputs ReadSaved(const std::string& dir);
// Runs `ibtracert SRC_LID DST_LID` (no shell, with the timeout); "" with `why` set when it
// could not run or failed.
std::string RunIbtracert(int src_lid, int dst_lid, double timeout_seconds, std::string* why);
// Writes the outputs as DIR/<tool>.txt, for a later --from.
void SaveOutputs(const ToolOutputs& outputs, const std::string& dir);

// The file names ReadSaved looks for, one per tool.
const std::vector<std::string>& ToolNames();

// --------------------------------------------------------------------------- one run

// What `fabricscope fabric` does: where the outputs come from, where they go, what to judge.
struct RunOptions {
  std::string from;               // read saved outputs from this directory ("" run the tools)
  std::string save;               // also write the outputs here (live mode)
  std::string baseline;           // a saved read of the healthy fabric ("" none)
  double interval_seconds = 0;    // > 0: read twice, this far apart, for counter growth
  std::vector<std::string> path;  // two hosts: the route between them (ibtracert live, or
                                  // FROM/ibtracert.txt)
  CollectOptions collect;
  AnalyzeOptions analyze;
};

// Live: runs the tools (twice with an interval; the first read is saved as SAVE/earlier).
// Saved: reads FROM, and FROM/earlier when it is there. Throws UsageError on bad options
// or input directories, SystemError when the fabric cannot be read at all.
FabricReport RunFabric(const RunOptions& options);

// Output formats as a registry: name -> what it writes.
struct FabricReporter {
  const char* name;
  const char* description;
  std::string (*write)(const FabricReport& report, bool verbose);
};
const std::vector<FabricReporter>& FabricReporters();
const FabricReporter& FindFabricReporter(const std::string& name);  // UsageError if unknown

}  // namespace fabricscope::fabric
