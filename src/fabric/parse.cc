// Parsers of the infiniband-diags outputs into the fabric record. Fail-soft: a line that
// looks like a record but does not parse is kept as a problem with its file:line.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "fabric/text_lines.h"
#include "fabricscope/error.h"
#include "fabricscope/fabric.h"

namespace fabricscope::fabric {
namespace {

struct SpeedEntry {
  const char* name;
  double lane_gbps;
};
// Per-lane signalling rates as iblinkinfo prints them.
constexpr SpeedEntry kSpeeds[] = {{"SDR", 2.5},       {"DDR", 5.0},     {"QDR", 10.0},
                                  {"FDR10", 10.3125}, {"FDR", 14.0625}, {"EDR", 25.78125},
                                  {"HDR", 53.125},    {"NDR", 106.25},  {"XDR", 212.5}};

Node& NodeNamed(Fabric& fabric, NodeKind kind, const std::string& name) {
  for (auto& n : fabric.nodes) {
    if (n.name == name) return n;
  }
  fabric.nodes.push_back(Node{kind, "", name, 0, {}});
  return fabric.nodes.back();
}

Port& PortNumbered(Node& node, int number) {
  for (auto& p : node.ports) {
    if (p.number == number) return p;
  }
  node.ports.push_back(Port{});
  node.ports.back().number = number;
  return node.ports.back();
}

// "( 4X          10.0 Gbps Active/  LinkUp)" without the parentheses.
bool ParseLinkState(const std::string& inner, Port& port) {
  static const std::regex re(R"(^\s*(?:(\d+)X\s+)?(?:([\d.]+) Gbps\s+)?(\w+)/\s*(\w+)\s*$)");
  std::smatch m;
  if (!std::regex_match(inner, m, re)) return false;
  port.lanes = m[1].matched ? Int(m[1]) : 0;
  port.lane_gbps = m[2].matched ? Real(m[2]) : 0;
  port.state = m[3];
  port.physical = m[4];
  return true;
}

bool ParsePeer(const std::string& right, Port& port) {
  static const std::regex peer(R"re(^(\d+)\s+(\d+)\[[^\]]*\]\s+"(.*)"\s*(\(.*\))?\s*$)re");
  static const std::regex none(R"re(^\[[^\]]*\]\s+""\s*(\(.*\))?\s*$)re");
  std::smatch m;
  if (std::regex_match(right, m, peer)) {
    port.peer_lid = Int(m[1]);
    port.peer_port = Int(m[2]);
    port.peer_name = m[3];
    return true;
  }
  if (std::regex_match(right, none)) return true;
  if (right.find("\"Port not available\"") != std::string::npos) {
    port.peer_unreachable = true;
    return true;
  }
  return false;
}

}  // namespace

std::string SpeedName(double lane_gbps) {
  for (const auto& s : kSpeeds) {
    if (std::abs(s.lane_gbps - lane_gbps) < 1e-6) return s.name;
  }
  return "";
}

std::string RateName(int lanes, double lane_gbps) {
  if (lanes == 0) return "down";
  const std::string speed = SpeedName(lane_gbps);
  std::ostringstream out;
  out << lanes << "X " << (speed.empty() ? std::to_string(lane_gbps) + " Gbps" : speed);
  return out.str();
}

double DataGbps(int lanes, double lane_gbps) {
  const double encoding = lane_gbps <= 10.0 ? 0.8 : 64.0 / 66.0;
  return lanes * lane_gbps * encoding;
}

LinkRate ParseLinkRate(const std::string& text) {
  // InfiniBand link widths: 1X, 2X, 4X, 8X, 12X.
  static const std::regex re(R"(^\s*(1|2|4|8|12)\s*[xX]\s*([A-Za-z0-9]+)\s*$)");
  std::smatch m;
  if (std::regex_match(text, m, re)) {
    const std::string speed = Upper(m[2].str());
    for (const auto& s : kSpeeds) {
      if (speed == s.name) return LinkRate{Int(m[1]), s.lane_gbps};
    }
  }
  throw UsageError("--expect '" + text +
                   "' is not a link rate: write lanes x speed, e.g. 4xNDR, 4xHDR, 2xNDR "
                   "(widths 1 2 4 8 12; speeds SDR DDR QDR FDR10 FDR EDR HDR NDR XDR)");
}

const Node* Fabric::FindByName(const std::string& name) const {
  for (const auto& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

const Node* Fabric::FindByLid(int lid) const {
  for (const auto& n : nodes) {
    if (n.lid == lid) return &n;
  }
  return nullptr;
}

void ParseIblinkinfo(const std::string& text, const std::string& origin, Fabric& fabric) {
  static const std::regex sw(R"(^Switch:\s+(0x[0-9a-fA-F]+)\s+(.*):\s*$)");
  static const std::regex ca(R"(^CA:\s+(.*):\s*$)");
  static const std::regex port_line(
      R"(^\s*(0x[0-9a-fA-F]+\s+)?(\d+)\s+(\d+)\[[^\]]*\]\s+==\((.*)\)==>\s*(.*)$)");
  Node* node = nullptr;
  ForEachLineSafe(text, origin, fabric.problems, [&](const std::string& line, size_t number) {
    std::smatch m;
    if (std::regex_match(line, m, sw)) {
      node = &NodeNamed(fabric, NodeKind::kSwitch, m[2]);
      node->kind = NodeKind::kSwitch;
      node->guid = m[1];
    } else if (std::regex_match(line, m, ca)) {
      node = &NodeNamed(fabric, NodeKind::kHca, m[1]);
    } else if (std::regex_match(line, m, port_line) && node != nullptr) {
      Port& port = PortNumbered(*node, Int(m[3]));
      node->lid = Int(m[2]);
      if (node->kind == NodeKind::kHca && m[1].matched && node->guid.empty()) {
        node->guid = Trim(m[1].str());
      }
      port.evidence = Evidence(origin, number, line);
      if (!ParseLinkState(m[4], port) || !ParsePeer(m[5], port)) {
        fabric.problems.push_back(Evidence(origin, number, line) +
                                  " (a port line whose state or peer did not parse)");
      }
    } else if (!Trim(line).empty() && !line.starts_with("#")) {
      fabric.problems.push_back(Evidence(origin, number, line) + " (not an iblinkinfo line)");
    }
  });
}

void ParseIbnetdiscover(const std::string& text, const std::string& origin, Fabric& fabric) {
  static const std::regex header(
      R"re(^(Switch|Ca)\s+\d+\s+"[SH]-([0-9a-fA-F]+)"\s+#\s+"(.*?)"(?:.*?\blid (\d+))?.*$)re");
  static const std::regex port_line(
      R"re(^\[(\d+)\](?:\([0-9a-fA-F]+\))?\s+"[SH]-[0-9a-fA-F]+"\[(\d+)\](?:\([0-9a-fA-F]+\))?\s+#.*?"(.*?)" lid (\d+) (\d+)x(\w+).*$)re");
  Node* node = nullptr;
  ForEachLineSafe(text, origin, fabric.problems, [&](const std::string& line, size_t number) {
    std::smatch m;
    if (std::regex_match(line, m, header)) {
      const NodeKind kind = m[1] == "Switch" ? NodeKind::kSwitch : NodeKind::kHca;
      node = &NodeNamed(fabric, kind, m[3]);
      node->kind = kind;
      if (node->guid.empty()) node->guid = "0x" + std::string(m[2]);
      if (m[4].matched && node->lid == 0) node->lid = Int(m[4]);
    } else if (std::regex_match(line, m, port_line) && node != nullptr) {
      Port& port = PortNumbered(*node, Int(m[1]));
      if (!port.evidence.empty()) return;  // iblinkinfo's line is richer: keep it
      port.peer_port = Int(m[2]);
      port.peer_name = m[3];
      port.peer_lid = Int(m[4]);
      port.lanes = Int(m[5]);
      try {
        port.lane_gbps = ParseLinkRate("1x" + std::string(m[6])).lane_gbps;
      } catch (const UsageError&) {
        fabric.problems.push_back(Evidence(origin, number, line) + " (unknown speed)");
      }
      port.state = "Active";
      port.physical = "LinkUp";
      port.evidence = Evidence(origin, number, line);
      if (node->kind == NodeKind::kHca) {
        static const std::regex lid(R"(# lid (\d+))");
        std::smatch l;
        if (std::regex_search(line, l, lid)) node->lid = Int(l[1]);
      }
    } else if (line.starts_with("[")) {
      fabric.problems.push_back(Evidence(origin, number, line) +
                                " (a port line that did not parse)");
    }
  });
}

void ParseIbqueryerrors(const std::string& text, const std::string& origin, Fabric& fabric) {
  static const std::regex node_re(R"re(^Errors for (?:(0x[0-9a-fA-F]+)\s+)?"(.*)"\s*$)re");
  static const std::regex port_re(R"(^\s+GUID (0x[0-9a-fA-F]+) port (\d+|ALL):\s*(.*)$)");
  static const std::regex counter_re(R"(\[(\w+) == (\d+)\])");
  // perfquery's "# Port counters: Lid 4 port 7" block, then "Name:....value".
  static const std::regex perf_header(R"(^# Port (?:extended )?counters: Lid (\d+) port (\d+))");
  static const std::regex perf_value(R"(^(\w+):\.*(\d+)\s*$)");
  std::string node_name;
  PortCounters* perf = nullptr;
  ForEachLineSafe(text, origin, fabric.problems, [&](const std::string& line, size_t number) {
    std::smatch m;
    if (std::regex_match(line, m, node_re)) {
      node_name = m[2];
    } else if (std::regex_match(line, m, port_re)) {
      perf = nullptr;
      if (m[2] == "ALL") return;  // the sum of the ports listed next
      PortCounters c{node_name, m[1], Int(m[2]), {}, Evidence(origin, number, line)};
      const std::string rest = m[3];
      for (std::sregex_iterator it(rest.begin(), rest.end(), counter_re), end; it != end; ++it) {
        c.counters[(*it)[1]] = U64((*it)[2]);
      }
      fabric.counters.push_back(std::move(c));
    } else if (std::regex_search(line, m, perf_header)) {
      const Node* n = fabric.FindByLid(Int(m[1]));
      fabric.counters.push_back(PortCounters{n != nullptr ? n->name : "lid " + std::string(m[1]),
                                             n != nullptr ? n->guid : "",
                                             Int(m[2]),
                                             {},
                                             Evidence(origin, number, line)});
      perf = &fabric.counters.back();
    } else if (perf != nullptr && std::regex_match(line, m, perf_value)) {
      perf->counters[m[1]] = U64(m[2]);
    }
  });
}

void ParseDumpFts(const std::string& text, const std::string& origin, Fabric& fabric) {
  static const std::regex header(R"(^Unicast lids .* guid (0x[0-9a-fA-F]+) \((.*)\):\s*$)");
  static const std::regex entry(R"(^(0x[0-9a-fA-F]+)\s+(\d+)\s+:\s+\((.*)\)\s*$)");
  static const std::regex dest(R"re(^(Channel Adapter|Switch) portguid 0x[0-9a-fA-F]+: '(.*)'$)re");
  ForwardingTable* table = nullptr;
  ForEachLineSafe(text, origin, fabric.problems, [&](const std::string& line, size_t number) {
    std::smatch m;
    if (std::regex_match(line, m, header)) {
      fabric.tables.push_back(ForwardingTable{m[2], m[1], {}, {}, {}});
      table = &fabric.tables.back();
    } else if (std::regex_match(line, m, entry)) {
      if (table == nullptr) {
        fabric.problems.push_back(Evidence(origin, number, line) + " (an entry before any switch)");
        return;
      }
      const int lid = Int(m[1].str().substr(2), 16);  // after "0x"
      table->out_port[lid] = Int(m[2]);
      const std::string info = m[3];
      std::smatch d;
      if (std::regex_match(info, d, dest)) {
        table->destination[lid] = d[2];
        table->to_hca[lid] = d[1] == "Channel Adapter";
      } else {
        table->destination[lid] = "";
        table->to_hca[lid] = false;
      }
    } else if (line.starts_with("0x")) {
      fabric.problems.push_back(Evidence(origin, number, line) +
                                " (a table entry that did not parse)");
    }
  });
}

void ParseSminfo(const std::string& text, const std::string& origin, Fabric& fabric) {
  static const std::regex re(
      R"(sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count \d+ priority (\d+) state \d+ (\S+))");
  fabric.sm.queried = true;
  ForEachLineSafe(text, origin, fabric.problems, [&](const std::string& line, size_t number) {
    std::smatch m;
    if (std::regex_search(line, m, re)) {
      fabric.sm.present = true;
      fabric.sm.lid = Int(m[1]);
      fabric.sm.guid = m[2];
      fabric.sm.priority = Int(m[3]);
      fabric.sm.state = m[4];
      fabric.sm.evidence = Evidence(origin, number, line);
    }
  });
}

void ParseOpensmLog(const std::string& text, const std::string& origin, Fabric& fabric) {
  static const std::regex re(R"((\S+) tables configured on all switches)");
  ForEachLineSafe(text, origin, fabric.problems, [&](const std::string& line, size_t) {
    std::smatch m;
    if (std::regex_search(line, m, re)) fabric.sm.routing_engine = m[1];  // the last one counts
  });
}

namespace {

struct ParserEntry {
  const char* tool;
  void (*parse)(const std::string&, const std::string&, Fabric&);
};
// In this order: iblinkinfo's ports first, ibnetdiscover fills in what it lacks; the counters
// name nodes found by then.
constexpr ParserEntry kParsers[] = {{"iblinkinfo", ParseIblinkinfo},
                                    {"ibnetdiscover", ParseIbnetdiscover},
                                    {"ibqueryerrors", ParseIbqueryerrors},
                                    {"perfquery", ParseIbqueryerrors},
                                    {"dump_fts", ParseDumpFts},
                                    {"sminfo", ParseSminfo},
                                    {"opensm.log", ParseOpensmLog}};

}  // namespace

const std::vector<std::string>& ToolNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& p : kParsers) out.emplace_back(p.tool);
    return out;
  }();
  return names;
}

Fabric ParseFabric(const ToolOutputs& outputs) {
  Fabric fabric;
  for (const auto& p : kParsers) {
    const auto it = outputs.text.find(p.tool);
    const auto origin_it = outputs.origin.find(p.tool);
    const std::string origin = origin_it != outputs.origin.end() ? origin_it->second : p.tool;
    if (it == outputs.text.end()) continue;
    fabric.sources.push_back(origin);
    p.parse(it->second, origin, fabric);
  }
  for (const auto& [tool, why] : outputs.failures) {
    fabric.problems.push_back(fmt::format("{}: {}", tool, why));
  }
  return fabric;
}

}  // namespace fabricscope::fabric
