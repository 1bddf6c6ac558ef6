// A simulated cluster: the same rounds as a real job, answered by a model with injected
// faults and seeded noise. It is how locate's round counts and accuracy are checked at
// thousands of nodes.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/fabric_sim.h"
#include "fabricscope/locate.h"
#include "fabricscope/sim_hash.h"
#include "locate/random.h"
#include "locate/samples.h"

namespace fabricscope {
namespace {

constexpr const char* kFaultForms =
    "node:N, nic:N/RAIL, link:A-B, intra:N, rail:R, uplink:FIRST-LAST (the uplinks of a leaf "
    "switch with nodes FIRST to LAST), and with --fat-tree uplink:leafL-spineS, "
    "spine-link:spineS-leafL, fabric:LINK (the fabric simulator's link name) or "
    "switch:NAME (every link of a switch), each "
    "optionally :FACTOR (0 < FACTOR < 1, the bandwidth left; default 0.25), e.g. node:3, "
    "link:2-7:0.5, uplink:leaf3-spine1:0.4";

[[noreturn]] void BadFault(std::string_view text, const std::string& why) {
  throw UsageError("bad fault '" + std::string(text) + "': " + why + "; write " + kFaultForms);
}

int ParseIndex(std::string_view text, std::string_view whole, const char* what) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    BadFault(whole, std::string(what) + " '" + std::string(text) + "' is not a number >= 0");
  }
  return value;
}

// "A-B" split at its dash; `form` says what it should look like.
std::pair<std::string_view, std::string_view> SplitDash(std::string_view where,
                                                        std::string_view text, const char* form) {
  const size_t dash = where.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == where.size()) {
    BadFault(text, form);
  }
  return {where.substr(0, dash), where.substr(dash + 1)};
}

bool StartsWithDigit(std::string_view s) {
  return !s.empty() && std::isdigit(static_cast<unsigned char>(s.front())) != 0;
}

void ParseNode(std::string_view where, std::string_view text, SimulatedFault& f) {
  f.node = ParseIndex(where, text, "the node");
}

void ParseNic(std::string_view where, std::string_view text, SimulatedFault& f) {
  const size_t slash = where.find('/');
  if (slash == std::string_view::npos) BadFault(text, "a nic is NODE/RAIL");
  f.node = ParseIndex(where.substr(0, slash), text, "the node");
  f.rail = ParseIndex(where.substr(slash + 1), text, "the rail");
}

void ParseRail(std::string_view where, std::string_view text, SimulatedFault& f) {
  f.rail = ParseIndex(where, text, "the rail");
}

void ParseLink(std::string_view where, std::string_view text, SimulatedFault& f) {
  const auto [a, b] = SplitDash(where, text, "a link is A-B");
  f.node = ParseIndex(a, text, "node A");
  f.peer = ParseIndex(b, text, "node B");
  if (f.node == f.peer) BadFault(text, "a link joins two different nodes");
}

// FIRST-LAST (a leaf's nodes) or leafL-spineS (one uplink of a fat-tree).
void ParseUplink(std::string_view where, std::string_view text, SimulatedFault& f) {
  const auto [a, b] = SplitDash(where, text, "an uplink is FIRST-LAST or leafL-spineS");
  if (!StartsWithDigit(a)) {
    f.fabric_link = std::string(a) + "->" + std::string(b);
    return;
  }
  f.node = ParseIndex(a, text, "the first node");
  f.peer = ParseIndex(b, text, "the last node");
  if (f.peer < f.node) BadFault(text, "the last node comes before the first");
}

void ParseSpineLink(std::string_view where, std::string_view text, SimulatedFault& f) {
  const auto [a, b] = SplitDash(where, text, "a spine link is spineS-leafL");
  f.fabric_link = std::string(a) + "->" + std::string(b);
}

void ParseFabricLink(std::string_view where, std::string_view text, SimulatedFault& f) {
  if (where.empty()) BadFault(text, "no link name after 'fabric:'");
  f.fabric_link = std::string(where);
}

void ParseSwitch(std::string_view where, std::string_view text, SimulatedFault& f) {
  if (where.empty()) BadFault(text, "no switch name after 'switch:'");
  f.fabric_switch = std::string(where);
}

struct FaultForm {
  std::string_view kind;
  SuspectKind suspect;
  void (*parse)(std::string_view where, std::string_view text, SimulatedFault& f);
};

constexpr FaultForm kForms[] = {
    {"node", SuspectKind::kNode, ParseNode},
    {"intra", SuspectKind::kIntraNode, ParseNode},
    {"nic", SuspectKind::kNic, ParseNic},
    {"link", SuspectKind::kLink, ParseLink},
    {"rail", SuspectKind::kRail, ParseRail},
    {"uplink", SuspectKind::kUplink, ParseUplink},
    {"spine-link", SuspectKind::kSpineLink, ParseSpineLink},
    {"fabric", SuspectKind::kSpineLink, ParseFabricLink},
    {"switch", SuspectKind::kSpineLink, ParseSwitch},
};

double ParseFactor(std::string_view text, const std::string& factor) {
  char* end = nullptr;
  const double value = std::strtod(factor.c_str(), &end);
  if (factor.empty() || end != factor.c_str() + factor.size() || !(value > 0) || !(value < 1)) {
    BadFault(text, "the factor '" + factor + "' is not a number between 0 and 1");
  }
  return value;
}

}  // namespace

SimulatedFault ParseSimulatedFault(std::string_view text) {
  SimulatedFault fault;
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) BadFault(text, "no ':' after the kind");
  const std::string_view kind = text.substr(0, colon);
  std::string_view where = text.substr(colon + 1);
  if (const size_t second = where.find(':'); second != std::string_view::npos) {
    fault.factor = ParseFactor(text, std::string(where.substr(second + 1)));
    where = where.substr(0, second);
  }
  for (const FaultForm& form : kForms) {
    if (form.kind != kind) continue;
    fault.kind = form.suspect;
    form.parse(where, text, fault);
    return fault;
  }
  BadFault(text, "unknown kind '" + std::string(kind) + "'");
}

namespace {

// One key of the fat-tree spec.
void SetFatTreeKey(SimulatedFatTree& t, const std::string& key, const std::string& value) {
  auto number = [&](double& out) {
    char* end = nullptr;
    out = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size()) {
      throw UsageError("--fat-tree: " + key + "=" + value + " is not a number");
    }
  };
  double v = 0;
  if (key == "design") {
    t.design = sim::ParseDesign(value);
  } else if (key == "routing") {
    t.routing = sim::ParseRouting(value);
  } else if (key == "oversubscription") {
    number(t.oversubscription);
  } else if (key == "pod-oversubscription") {
    number(t.pod_oversubscription);
  } else {
    static const std::map<std::string, int SimulatedFatTree::*> kInts = {
        {"tiers", &SimulatedFatTree::tiers},
        {"leaf-ports", &SimulatedFatTree::leaf_ports},
        {"leaves-per-pod", &SimulatedFatTree::leaves_per_pod}};
    number(v);
    if (key == "seed") {
      t.seed = static_cast<uint64_t>(v);
      return;
    }
    const auto it = kInts.find(key);
    if (it == kInts.end()) {
      throw UsageError("--fat-tree: unknown key '" + key +
                       "': use tiers, design, leaf-ports, oversubscription, leaves-per-pod, "
                       "pod-oversubscription, routing or seed (as `fabricscope model "
                       "--simulate` names them), e.g. leaf-ports=8,oversubscription=2");
    }
    t.*(it->second) = static_cast<int>(v);
  }
}

}  // namespace

SimulatedFatTree ParseFatTree(std::string_view spec) {
  SimulatedFatTree t;
  t.enabled = true;
  size_t start = 0;
  while (start < spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item(spec.substr(start, comma - start));
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      throw UsageError("--fat-tree: '" + item +
                       "' is not KEY=VALUE; e.g. --fat-tree leaf-ports=8,oversubscription=2");
    }
    SetFatTreeKey(t, item.substr(0, eq), item.substr(eq + 1));
    start = comma + 1;
  }
  return t;
}

namespace {

// The fat-tree under a simulated cluster and the routes through it: shared with the
// topology it hands the blame, which may outlive the cluster.
struct FatTreeRoutes {
  std::shared_ptr<sim::Fabric> fabric;
  sim::Routing routing = sim::Routing::kEcmp;
  uint64_t seed = 1;
  std::map<std::string, int> node_of;  // host name -> node

  // One direction of one pair on one rail: the same key every time, so the same path.
  std::vector<int> Path(int src, int dst, int rail) const {
    const uint64_t key = sim::ConnectionKey(static_cast<uint64_t>(src), static_cast<uint64_t>(dst),
                                            static_cast<uint64_t>(rail), 0);
    return fabric->Route(src, rail, dst, rail, key, routing, seed, {}, nullptr);
  }

  // The narrowest link of both directions' routes over a NIC's rate: 1 healthy.
  double Factor(int a, int b, int rail) const {
    double f = 1.0;
    const double nominal = fabric->options().nic_gbs;
    for (const auto& [src, dst] : {std::pair{a, b}, std::pair{b, a}}) {
      for (int link : Path(src, dst, rail)) {
        f = std::min(f, fabric->link(static_cast<size_t>(link)).capacity_gbs / nominal);
      }
    }
    return f;
  }

  // Both directions' switch-to-switch links, by name.
  std::vector<std::string> SwitchLinks(int a, int b, int rail) const {
    std::vector<std::string> out;
    for (const auto& [src, dst] : {std::pair{a, b}, std::pair{b, a}}) {
      for (int link : Path(src, dst, rail)) {
        const sim::Link& l = fabric->link(static_cast<size_t>(link));
        if (l.tier == sim::LinkTier::kNicUp || l.tier == sim::LinkTier::kNicDown ||
            l.tier == sim::LinkTier::kNvlink) {
          continue;
        }
        out.push_back(l.from + "->" + l.to);
      }
    }
    return out;
  }
};

// Every link to or from `name`, at `factor`.
void DegradeSwitch(sim::Fabric& fabric, const std::string& name, double factor) {
  std::vector<std::string> touching;
  for (const sim::Link& l : fabric.links()) {
    if (l.from == name || l.to == name) touching.push_back(l.from + "->" + l.to);
  }
  if (touching.empty()) {
    throw UsageError("no switch '" + name + "' in the simulated fat-tree (switches are named " +
                     "like leaf0, spine1; see `fabricscope model --simulate --format json`)");
  }
  for (const std::string& link : touching) fabric.DegradeLink(link, factor);
}

std::shared_ptr<FatTreeRoutes> BuildFatTree(const SimulatedClusterOptions& o,
                                            const std::vector<std::string>& names) {
  const SimulatedFatTree& t = o.fat_tree;
  sim::FabricOptions fo;
  fo.nodes = o.nodes;
  fo.gpus_per_node = o.rails;
  fo.nics_per_node = o.rails;
  fo.nic_gbs = o.bandwidth;
  fo.tiers = t.tiers;
  fo.design = t.design;
  fo.leaf_ports = t.leaf_ports;
  fo.leaf_oversubscription = t.oversubscription;
  fo.leaves_per_pod = t.leaves_per_pod;
  fo.pod_oversubscription = t.pod_oversubscription;
  auto routes = std::make_shared<FatTreeRoutes>();
  routes->fabric = std::make_shared<sim::Fabric>(fo);
  routes->routing = t.routing;
  routes->seed = t.seed;
  for (size_t i = 0; i < names.size(); ++i) routes->node_of[names[i]] = static_cast<int>(i);
  for (const SimulatedFault& f : o.faults) {
    if (!f.fabric_link.empty()) routes->fabric->DegradeLink(f.fabric_link, f.factor);
    if (!f.fabric_switch.empty()) DegradeSwitch(*routes->fabric, f.fabric_switch, f.factor);
  }
  return routes;
}

}  // namespace

struct SimulatedCluster::Impl {
  SimulatedClusterOptions options;
  SplitMix rng;
  std::vector<double> node;                       // per node
  std::vector<std::vector<double>> nic;           // per node, per rail
  std::vector<double> intra;                      // per node
  std::map<std::pair<int, int>, double> link;     // (a < b)
  std::vector<SimulatedFault> uplinks;            // nodes node..peer behind one slow leaf uplink
  std::shared_ptr<const FatTreeRoutes> fat_tree;  // the fabric under the nodes, when modelled
  // Replayed noise: each pair's recorded offset, drawn once (index into pair_offsets).
  std::map<std::pair<int, int>, size_t> replayed_offset;

  // The uplinks a pair crosses: one end behind the leaf, the other not.
  double UplinkFactor(int a, int b) const {
    double f = 1.0;
    for (const SimulatedFault& u : uplinks) {
      const bool in_a = a >= u.node && a <= u.peer;
      const bool in_b = b >= u.node && b <= u.peer;
      if (in_a != in_b) f = std::min(f, u.factor);
    }
    return f;
  }

  explicit Impl(SimulatedClusterOptions o) : options(std::move(o)), rng(options.seed) {}

  void CheckRail(int rail) const {
    if (rail < 0 || rail >= options.rails) {
      throw UsageError("fault on rail " + std::to_string(rail) +
                       ", but the simulated nodes have rails 0-" +
                       std::to_string(options.rails - 1) + " (--rails)");
    }
  }

  static void Lower(double& factor, double to) { factor = std::min(factor, to); }

  // One fault on the nodes (not the fabric) into the model.
  template <typename CheckNode>
  void Apply(const SimulatedFault& f, const CheckNode& check_node) {
    const size_t x = static_cast<size_t>(f.node);
    switch (f.kind) {
      case SuspectKind::kNode:
        Lower(node[x], f.factor);
        break;
      case SuspectKind::kIntraNode:
        Lower(intra[x], f.factor);
        break;
      case SuspectKind::kNic:
        CheckRail(f.rail);
        Lower(nic[x][static_cast<size_t>(f.rail)], f.factor);
        break;
      case SuspectKind::kRail:
        CheckRail(f.rail);
        for (auto& rails : nic) Lower(rails[static_cast<size_t>(f.rail)], f.factor);
        break;
      case SuspectKind::kUplink:
        check_node(f.peer);
        uplinks.push_back(f);
        break;
      case SuspectKind::kLink: {
        check_node(f.peer);
        auto [it, added] = link.emplace(std::minmax(f.node, f.peer), f.factor);
        if (!added) Lower(it->second, f.factor);
        break;
      }
      case SuspectKind::kSpineLink:
      case SuspectKind::kSomeUplinks:
      case SuspectKind::kSpine:
        throw UsageError("a simulated fault cannot be " + std::string(NameOf(f.kind)) +
                         " without a fabric link name");
    }
  }

  // One measurement: the model's bandwidth with noise and, now and then, a transient or a
  // stall.
  double Observe(double bandwidth) {
    double bw = bandwidth * std::exp(options.noise * rng.Normal());
    if (options.transient_rate > 0 && rng.Unit() < options.transient_rate) {
      bw *= 1.0 - options.transient_depth * rng.Unit();
    }
    if (options.stall_rate > 0 && rng.Unit() < options.stall_rate) {
      bw *= 1.0 - options.stall_depth;
    }
    return bw;
  }
};

namespace {

// Each pair of `round` with its bandwidths replayed from a recorded round (see
// SimulatedClusterOptions::recorded_noise).
struct Replayer {
  const RecordedNoise& noise;
  SplitMix& rng;
  std::map<std::pair<int, int>, size_t>& offset_of;
  const RecordedNoise::RecordedRound* round = nullptr;

  void StartRound() { round = &noise.rounds[rng.Below(noise.rounds.size())]; }

  RecordedNoise::Deviation Draw(NodePair p) {
    auto [it, added] = offset_of.emplace(std::minmax(p.a, p.b), 0);
    if (added) it->second = rng.Below(noise.pair_offsets.size());
    const RecordedNoise::Deviation& offset = noise.pair_offsets[it->second];
    const RecordedNoise::Deviation& residual = round->residuals[rng.Below(round->residuals.size())];
    return {round->effect.sendrecv + offset.sendrecv + residual.sendrecv,
            round->effect.all_reduce + offset.all_reduce + residual.all_reduce};
  }
};

}  // namespace

SimulatedCluster::SimulatedCluster(SimulatedClusterOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  const SimulatedClusterOptions& o = impl_->options;
  if (o.nodes < 1) throw UsageError("a simulated cluster needs at least 1 node");
  if (o.rails < 1) throw UsageError("a simulated cluster needs at least 1 rail (ranks per node)");
  if (!(o.bandwidth > 0) || !(o.intra_bandwidth > 0)) {
    throw UsageError("simulated bandwidths must be above 0");
  }
  if (!(o.noise >= 0) || !(o.transient_rate >= 0 && o.transient_rate <= 1) ||
      !(o.transient_depth >= 0 && o.transient_depth < 1) ||
      !(o.stall_rate >= 0 && o.stall_rate <= 1) || !(o.stall_depth >= 0 && o.stall_depth < 1)) {
    throw UsageError(
        "simulated noise must be >= 0, the transient and stall rates in 0..1 and their "
        "depths in 0..1 (exclusive)");
  }
  const size_t n = static_cast<size_t>(o.nodes);
  impl_->node.assign(n, 1.0);
  impl_->intra.assign(n, 1.0);
  impl_->nic.assign(n, std::vector<double>(static_cast<size_t>(o.rails), 1.0));
  auto check_node = [&](int x) {
    if (x < 0 || x >= o.nodes) {
      throw UsageError("fault on node " + std::to_string(x) + ", but the simulated cluster has " +
                       "nodes 0-" + std::to_string(o.nodes - 1));
    }
  };
  for (const SimulatedFault& f : o.faults) {
    if (!f.fabric_link.empty() || !f.fabric_switch.empty()) {
      if (!o.fat_tree.enabled) {
        throw UsageError("the fault on the fabric's '" + f.fabric_link + f.fabric_switch +
                         "' needs a fat-tree under the nodes: add --fat-tree, e.g. "
                         "--fat-tree leaf-ports=8,oversubscription=2");
      }
      continue;  // degraded in the fabric itself
    }
    check_node(f.node);
    impl_->Apply(f, check_node);
  }
  if (o.fat_tree.enabled) impl_->fat_tree = BuildFatTree(o, Layout().names);
  for (int r : o.late_ranks) {
    if (r < 0 || r >= o.nodes * o.rails) {
      throw UsageError("late rank " + std::to_string(r) + " is not one of the simulated ranks 0-" +
                       std::to_string(o.nodes * o.rails - 1));
    }
  }
}

SimulatedCluster::~SimulatedCluster() = default;

std::vector<PairSample> SimulatedCluster::MeasureRound(const Round& round) {
  ++rounds_;
  Impl& m = *impl_;
  std::vector<PairSample> out;
  out.reserve(round.pairs.size() * static_cast<size_t>(m.options.rails));
  std::optional<Replayer> replay;
  if (m.options.recorded_noise) {
    replay.emplace(Replayer{*m.options.recorded_noise, m.rng, m.replayed_offset});
    replay->StartRound();
  }
  for (const NodePair& p : round.pairs) {
    const size_t a = static_cast<size_t>(p.a);
    const size_t b = static_cast<size_t>(p.b);
    double path = std::min({m.node[a], m.node[b], m.UplinkFactor(p.a, p.b)});
    if (const auto it = m.link.find(std::minmax(p.a, p.b)); it != m.link.end()) {
      path = std::min(path, it->second);
    }
    for (int r = 0; r < m.options.rails; ++r) {
      const size_t rail = static_cast<size_t>(r);
      const double fabric = m.fat_tree ? m.fat_tree->Factor(p.a, p.b, r) : 1.0;
      const double factor = std::min({path, fabric, m.nic[a][rail], m.nic[b][rail]});
      PairSample s;
      s.pair = p;
      s.rail = r;
      if (replay) {
        const RecordedNoise::Deviation d = replay->Draw(p);
        s.sendrecv_busbw = m.options.bandwidth * factor * std::exp(d.sendrecv);
        s.all_reduce_busbw = m.options.bandwidth * factor * std::exp(d.all_reduce);
      } else {
        s.sendrecv_busbw = m.Observe(m.options.bandwidth * factor);
        s.all_reduce_busbw = m.Observe(m.options.bandwidth * factor);
      }
      out.push_back(s);
    }
  }
  return out;
}

std::vector<NodeSample> SimulatedCluster::MeasureNodes() {
  ++rounds_;
  Impl& m = *impl_;
  std::vector<NodeSample> out;
  if (m.options.rails < 2) return out;  // one rank per node: nothing inside to measure
  for (int x = 0; x < m.options.nodes; ++x) {
    NodeSample s;
    s.node = x;
    // A slow node here is slow on the network (every NIC); its interior is a fault of its own.
    s.all_reduce_busbw = m.Observe(m.options.intra_bandwidth * m.intra[static_cast<size_t>(x)]);
    out.push_back(s);
  }
  return out;
}

std::optional<RankTimes> SimulatedCluster::MeasureWorld() {
  ++rounds_;
  Impl& m = *impl_;
  const int nranks = m.options.nodes * m.options.rails;
  // A ring all_reduce over everyone runs at the slowest member's pace; a late rank makes
  // every other rank wait as long as it is late (here: one call's worth).
  double slowest = 1.0;
  for (size_t x = 0; x < m.node.size(); ++x) {
    slowest = std::min(slowest, m.node[x]);
    for (double f : m.nic[x]) slowest = std::min(slowest, f);
  }
  for (const auto& [key, f] : m.link) slowest = std::min(slowest, f);
  const double call_us = 1000.0 / slowest;
  RankTimes t;
  t.per_rank_us.resize(static_cast<size_t>(nranks));
  const double delay = m.options.late_ranks.empty() ? 0.0 : call_us;
  for (int r = 0; r < nranks; ++r) {
    const bool late = std::find(m.options.late_ranks.begin(), m.options.late_ranks.end(), r) !=
                      m.options.late_ranks.end();
    t.per_rank_us[static_cast<size_t>(r)] =
        call_us * std::exp(m.options.noise * m.rng.Normal()) + (late ? 0.0 : delay);
  }
  const auto [lo, hi] = std::minmax_element(t.per_rank_us.begin(), t.per_rank_us.end());
  t.min_us = *lo;
  t.max_us = *hi;
  t.min_rank = static_cast<int>(lo - t.per_rank_us.begin());
  t.max_rank = static_cast<int>(hi - t.per_rank_us.begin());
  double sum = 0;
  for (double v : t.per_rank_us) sum += v;
  t.avg_us = sum / nranks;
  return t;
}

double SimulatedCluster::Elapsed() const { return rounds_ * impl_->options.round_s; }

ClusterLayout SimulatedCluster::Layout() const {
  const SimulatedClusterOptions& o = impl_->options;
  ClusterLayout layout;
  const size_t width = std::to_string(std::max(0, o.nodes - 1)).size();
  for (int x = 0; x < o.nodes; ++x) {
    std::string digits = std::to_string(x);
    layout.names.push_back("sim" + std::string(width - digits.size(), '0') + digits);
    std::vector<int> ranks;
    ranks.reserve(static_cast<size_t>(std::max(0, o.rails)));
    for (int r = 0; r < o.rails; ++r) ranks.push_back(x * o.rails + r);
    layout.ranks.push_back(std::move(ranks));
  }
  layout.rails = o.rails;
  return layout;
}

Topology SimulatedCluster::FabricTopology() const {
  Topology t;
  const std::shared_ptr<const FatTreeRoutes> routes = impl_->fat_tree;
  if (!routes) return t;
  const sim::FabricOptions& fo = routes->fabric->options();
  t.source =
      fmt::format("the simulated {}-tier {} fat-tree, leaves of {} ports at {:g}:1, {} (seed {})",
                  fo.tiers, sim::DesignName(fo.design), fo.leaf_ports, fo.leaf_oversubscription,
                  sim::RoutingName(routes->routing), routes->seed);
  for (const auto& [name, node] : routes->node_of) {
    t.leaf_of[name] =
        routes->fabric->link(static_cast<size_t>(routes->fabric->NicLink(node, 0, true))).to;
  }
  t.route = [routes](const std::string& a, const std::string& b, int rail) {
    const auto ia = routes->node_of.find(a);
    const auto ib = routes->node_of.find(b);
    if (ia == routes->node_of.end() || ib == routes->node_of.end())
      return std::vector<std::string>{};
    return routes->SwitchLinks(ia->second, ib->second, rail);
  };
  return t;
}

}  // namespace fabricscope
