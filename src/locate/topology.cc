// The topology locate blames: which leaf switch each host hangs from, from a host-to-switch
// map file or Slurm's topology.conf, and the blame itself: a leaf whose nodes are slow with
// every node behind other leaves, and fine among themselves, has slow uplinks.
#include "locate/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/locate.h"

namespace fabricscope {
namespace {

std::string_view Trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
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

int ParseNumber(std::string_view text, std::string_view list) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw UsageError("bad host list '" + std::string(list) + "': '" + std::string(text) +
                     "' is not a number");
  }
  return value;
}

// "01-03,7" inside the brackets of `prefix`: the hosts, zero-padded as the range's start.
void ExpandRanges(const std::string& prefix, std::string_view ranges, std::string_view list,
                  std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= ranges.size()) {
    const size_t comma = std::min(ranges.find(',', start), ranges.size());
    const std::string_view part = ranges.substr(start, comma - start);
    const size_t dash = part.find('-');
    const std::string_view first = part.substr(0, dash);
    const int lo = ParseNumber(first, list);
    const int hi = dash == std::string_view::npos ? lo : ParseNumber(part.substr(dash + 1), list);
    if (hi < lo) throw UsageError("bad host list '" + std::string(list) + "': range runs down");
    for (int i = lo; i <= hi; ++i) {
      std::string digits = std::to_string(i);
      if (digits.size() < first.size()) digits.insert(0, first.size() - digits.size(), '0');
      out.push_back(prefix + digits);
    }
    start = comma + 1;
  }
}

}  // namespace

std::vector<std::string> ExpandHostList(std::string_view list) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < list.size()) {
    // One item: up to the next comma outside brackets.
    size_t end = i;
    int depth = 0;
    for (; end < list.size() && (depth > 0 || list[end] != ','); ++end) {
      depth += list[end] == '[' ? 1 : (list[end] == ']' ? -1 : 0);
    }
    const std::string_view item = Trim(list.substr(i, end - i));
    const size_t open = item.find('[');
    if (open == std::string_view::npos) {
      if (!item.empty()) out.emplace_back(item);
    } else {
      const size_t close = item.find(']', open);
      if (close == std::string_view::npos || close + 1 != item.size()) {
        throw UsageError("bad host list '" + std::string(list) + "': write host[1-4,7]");
      }
      ExpandRanges(std::string(item.substr(0, open)), item.substr(open + 1, close - open - 1), list,
                   out);
    }
    i = end + 1;
  }
  return out;
}

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
    for (const std::string& host : ExpandHostList(keys["Nodes"])) {
      t.leaf_of[host] = keys["SwitchName"];
    }
  }
  if (t.empty()) throw UsageError(source + ": no 'SwitchName=... Nodes=...' line (a leaf)");
  return t;
}

Topology ReadFabricTopology(const std::string& dir) {
  const fabric::Topology discovered =
      fabric::TopologyOf(fabric::ParseFabric(fabric::ReadSaved(dir)));
  Topology t;
  t.leaf_of = discovered.host_leaf;
  t.source = dir;
  if (t.empty()) {
    throw UsageError(dir +
                     ": the fabric's outputs show no HCA with an active link to a switch: "
                     "no host to place on a leaf");
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

namespace topology {
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

// Whether a suspect is explained by the leaf's slow uplinks.
bool Explained(const Suspect& s, const std::vector<char>& in_leaf) {
  if (s.kind == SuspectKind::kLink) {
    return (in_leaf[static_cast<size_t>(s.nodes.front())] != 0) !=
           (in_leaf[static_cast<size_t>(s.nodes.back())] != 0);
  }
  return false;
}

}  // namespace

std::vector<std::pair<std::string, std::vector<int>>> Leaves(const Topology& topology,
                                                             const ClusterLayout& layout) {
  std::map<std::string, std::vector<int>> by_leaf;
  for (size_t i = 0; i < layout.names.size(); ++i) {
    const auto it = topology.leaf_of.find(layout.names[i]);
    if (it != topology.leaf_of.end()) by_leaf[it->second].push_back(static_cast<int>(i));
  }
  return {by_leaf.begin(), by_leaf.end()};
}

void Blame(const Topology& topology, LocateReport& report) {
  if (topology.empty()) return;
  const size_t nodes = report.layout.names.size();
  for (const auto& [leaf, members] : Leaves(topology, report.layout)) {
    // One node behind a leaf is that node as far as pairs can tell; all nodes, no outside.
    if (members.size() < 2 || members.size() == nodes) continue;
    std::vector<char> in_leaf(nodes, 0);
    for (int x : members) in_leaf[static_cast<size_t>(x)] = 1;
    Suspect s;
    s.kind = SuspectKind::kUplink;
    s.nodes = members;
    s.element = leaf;
    s.confirmed = true;
    std::vector<double> ratios;
    int crossing = 0;
    int slow = 0;
    for (int r = 0; r < report.layout.rails; ++r) {
      const LeafPairs p = Classify(report, in_leaf, r);
      if (!Uplinks(p)) continue;
      s.rails.push_back(r);
      ratios.insert(ratios.end(), p.crossing_ratios.begin(), p.crossing_ratios.end());
      crossing += p.crossing;
      slow += p.crossing_slow;
    }
    if (s.rails.empty()) continue;
    s.ratio = Median(ratios);
    s.agreeing = slow;
    s.measurements = crossing;
    s.confidence = static_cast<double>(slow) / crossing;
    s.evidence = fmt::format(
        "{} of the {} pairs between its {} nodes and the nodes behind other switches slow "
        "(none fine), median {:.2f}x; its nodes fine among themselves: the uplinks of {} "
        "(from {})",
        slow, crossing, members.size(), s.ratio, leaf, topology.source);
    auto& named = report.suspects;
    named.erase(std::remove_if(named.begin(), named.end(),
                               [&](const Suspect& x) { return Explained(x, in_leaf); }),
                named.end());
    auto& undecided = report.undecided;
    undecided.erase(std::remove_if(undecided.begin(), undecided.end(),
                                   [&](const Suspect& x) { return Explained(x, in_leaf); }),
                    undecided.end());
    named.push_back(std::move(s));
    report.status = LocateStatus::kFound;
  }
}

}  // namespace topology
}  // namespace fabricscope
