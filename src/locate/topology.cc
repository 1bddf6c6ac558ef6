// The topology locate blames: which leaf switch each host hangs from, from a host-to-switch
// map file or Slurm's topology.conf, and the blame itself: a leaf whose nodes are slow with
// every node behind other leaves, and fine among themselves, has slow uplinks.
#include "locate/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/fabric_links.h"
#include "fabricscope/fabric_routes.h"
#include "fabricscope/host_list.h"
#include "fabricscope/locate.h"
#include "fabricscope/strings.h"
#include "locate/classifier.h"

namespace fabricscope {
namespace {

// `name`'s entry in `by_host`, else its short name's ("node01.cluster" finds node01).
template <typename Map>
typename Map::const_iterator FindHost(const Map& by_host, const std::string& name) {
  const auto it = by_host.find(name);
  return it != by_host.end() ? it : by_host.find(name.substr(0, name.find('.')));
}

// Lines without comments, with their numbers.
std::vector<std::pair<int, std::string>> Lines(std::string_view text) {
  std::vector<std::pair<int, std::string>> out;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string_view body = Trim(std::string_view(line).substr(0, line.find('#')));
    if (!body.empty()) out.emplace_back(number, std::string(body));
  }
  return out;
}

[[noreturn]] void BadLine(const std::string& source, int line, const std::string& why) {
  throw UsageError(fmt::format("{}:{}: {}", source, line, why));
}

}  // namespace

Topology ParseHostSwitchMap(std::string_view text, const std::string& source) {
  Topology t;
  t.source = source;
  for (const auto& [number, line] : Lines(text)) {
    std::istringstream words(line);
    std::string host;
    std::string leaf;
    std::string extra;
    words >> host >> leaf;
    if (leaf.empty() || (words >> extra)) {
      BadLine(source, number, "expected 'HOST SWITCH' (two words), got '" + line + "'");
    }
    t.leaf_of[host] = leaf;
  }
  if (t.empty()) throw UsageError(source + ": no 'HOST SWITCH' line");
  return t;
}

Topology ParseSlurmTopology(std::string_view text, const std::string& source) {
  Topology t;
  t.source = source;
  for (const auto& [number, line] : Lines(text)) {
    std::map<std::string, std::string> keys;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos)
        BadLine(source, number, "expected KEY=VALUE, got '" + word + "'");
      keys[word.substr(0, eq)] = word.substr(eq + 1);
    }
    if (!keys.count("SwitchName")) BadLine(source, number, "no SwitchName= on the line");
    if (!keys.count("Nodes")) continue;  // a switch of switches: a spine
    // A leaf's Nodes= within Slurm's own bound on a range (MAX_RANGE, 65536, in
    // src/common/hostlist.c): a larger one is a typo, and under the general bound of 1M
    // names one line cost seconds (found by tests/fuzz/topology_conf_fuzz).
    constexpr size_t kMaxLeafNodes = size_t{1} << 16;
    for (const std::string& host : ExpandHostList(keys["Nodes"], kMaxLeafNodes)) {
      t.leaf_of[host] = keys["SwitchName"];
    }
  }
  if (t.empty()) throw UsageError(source + ": no 'SwitchName=... Nodes=...' line (a leaf)");
  return t;
}

namespace {

// The host an HCA's node description names: its first word ("node01 mlx5_0", opensm's
// default, is node01's).
std::string HostOfDescription(const std::string& description) {
  const std::string_view trimmed = Trim(description);
  return std::string(trimmed.substr(0, trimmed.find_first_of(" \t")));
}

// The fabric's routes between hosts, through the switches' forwarding tables (dump_fts):
// each host's HCAs in name order, one per rail; each pair's switch-to-switch cables, the
// ones its traffic crosses either way, once each, named by their ports leaf end first
// ("leaf1[5]->spine1[1]", as the fabric command names ports). A cable, not a direction: a
// link that trained at a lower width or speed is slow both ways, and a cable is what is
// reseated or replaced.
class FabricRoutes {
 public:
  FabricRoutes(fabric::Fabric parsed, const std::vector<std::string>& leaves)
      : fabric_(std::move(parsed)), leaves_(leaves.begin(), leaves.end()) {
    for (const fabric::Node& node : fabric_.nodes) {
      if (node.kind == fabric::NodeKind::kHca) hcas_[HostOfDescription(node.name)].push_back(&node);
    }
    for (auto& [host, list] : hcas_) {
      std::sort(list.begin(), list.end(), [](const fabric::Node* x, const fabric::Node* y) {
        return fabric::NaturalLess(x->name, y->name);
      });
    }
  }

  // The leaf switch of each host's first HCA (rail 0).
  std::map<std::string, std::string> Leaves(const fabric::Topology& discovered) const {
    std::map<std::string, std::string> out;
    for (const auto& [host, list] : hcas_) {
      const auto it = discovered.host_leaf.find(list.front()->name);
      if (it != discovered.host_leaf.end()) out[host] = it->second;
    }
    return out;
  }

  std::vector<std::string> Route(const std::string& a, const std::string& b, int rail) const {
    const fabric::Node* x = Hca(a, rail);
    const fabric::Node* y = Hca(b, rail);
    std::vector<std::string> out;
    if (x == nullptr || y == nullptr) return out;
    Append(*x, *y, out);
    Append(*y, *x, out);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

 private:
  const fabric::Node* Hca(const std::string& host, int rail) const {
    const auto it = FindHost(hcas_, host);
    if (it == hcas_.end() || rail < 0 || static_cast<size_t>(rail) >= it->second.size()) {
      return nullptr;
    }
    return it->second[static_cast<size_t>(rail)];
  }

  // The switch-to-switch hops from src to dst (none when the tables cannot route it).
  void Append(const fabric::Node& src, const fabric::Node& dst,
              std::vector<std::string>& out) const {
    std::string why;
    const fabric::Node* at = &src;
    for (const fabric::Hop& hop : fabric::TraceRoute(fabric_, src, dst, &why)) {
      if (at->kind == fabric::NodeKind::kSwitch && hop.next != nullptr &&
          hop.next->kind == fabric::NodeKind::kSwitch) {
        out.push_back(Cable(hop.from, hop.to, at->name, hop.next->name));
      }
      at = hop.next;
    }
  }

  // "leaf1[5]->spine1[1]" whichever way the hop went: the leaf's end first, else the
  // ports in natural order.
  std::string Cable(const std::string& from, const std::string& to, const std::string& from_switch,
                    const std::string& to_switch) const {
    const bool from_leaf = leaves_.count(from_switch) > 0;
    const bool to_leaf = leaves_.count(to_switch) > 0;
    const bool keep = from_leaf != to_leaf ? from_leaf : !fabric::NaturalLess(to, from);
    return keep ? from + "->" + to : to + "->" + from;
  }

  const fabric::Fabric fabric_;
  const std::set<std::string> leaves_;
  std::map<std::string, std::vector<const fabric::Node*>> hcas_;  // host -> its HCAs
};

}  // namespace

Topology ReadFabricTopology(const std::string& dir) {
  fabric::Fabric parsed = fabric::ParseFabric(fabric::ReadSaved(dir));
  const fabric::Topology discovered = fabric::TopologyOf(parsed);
  const bool tables = !parsed.tables.empty();
  auto routes = std::make_shared<const FabricRoutes>(std::move(parsed), discovered.leaves);
  Topology t;
  t.source = dir;
  t.leaf_of = routes->Leaves(discovered);
  if (t.empty()) {
    throw UsageError(dir +
                     ": the fabric's outputs show no HCA with an active link to a switch: "
                     "no host to place on a leaf");
  }
  // Without dump_fts the leaves alone: which of a leaf's uplinks, the blame cannot say.
  if (tables) {
    t.route = [routes](const std::string& a, const std::string& b, int rail) {
      return routes->Route(a, b, rail);
    };
  }
  return t;
}

Topology ReadTopology(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return ReadFabricTopology(path);
  std::ifstream in(path);
  if (!in) {
    throw SystemError("cannot read the topology '" + path +
                      "': give a host-to-switch map (HOST SWITCH per line) or Slurm's "
                      "topology.conf");
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  return content.find("SwitchName=") != std::string::npos ? ParseSlurmTopology(content, path)
                                                          : ParseHostSwitchMap(content, path);
}

namespace locate {
namespace {

// A leaf's pairs on one rail: crossing its uplinks, or inside it.
struct LeafPairs {
  std::vector<double> crossing_ratios;
  int crossing = 0;
  int crossing_slow = 0;
  int crossing_fine = 0;
  int inside_slow = 0;
};

LeafPairs Classify(const LocateReport& report, const std::vector<char>& in_leaf, int rail) {
  LeafPairs p;
  for (const PairJudgement& j : report.judgements) {
    if (j.rail != rail) continue;
    const bool a = in_leaf[static_cast<size_t>(j.pair.a)] != 0;
    const bool b = in_leaf[static_cast<size_t>(j.pair.b)] != 0;
    if (a && b) {
      p.inside_slow += j.call == PairCall::kSlow ? 1 : 0;
    } else if (a || b) {
      ++p.crossing;
      p.crossing_slow += j.call == PairCall::kSlow ? 1 : 0;
      p.crossing_fine += j.call == PairCall::kFine ? 1 : 0;
      p.crossing_ratios.push_back(j.ratio);
    }
  }
  return p;
}

// Slow uplinks: no crossing pair fine, at least 3 in 4 slow, none inside slow.
bool Uplinks(const LeafPairs& p) {
  return p.crossing > 0 && p.crossing_fine == 0 && 4 * p.crossing_slow >= 3 * p.crossing &&
         p.inside_slow == 0;
}

std::vector<char> Mask(size_t nodes, const std::vector<int>& members) {
  std::vector<char> in(nodes, 0);
  for (int x : members) in[static_cast<size_t>(x)] = 1;
  return in;
}

// Takes off the named and the undecided the links (on a rail) an element explains: a link
// slow on other rails too keeps those.
void RemoveExplained(LocateReport& report,
                     const std::function<bool(const NodePair&, int rail)>& explained) {
  for (auto* list : {&report.suspects, &report.undecided}) {
    for (Suspect& s : *list) {
      if (s.kind != SuspectKind::kLink) continue;
      const NodePair pair{s.nodes.front(), s.nodes.back()};
      s.rails.erase(
          std::remove_if(s.rails.begin(), s.rails.end(), [&](int r) { return explained(pair, r); }),
          s.rails.end());
    }
    list->erase(std::remove_if(list->begin(), list->end(),
                               [](const Suspect& s) {
                                 return s.kind == SuspectKind::kLink && s.rails.empty();
                               }),
                list->end());
  }
}

// The named slow links on one rail, and each one's ratio.
std::map<NodePair, double> SlowLinks(const LocateReport& report, int rail) {
  std::map<NodePair, double> out;
  for (const Suspect& s : report.suspects) {
    if (s.kind != SuspectKind::kLink) continue;
    if (std::find(s.rails.begin(), s.rails.end(), rail) == s.rails.end()) continue;
    out[NodePair{s.nodes.front(), s.nodes.back()}] = s.ratio;
  }
  return out;
}

// The names of the job's leaves, and whose nodes are behind each.
std::map<std::string, std::vector<int>> LeafMembers(const Topology& topology,
                                                    const ClusterLayout& layout) {
  const auto leaves = Leaves(topology, layout);
  return {leaves.begin(), leaves.end()};
}

void Name(LocateReport& report, Suspect s) {
  s.confirmed = true;
  report.suspects.push_back(std::move(s));
  report.status = LocateStatus::kFound;
}

}  // namespace

std::vector<std::pair<std::string, std::vector<int>>> Leaves(const Topology& topology,
                                                             const ClusterLayout& layout) {
  std::map<std::string, std::vector<int>> by_leaf;
  for (size_t i = 0; i < layout.names.size(); ++i) {
    const auto it = FindHost(topology.leaf_of, layout.names[i]);
    if (it != topology.leaf_of.end()) by_leaf[it->second].push_back(static_cast<int>(i));
  }
  return {by_leaf.begin(), by_leaf.end()};
}

void BlameWholeLeaves(const Topology& topology, LocateReport& report) {
  const size_t nodes = report.layout.names.size();
  for (const auto& [leaf, members] : Leaves(topology, report.layout)) {
    // One node behind a leaf is that node as far as pairs can tell; all nodes, no outside.
    if (members.size() < 2 || members.size() == nodes) continue;
    const std::vector<char> in_leaf = Mask(nodes, members);
    Suspect s;
    s.kind = SuspectKind::kUplink;
    s.nodes = members;
    s.element = leaf;
    std::vector<double> ratios;
    for (int r = 0; r < report.layout.rails; ++r) {
      const LeafPairs p = Classify(report, in_leaf, r);
      if (!Uplinks(p)) continue;
      s.rails.push_back(r);
      ratios.insert(ratios.end(), p.crossing_ratios.begin(), p.crossing_ratios.end());
      s.measurements += p.crossing;
      s.agreeing += p.crossing_slow;
    }
    if (s.rails.empty()) continue;
    s.ratio = Median(ratios);
    s.confidence = static_cast<double>(s.agreeing) / s.measurements;
    s.evidence = fmt::format(
        "{} of the {} pairs between its {} nodes and the nodes behind other switches slow "
        "(none fine), median {:.2f}x; its nodes fine among themselves: the uplinks of {} "
        "(from {})",
        s.agreeing, s.measurements, members.size(), s.ratio, leaf, topology.source);
    const std::vector<int> rails = s.rails;
    RemoveExplained(report, [&](const NodePair& p, int rail) {
      return std::find(rails.begin(), rails.end(), rail) != rails.end() &&
             (in_leaf[static_cast<size_t>(p.a)] != 0) != (in_leaf[static_cast<size_t>(p.b)] != 0);
    });
    Name(report, std::move(s));
  }
}

std::map<std::string, ElementPairs> CrossedBy(
    const LocateReport& report, int rail, const std::map<NodePair, double>& slow_links,
    const std::function<std::vector<std::string>(const NodePair&)>& route) {
  std::map<std::string, ElementPairs> out;
  for (const PairJudgement& j : report.judgements) {
    if (j.rail != rail) continue;
    std::vector<std::string> elements = route(j.pair);
    std::sort(elements.begin(), elements.end());
    elements.erase(std::unique(elements.begin(), elements.end()), elements.end());
    const bool slow_link = slow_links.count(j.pair) > 0;
    for (const std::string& e : elements) {
      ElementPairs& p = out[e];
      ++p.total;
      p.slow += j.call == PairCall::kSlow ? 1 : 0;
      p.fine += j.call == PairCall::kFine ? 1 : 0;
      if (slow_link) p.links.push_back(j.pair);
    }
  }
  return out;
}

std::optional<std::string> BestElement(const std::map<std::string, ElementPairs>& crossed) {
  auto qualifies = [](const ElementPairs& p) {
    return p.fine == 0 && p.links.size() >= 2 && 4 * p.slow >= 3 * p.total;
  };
  const std::string* best = nullptr;
  for (const auto& [name, p] : crossed) {
    if (qualifies(p) && (best == nullptr || p.links.size() > crossed.at(*best).links.size())) {
      best = &name;
    }
  }
  if (best == nullptr) return std::nullopt;
  const std::vector<NodePair>& links = crossed.at(*best).links;  // sorted: judgements are
  for (const auto& [name, p] : crossed) {
    if (name == *best || !qualifies(p)) continue;
    // Another element that every one of these pairs crosses: the routes cannot tell them
    // apart.
    if (std::includes(p.links.begin(), p.links.end(), links.begin(), links.end())) {
      return std::nullopt;
    }
  }
  return *best;
}

Suspect ElementSuspect(const std::string& element, const ElementPairs& p,
                       const std::map<NodePair, double>& slow_links, const Topology& topology,
                       const LocateReport& report) {
  const size_t arrow = element.find("->");
  const std::string from = element.substr(0, arrow);
  const std::string to = element.substr(arrow + 2);
  // A fabric's routes name ports ("leaf1[5]": a cable, both ways), the simulator's
  // switches ("leaf1").
  const bool ports = from.find('[') != std::string::npos;
  const std::string from_switch = from.substr(0, from.find('['));
  const auto leaves = LeafMembers(topology, report.layout);
  const bool up = leaves.count(from_switch) > 0;
  Suspect s;
  s.kind = up ? SuspectKind::kUplink : SuspectKind::kSpineLink;
  s.element = from + "-" + to;
  const std::string leaf = up ? from_switch : to.substr(0, to.find('['));
  if (const auto it = leaves.find(leaf); it != leaves.end()) s.nodes = it->second;
  std::vector<double> ratios;
  for (const NodePair& pair : p.links) {
    ratios.push_back(slow_links.at(pair));
    if (s.nodes.empty() || leaves.count(leaf) == 0) s.nodes.push_back(pair.a);
  }
  std::sort(s.nodes.begin(), s.nodes.end());
  s.nodes.erase(std::unique(s.nodes.begin(), s.nodes.end()), s.nodes.end());
  s.ratio = Median(ratios);
  s.agreeing = p.slow;
  s.measurements = p.total;
  s.confidence = static_cast<double>(p.slow) / p.total;
  s.evidence = fmt::format(
      "{} of the {} pairs whose routes cross {} slow (none fine), median {:.2f}x, and every "
      "one of the {} slow links it explains crosses it: {} {} {} {} (routes from {})",
      p.slow, p.total, element, s.ratio, p.links.size(),
      ports ? "the cable between" : "the link from", from, ports ? "and" : "to", to,
      topology.source);
  return s;
}

void BlameRoutes(const Topology& topology, LocateReport& report) {
  if (!topology.route) return;
  const auto& names = report.layout.names;
  for (int r = 0; r < report.layout.rails; ++r) {
    std::map<NodePair, std::vector<std::string>> routes;
    auto route = [&](const NodePair& pair) -> const std::vector<std::string>& {
      auto [it, added] = routes.try_emplace(pair);
      if (added) {
        it->second = topology.route(names[static_cast<size_t>(pair.a)],
                                    names[static_cast<size_t>(pair.b)], r);
      }
      return it->second;
    };
    for (;;) {
      const std::map<NodePair, double> slow = SlowLinks(report, r);
      if (slow.size() < 2) break;
      const auto crossed = CrossedBy(report, r, slow, route);
      const std::optional<std::string> best = BestElement(crossed);
      if (!best) break;
      Suspect s = ElementSuspect(*best, crossed.at(*best), slow, topology, report);
      s.rails = {r};
      RemoveExplained(report, [&](const NodePair& pair, int rail) {
        if (rail != r) return false;
        const auto& elements = route(pair);
        return std::find(elements.begin(), elements.end(), *best) != elements.end();
      });
      Name(report, std::move(s));
    }
  }
}

std::optional<LeafSubset> SubsetOf(const LocateReport& report, const std::vector<int>& members) {
  const size_t nodes = report.layout.names.size();
  if (members.size() < 2 || members.size() == nodes) return std::nullopt;
  const std::vector<char> in_leaf = Mask(nodes, members);
  LeafSubset subset;
  std::set<int> inside;
  std::set<int> outside;
  for (const Suspect& s : report.suspects) {
    if (s.kind != SuspectKind::kLink) continue;
    const bool a = in_leaf[static_cast<size_t>(s.nodes.front())] != 0;
    const bool b = in_leaf[static_cast<size_t>(s.nodes.back())] != 0;
    if (a && b) return std::nullopt;  // slow among themselves: not (only) the uplinks
    if (a == b) continue;
    subset.links.push_back(NodePair{s.nodes.front(), s.nodes.back()});
    subset.ratios.push_back(s.ratio);
    inside.insert(a ? s.nodes.front() : s.nodes.back());
    outside.insert(a ? s.nodes.back() : s.nodes.front());
  }
  for (const PairJudgement& j : report.judgements) {
    const bool a = in_leaf[static_cast<size_t>(j.pair.a)] != 0;
    const bool b = in_leaf[static_cast<size_t>(j.pair.b)] != 0;
    subset.crossing += a != b ? 1 : 0;
  }
  // One node's or one peer's links are that node's or that link's, not a switch's.
  if (subset.links.size() < 3 || inside.size() < 2 || outside.size() < 2) return std::nullopt;
  std::sort(subset.links.begin(), subset.links.end());
  return subset;
}

void BlameLeafSubsets(const Topology& topology, LocateReport& report) {
  const size_t nodes = report.layout.names.size();
  for (;;) {
    std::vector<std::pair<std::string, LeafSubset>> found;
    for (const auto& [leaf, members] : Leaves(topology, report.layout)) {
      if (auto subset = SubsetOf(report, members)) found.emplace_back(leaf, std::move(*subset));
    }
    if (found.empty()) return;
    const auto best = std::max_element(
        found.begin(), found.end(),
        [](const auto& x, const auto& y) { return x.second.links.size() < y.second.links.size(); });
    for (const auto& other : found) {
      if (&other == &*best) continue;
      const auto& mine = best->second.links;
      if (std::includes(other.second.links.begin(), other.second.links.end(), mine.begin(),
                        mine.end())) {
        report.notes.push_back(fmt::format(
            "the slow links all cross both {} and {}: which switch's uplinks are at fault is "
            "ambiguous without the routes",
            best->first, other.first));
        return;
      }
    }
    const std::string leaf = best->first;
    const LeafSubset subset = best->second;
    const std::vector<int> members = LeafMembers(topology, report.layout).at(leaf);
    const std::vector<char> in_leaf = Mask(nodes, members);
    Suspect s;
    s.kind = SuspectKind::kSomeUplinks;
    s.element = leaf;
    s.nodes = members;
    for (int r = 0; r < report.layout.rails; ++r) s.rails.push_back(r);
    s.ratio = Median(subset.ratios);
    s.agreeing = static_cast<int>(subset.links.size());
    s.measurements = s.agreeing;
    s.confidence = 1.0;
    s.evidence = fmt::format(
        "{} of the {} pairs between its {} nodes and the nodes behind other switches slow, "
        "median {:.2f}x, and the rest fine: a subset, as one slow link among its uplinks (or "
        "a spine's link down to it) slows the flows ECMP hashes onto it; its nodes fine among "
        "themselves. Which link: give the routes (from {})",
        subset.links.size(), subset.crossing, members.size(), s.ratio, topology.source);
    RemoveExplained(report, [&](const NodePair& p, int) {
      return (in_leaf[static_cast<size_t>(p.a)] != 0) != (in_leaf[static_cast<size_t>(p.b)] != 0);
    });
    Name(report, std::move(s));
  }
}

void BlameRails(LocateReport& report) {
  const int rails = report.layout.rails;
  if (rails < 2 || report.layout.names.size() < 3) return;
  std::vector<std::vector<double>> logs(static_cast<size_t>(rails));
  for (const PairJudgement& j : report.judgements) {
    if (j.sendrecv > 0 && j.all_reduce > 0) {
      logs[static_cast<size_t>(j.rail)].push_back(0.5 *
                                                  (std::log(j.sendrecv) + std::log(j.all_reduce)));
    }
  }
  double sigma = 0;
  double df = 1e6;
  for (const RailBaseline& b : report.baselines) {
    sigma = std::max(sigma, b.sigma);
    df = std::min(df, std::max(1.0, b.noise_df));
  }
  const LocateOptions& o = report.options;
  const double z = locate::CriticalValue(o.confidence, rails, df);
  for (int r = 0; r < rails; ++r) {
    const RailTest t = TestRail(logs, r, sigma, z, std::log(o.threshold));
    if (!t.slow) continue;
    Suspect s;
    s.kind = SuspectKind::kRail;
    s.element = "rail" + std::to_string(r);
    for (size_t x = 0; x < report.layout.names.size(); ++x) s.nodes.push_back(static_cast<int>(x));
    s.rails = {r};
    s.ratio = std::exp(t.diff);
    s.agreeing = t.pairs;
    s.measurements = t.pairs;
    s.confidence = 1.0;
    s.evidence = fmt::format(
        "every pair on rail {} at {:.2f}x the pairs on the other rails (median of {} pairs, "
        "{:.1f} standard errors below {:.2f}x): the rail's own switch or plane, not a node",
        r, s.ratio, t.pairs, (std::log(o.threshold) - t.diff) / t.se, o.threshold);
    Name(report, std::move(s));
  }
}

RailTest TestRail(const std::vector<std::vector<double>>& logs, int rail, double sigma, double z,
                  double log_threshold) {
  RailTest t;
  std::vector<double> others;
  for (size_t r = 0; r < logs.size(); ++r) {
    if (static_cast<int>(r) != rail) others.insert(others.end(), logs[r].begin(), logs[r].end());
  }
  const std::vector<double>& mine = logs[static_cast<size_t>(rail)];
  t.pairs = static_cast<int>(mine.size());
  if (mine.empty() || others.empty()) return t;
  t.diff = Median(mine) - Median(others);
  // Medians: 1.2533 x sd / sqrt n each; the sd the larger of the noise and their spread.
  auto se = [&](const std::vector<double>& v) {
    const double sd = std::max(sigma, v.size() >= 3 ? RobustSigma(v) : 0.0);
    return 1.2533 * sd / std::sqrt(static_cast<double>(v.size()));
  };
  t.se = std::hypot(se(mine), se(others));
  t.slow = t.se > 0 && t.diff < log_threshold - z * t.se;
  return t;
}

std::string SpineOf(const Suspect& s, const std::map<std::string, std::vector<int>>& leaves) {
  const std::string& e = s.element;
  for (const auto& [leaf, members] : leaves) {
    if (s.kind == SuspectKind::kUplink && e.rfind(leaf + "-", 0) == 0) {
      return e.substr(leaf.size() + 1);
    }
    if (s.kind == SuspectKind::kSpineLink && e.size() > leaf.size() + 1 &&
        e.compare(e.size() - leaf.size() - 1, std::string::npos, "-" + leaf) == 0) {
      return e.substr(0, e.size() - leaf.size() - 1);
    }
  }
  return {};
}

void BlameSpines(const Topology& topology, LocateReport& report) {
  const auto leaves = LeafMembers(topology, report.layout);
  if (leaves.size() < 2) return;
  std::map<std::string, std::set<std::string>> leaves_of;  // spine -> leaves it has a link to
  for (const Suspect& s : report.suspects) {
    const std::string spine = SpineOf(s, leaves);
    if (spine.empty()) continue;
    const bool up = s.kind == SuspectKind::kUplink;
    leaves_of[spine].insert(up ? s.element.substr(0, s.element.size() - spine.size() - 1)
                               : s.element.substr(spine.size() + 1));
  }
  for (const auto& [spine, linked] : leaves_of) {
    if (linked.size() != leaves.size()) continue;
    Suspect named;
    named.kind = SuspectKind::kSpine;
    named.element = spine;
    std::vector<double> ratios;
    std::set<int> rails;
    auto& list = report.suspects;
    for (const Suspect& s : list) {
      if (SpineOf(s, leaves) != spine) continue;
      ratios.push_back(s.ratio);
      rails.insert(s.rails.begin(), s.rails.end());
      named.agreeing += s.agreeing;
      named.measurements += s.measurements;
    }
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&leaves, &spine = spine](const Suspect& s) {
                                return SpineOf(s, leaves) == spine;
                              }),
               list.end());
    for (size_t x = 0; x < report.layout.names.size(); ++x) {
      named.nodes.push_back(static_cast<int>(x));
    }
    named.rails.assign(rails.begin(), rails.end());
    named.ratio = Median(ratios);
    named.confidence = static_cast<double>(named.agreeing) / named.measurements;
    named.evidence = fmt::format(
        "a slow link between {} and every one of the {} leaves, each named on its own "
        "evidence (summed over the links: {} of {} crossing pairs slow, none fine, median "
        "{:.2f}x): the "
        "spine switch itself",
        spine, leaves.size(), named.agreeing, named.measurements, named.ratio);
    Name(report, std::move(named));
  }
}

void Blame(const Topology& topology, LocateReport& report) {
  BlameRails(report);
  if (topology.empty()) return;
  BlameWholeLeaves(topology, report);
  BlameRoutes(topology, report);
  BlameSpines(topology, report);
  BlameLeafSubsets(topology, report);
}

}  // namespace locate
}  // namespace fabricscope
