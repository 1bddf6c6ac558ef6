// An SVG picture of the fabric: switches in tiers (spines, leaves) and hosts below, links
// coloured by state (red down or unanswered, orange in a finding, grey idle, blue loaded)
// and drawn thicker the more ring all_reduce flows they carry.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "fabricscope/fabric.h"
#include "fabricscope/fabric_links.h"
#include "fabricscope/html_escape.h"

namespace fabricscope::fabric {
namespace {

std::string Escape(const std::string& text) { return analyze::XmlEscape(text); }

// Parallel links between two switches would be drawn on top of each other: each switch port
// gets its own point along the box.
double PortOffset(const Node& node, int port) {
  if (node.kind != NodeKind::kSwitch || node.ports.empty()) return 0;
  const double span = 36.0;
  const double n = static_cast<double>(node.ports.size());
  return span * ((static_cast<double>(port) - 0.5) / n - 0.5);
}

struct Point {
  double x = 0;
  double y = 0;
};

std::map<std::string, Point> Layout(const FabricReport& report, double width) {
  std::map<std::string, Point> at;
  auto row = [&](const std::vector<std::string>& names, double y) {
    for (size_t i = 0; i < names.size(); ++i) {
      at[names[i]] =
          Point{width * (static_cast<double>(i) + 0.5) / static_cast<double>(names.size()), y};
    }
  };
  row(report.topology.spines, 60);
  row(report.topology.leaves, 200);
  std::vector<std::string> hosts;
  for (const auto& leaf : report.topology.leaves) {
    std::vector<std::string> mine;
    for (const auto& [h, l] : report.topology.host_leaf) {
      if (l == leaf) mine.push_back(h);
    }
    std::sort(mine.begin(), mine.end(), NaturalLess);
    hosts.insert(hosts.end(), mine.begin(), mine.end());
  }
  row(hosts, 340);
  return at;
}

}  // namespace

std::string FormatSvg(const FabricReport& report) {
  const double width =
      std::max<double>(600, 48.0 * static_cast<double>(report.topology.host_leaf.size()));
  const auto at = Layout(report, width);
  std::set<std::string> flagged;  // node names in a link or cabling finding
  for (const auto& f : report.findings) flagged.insert(f.where);
  std::map<std::string, double> ring_load;
  for (const auto& l : report.routing.ring.links) ring_load[l.from + "|" + l.to] = l.flows;
  std::ostringstream svg;
  svg << fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"400\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<title>fabric</title>\n",
      width);
  for (const auto& link : ActiveLinks(report.fabric)) {
    const auto a = at.find(link.a->name);
    if (a == at.end()) continue;
    std::string color = "#9e9e9e";
    Point b_point{a->second.x, a->second.y - 60};
    std::string b_name = "(no answer)";
    if (link.b != nullptr && at.contains(link.b->name)) {
      b_point = at.at(link.b->name);
      b_point.x += PortOffset(*link.b, link.b_port->number);
      b_name = PortName(link.b->name, link.b_port->number);
    }
    const std::string a_name = PortName(link.a->name, link.a_port->number);
    double flows = 0;
    for (const auto& [key, v] : ring_load) {
      if (key.starts_with(a_name + "|") || key.starts_with(b_name + "|")) flows += v;
    }
    if (flows > 0) color = "#1e88e5";
    const bool in_finding = std::any_of(flagged.begin(), flagged.end(), [&](const std::string& s) {
      return s.find(a_name) != std::string::npos || s.find(b_name) != std::string::npos;
    });
    if (in_finding) color = "#fb8c00";
    if (link.b == nullptr || link.a_port->state != "Active") color = "#e53935";
    svg << fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"{:.1f}\"><title>{} &lt;-&gt; {}: {} {}, ring flows {:g}</title></line>\n",
        a->second.x + PortOffset(*link.a, link.a_port->number), a->second.y, b_point.x, b_point.y,
        color, 1.0 + 1.5 * flows, Escape(a_name), Escape(b_name),
        RateName(link.a_port->lanes, link.a_port->lane_gbps), Escape(link.a_port->state), flows);
  }
  // Ports down that a finding points at: a red stub above the node.
  for (const auto& node : report.fabric.nodes) {
    const auto a = at.find(node.name);
    if (a == at.end()) continue;
    for (const auto& port : node.ports) {
      if (port.state != "Down") continue;
      const bool named =
          std::any_of(report.findings.begin(), report.findings.end(), [&](const Finding& f) {
            return std::find(f.evidence.begin(), f.evidence.end(), port.evidence) !=
                   f.evidence.end();
          });
      if (!named) continue;
      const double x = a->second.x - 20 + 5.0 * port.number;
      svg << fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e53935\" "
          "stroke-width=\"2\"><title>{} {}/{}</title></line>\n",
          x, a->second.y - 10, x, a->second.y - 40, Escape(PortName(node.name, port.number)),
          Escape(port.state), Escape(port.physical));
    }
  }
  for (const auto& [name, p] : at) {
    const bool host = report.topology.host_leaf.contains(name);
    const std::string fill = flagged.contains(name) ? "#ffe0b2" : (host ? "#e8f5e9" : "#e3f2fd");
    svg << fmt::format(
        "<g><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"44\" height=\"20\" rx=\"3\" fill=\"{}\" "
        "stroke=\"#455a64\"/><text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>"
        "</g>\n",
        p.x - 22, p.y - 10, fill, p.x, p.y + 4, Escape(name));
  }
  svg << "</svg>\n";
  return svg.str();
}

namespace {

// One finding as a list item: severity, where and what, the tool's lines, the fix.
std::string FindingItem(const Finding& f) {
  const char* css = f.severity == Severity::kCritical ? "error"
                    : f.severity == Severity::kWarn   ? "warning"
                                                      : "info";
  std::string item = fmt::format("<li class=\"{}\"><b>{} {}</b>: {}", css, SeverityName(f.severity),
                                 Escape(f.where), Escape(f.what));
  for (const auto& line : f.evidence) item += "<br><code>" + Escape(line) + "</code>";
  if (!f.fix.empty()) item += "<br>fix: " + Escape(f.fix);
  return item + "</li>\n";
}

}  // namespace

std::string FormatHtmlSection(const FabricReport& report) {
  const size_t hosts = report.topology.host_leaf.size();
  std::string html = fmt::format(
      "<h2>Fabric</h2>\n<p>{} spine(s), {} leaf switch(es), {} host(s); {} finding(s), worst "
      "{}.</p>\n",
      report.topology.spines.size(), report.topology.leaves.size(), hosts, report.findings.size(),
      SeverityName(report.worst()));
  if (report.findings.empty()) {
    html += "<p>no findings: every link, counter and route is as expected</p>\n";
  } else {
    html += "<ul>\n";
    for (const auto& f : report.findings) html += FindingItem(f);
    html += "</ul>\n";
  }
  return html + "<div class=\"plots\">\n" + FormatSvg(report) + "</div>\n";
}

}  // namespace fabricscope::fabric
