// A simulated cluster: the same rounds as a real job, answered by a model with injected
// faults and seeded noise. It is how locate's round counts and accuracy are checked at
// thousands of nodes.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"
#include "locate/random.h"

namespace fabricscope {
namespace {

constexpr const char* kFaultForms =
    "node:N, nic:N/RAIL, link:A-B, intra:N or uplink:FIRST-LAST (the uplinks of a leaf "
    "switch with nodes FIRST to LAST), each optionally :FACTOR (0 < FACTOR < 1, the "
    "bandwidth left; default 0.25), e.g. node:3, link:2-7:0.5";

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

}  // namespace

SimulatedFault ParseSimulatedFault(std::string_view text) {
  SimulatedFault fault;
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) BadFault(text, "no ':' after the kind");
  const std::string_view kind = text.substr(0, colon);
  std::string_view where = text.substr(colon + 1);
  if (const size_t second = where.find(':'); second != std::string_view::npos) {
    const std::string factor(where.substr(second + 1));
    char* end = nullptr;
    fault.factor = std::strtod(factor.c_str(), &end);
    if (factor.empty() || end != factor.c_str() + factor.size() || !(fault.factor > 0) ||
        !(fault.factor < 1)) {
      BadFault(text, "the factor '" + factor + "' is not a number between 0 and 1");
    }
    where = where.substr(0, second);
  }
  if (kind == "node" || kind == "intra") {
    fault.kind = kind == "node" ? SuspectKind::kNode : SuspectKind::kIntraNode;
    fault.node = ParseIndex(where, text, "the node");
  } else if (kind == "nic") {
    const size_t slash = where.find('/');
    if (slash == std::string_view::npos) BadFault(text, "a nic is NODE/RAIL");
    fault.kind = SuspectKind::kNic;
    fault.node = ParseIndex(where.substr(0, slash), text, "the node");
    fault.rail = ParseIndex(where.substr(slash + 1), text, "the rail");
  } else if (kind == "uplink") {
    const size_t dash = where.find('-');
    if (dash == std::string_view::npos)
      BadFault(text, "an uplink is FIRST-LAST (its leaf's nodes)");
    fault.kind = SuspectKind::kUplink;
    fault.node = ParseIndex(where.substr(0, dash), text, "the first node");
    fault.peer = ParseIndex(where.substr(dash + 1), text, "the last node");
    if (fault.peer < fault.node) BadFault(text, "the last node comes before the first");
  } else if (kind == "link") {
    const size_t dash = where.find('-');
    if (dash == std::string_view::npos) BadFault(text, "a link is A-B");
    fault.kind = SuspectKind::kLink;
    fault.node = ParseIndex(where.substr(0, dash), text, "node A");
    fault.peer = ParseIndex(where.substr(dash + 1), text, "node B");
    if (fault.node == fault.peer) BadFault(text, "a link joins two different nodes");
  } else {
    BadFault(text, "unknown kind '" + std::string(kind) + "'");
  }
  return fault;
}

struct SimulatedCluster::Impl {
  SimulatedClusterOptions options;
  SplitMix rng;
  std::vector<double> node;                    // per node
  std::vector<std::vector<double>> nic;        // per node, per rail
  std::vector<double> intra;                   // per node
  std::map<std::pair<int, int>, double> link;  // (a < b)
  std::vector<SimulatedFault> uplinks;         // nodes node..peer behind one slow leaf uplink

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

  // One measurement: the model's bandwidth with noise and, now and then, a transient.
  double Observe(double bandwidth) {
    double bw = bandwidth * std::exp(options.noise * rng.Normal());
    if (options.transient_rate > 0 && rng.Unit() < options.transient_rate) {
      bw *= 1.0 - options.transient_depth * rng.Unit();
    }
    return bw;
  }
};

SimulatedCluster::SimulatedCluster(SimulatedClusterOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  const SimulatedClusterOptions& o = impl_->options;
  if (o.nodes < 1) throw UsageError("a simulated cluster needs at least 1 node");
  if (o.rails < 1) throw UsageError("a simulated cluster needs at least 1 rail (ranks per node)");
  if (!(o.bandwidth > 0) || !(o.intra_bandwidth > 0)) {
    throw UsageError("simulated bandwidths must be above 0");
  }
  if (!(o.noise >= 0) || !(o.transient_rate >= 0 && o.transient_rate <= 1) ||
      !(o.transient_depth >= 0 && o.transient_depth < 1)) {
    throw UsageError(
        "simulated noise must be >= 0, the transient rate in 0..1 and its depth "
        "in 0..1 (exclusive)");
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
    check_node(f.node);
    const size_t x = static_cast<size_t>(f.node);
    switch (f.kind) {
      case SuspectKind::kNode:
        impl_->node[x] = std::min(impl_->node[x], f.factor);
        break;
      case SuspectKind::kIntraNode:
        impl_->intra[x] = std::min(impl_->intra[x], f.factor);
        break;
      case SuspectKind::kNic:
        if (f.rail < 0 || f.rail >= o.rails) {
          throw UsageError("fault on rail " + std::to_string(f.rail) +
                           ", but the simulated nodes have rails 0-" + std::to_string(o.rails - 1) +
                           " (--rails)");
        }
        impl_->nic[x][static_cast<size_t>(f.rail)] =
            std::min(impl_->nic[x][static_cast<size_t>(f.rail)], f.factor);
        break;
      case SuspectKind::kUplink:
        check_node(f.peer);
        impl_->uplinks.push_back(f);
        break;
      case SuspectKind::kLink: {
        check_node(f.peer);
        const auto key = std::minmax(f.node, f.peer);
        auto [it, added] = impl_->link.emplace(key, f.factor);
        if (!added) it->second = std::min(it->second, f.factor);
        break;
      }
    }
  }
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
  for (const NodePair& p : round.pairs) {
    const size_t a = static_cast<size_t>(p.a);
    const size_t b = static_cast<size_t>(p.b);
    double path = std::min({m.node[a], m.node[b], m.UplinkFactor(p.a, p.b)});
    if (const auto it = m.link.find(std::minmax(p.a, p.b)); it != m.link.end()) {
      path = std::min(path, it->second);
    }
    for (int r = 0; r < m.options.rails; ++r) {
      const size_t rail = static_cast<size_t>(r);
      const double factor = std::min({path, m.nic[a][rail], m.nic[b][rail]});
      PairSample s;
      s.pair = p;
      s.rail = r;
      s.sendrecv_busbw = m.Observe(m.options.bandwidth * factor);
      s.all_reduce_busbw = m.Observe(m.options.bandwidth * factor);
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
    for (int r = 0; r < o.rails; ++r) ranks.push_back(x * o.rails + r);
    layout.ranks.push_back(std::move(ranks));
  }
  layout.rails = o.rails;
  return layout;
}

}  // namespace fabricscope
