// NCCL's INFO lines of every rank, grouped by node and compared: each node's values of each
// aspect (transport per channel, HCAs, plugin, version, TUNING, NVLS, CollNet), the value most
// nodes share, and the nodes that differ, with the first line of each value.
#include "fabricscope/nccl_nodes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analyze/chunked_lines.h"
#include "analyze/lines.h"
#include "analyze/text_fields.h"

namespace fabricscope {
namespace {

using analyze::Contains;
using analyze::IsDigit;
using analyze::StartsWith;
using analyze::Trim;

// A value each node can print many times (once per rank and channel) is kept once per node;
// this many distinct values per aspect and node are enough to tell nodes apart.
constexpr size_t kMaxValuesPerAspect = 64;

// "NET/IB/0/GDRDMA" -> "NET/IB/GDRDMA", "P2P/CUMEM/read" as is: the kind of a connection
// without the device numbers, which differ between ranks of one healthy node.
std::string ConnectionKind(std::string_view how) {
  std::string kind;
  size_t start = 0;
  while (start <= how.size()) {
    const size_t slash = how.find('/', start);
    std::string_view part =
        how.substr(start, slash == std::string_view::npos ? how.npos : slash - start);
    part = part.substr(0, part.find('('));  // PXN: "0(1)"
    int64_t unused = 0;
    if (!part.empty() && !analyze::ParseInt(part, unused)) {
      if (!kind.empty()) kind += '/';
      kind += part;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return kind;
}

// "[0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>" -> "mlx5_0:1/IB mlx5_1:1/IB".
std::string Devices(std::string_view list) {
  list = list.substr(0, list.find(';'));
  std::string out;
  std::string_view f[64];
  const size_t n = std::min<size_t>(analyze::SplitFields(list, f, 63), 63);
  for (size_t i = 0; i < n; ++i) {
    std::string_view d = f[i];
    if (StartsWith(d, "[")) d = d.substr(std::min(d.find(']') + 1, d.size()));
    if (d.empty()) continue;
    if (!out.empty()) out += ' ';
    out += d;
  }
  return out;
}

// Text with its run-specific numbers blanked: pointers, "dev N", ranks in brackets.
std::string Normalized(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '0' && i + 1 < text.size() && text[i + 1] == 'x') {
      out += "0x*";
      i += 2;
      while (i < text.size() && std::isxdigit(static_cast<unsigned char>(text[i])) != 0) ++i;
      --i;
      continue;
    }
    out += text[i];
  }
  for (std::string_view key : {" on dev ", " dev ", " rank ", " comm "}) {
    const size_t at = out.find(key);
    if (at == std::string::npos) continue;
    size_t end = at + key.size();
    while (end < out.size() && out[end] != ' ' && out[end] != ',') ++end;
    out.replace(at + key.size(), end - at - key.size(), "*");
  }
  return out;
}

// "AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 33.9" -> "AllReduce 1048576 B: Algo 1
// proto 2" (the time is the model's estimate and varies).
std::string Tuning(std::string_view text) {
  const size_t time = text.find(" time ");
  return std::string(Trim(time == std::string_view::npos ? text : text.substr(0, time)));
}

struct Aspect {
  std::string_view name;
  // The value a message gives this aspect; empty when it says nothing about it.
  std::string (*value)(std::string_view message);
};

std::string TransportValue(std::string_view m) {
  const size_t via = analyze::FindAnchored(m, " via ", 1);
  if (via == std::string_view::npos || !(StartsWith(m, "Channel") || StartsWith(m, "Ring")))
    return {};
  return ConnectionKind(Trim(m.substr(via + 5)));
}
std::string HcaValue(std::string_view m) {
  for (std::string_view lead : {"NET/IB : Using ", "NET/IB: Using ", "NET/Socket : Using "}) {
    if (StartsWith(m, lead))
      return std::string(lead.substr(0, lead.find(' '))) + " " + Devices(m.substr(lead.size()));
  }
  return {};
}
std::string PluginValue(std::string_view m) {
  if (StartsWith(m, "NET/Plugin") || StartsWith(m, "Using network ") ||
      Contains(m, "Loaded net plugin") || Contains(m, "Loaded coll plugin") ||
      (StartsWith(m, "NET/") && Contains(m, " ver"))) {
    return Normalized(m);
  }
  return {};
}
std::string VersionValue(std::string_view m) {
  const size_t at = analyze::FindAnchored(m, "NCCL version ", 5);
  if (at == std::string_view::npos) return {};
  std::string_view f[3];
  const size_t n = analyze::SplitFields(m.substr(at), f, 3);
  return n >= 3 ? std::string(f[2]) : std::string();
}
std::string TuningValue(std::string_view m) {
  if (analyze::FindAnchored(m, " Bytes -> Algo ", 1) == std::string_view::npos) return {};
  return Tuning(m);
}
std::string NvlsValue(std::string_view m) {
  if (std::memchr(m.data(), 'V', m.size()) == nullptr || !Contains(m, "NVLS") ||
      Contains(m, "CollNet"))
    return {};
  if (Contains(m, "not available") || Contains(m, "disabled")) return "NVLS not available";
  if (Contains(m, "available") || Contains(m, "enabled")) return "NVLS available";
  return {};
}
std::string CollNetValue(std::string_view m) {
  if (analyze::FindAnchored(m, "CollNet", 4) == std::string_view::npos) return {};
  return Normalized(m);
}
std::string GdrValue(std::string_view m) {
  if (!Contains(m, "GPU Direct RDMA")) return {};
  return Contains(m, "Disabled") ? "GPU Direct RDMA Disabled" : "GPU Direct RDMA Enabled";
}

constexpr Aspect kAspects[] = {
    {"transport", TransportValue}, {"hca", HcaValue},         {"gdr", GdrValue},
    {"plugin", PluginValue},       {"version", VersionValue}, {"tuning", TuningValue},
    {"nvls", NvlsValue},           {"collnet", CollNetValue},
};
constexpr size_t kAspectCount = std::size(kAspects);

// A node's values of one aspect, each with the first line that showed it.
struct Values {
  std::map<std::string, std::string> first_line;  // value -> "file:line: text"
};

std::string Joined(const Values& v) {
  std::string out;
  for (const auto& [value, line] : v.first_line) out += (out.empty() ? "" : "; ") + value;
  return out;
}

// "...gpu-a01:1234:1250 [3] " (what comes before "NCCL INFO") -> "gpu-a01": read backwards,
// so that any launcher prefix before the host is left alone.
std::string_view HostOf(std::string_view before) {
  before = analyze::TrimRight(before);
  size_t i = before.size();
  if (i == 0 || before[i - 1] != ']') return {};
  i = before.rfind('[', i - 1);
  if (i == std::string_view::npos) return {};
  size_t end = i;
  while (end > 0 && before[end - 1] == ' ') --end;
  // "host:pid:tid": two numbers back to the host.
  for (int field = 0; field < 2; ++field) {
    size_t digits = end;
    while (digits > 0 && IsDigit(before[digits - 1])) --digits;
    if (digits == end || digits == 0 || before[digits - 1] != ':') return {};
    end = digits - 1;
  }
  size_t start = end;
  while (start > 0) {
    const char c = before[start - 1];
    if (!(analyze::IsAlpha(c) || IsDigit(c) || c == '-' || c == '_' || c == '.')) break;
    --start;
  }
  return before.substr(start, end - start);
}

}  // namespace

struct NcclNodeCollector::State {
  std::string source;
  size_t lines = 0;
  std::unordered_map<std::string, std::array<Values, kAspectCount>, analyze::ViewHash,
                     std::equal_to<>>
      nodes;
};

NcclNodeCollector::NcclNodeCollector(std::string source) : state_(std::make_unique<State>()) {
  state_->source = std::move(source);
}
NcclNodeCollector::~NcclNodeCollector() = default;
NcclNodeCollector::NcclNodeCollector(NcclNodeCollector&&) noexcept = default;
NcclNodeCollector& NcclNodeCollector::operator=(NcclNodeCollector&&) noexcept = default;

void NcclNodeCollector::Feed(std::string_view raw, size_t line_no) {
  const size_t at = analyze::FindAnchored(raw, "NCCL INFO ", 7);
  if (at == std::string_view::npos) return;
  const std::string_view host = HostOf(raw.substr(0, at));
  if (host.empty()) return;
  ++state_->lines;
  const std::string_view message = Trim(raw.substr(at + 10));
  std::array<Values, kAspectCount>* node = nullptr;
  for (size_t a = 0; a < kAspectCount; ++a) {
    std::string value = kAspects[a].value(message);
    if (value.empty()) continue;
    if (node == nullptr) {
      auto it = state_->nodes.find(host);
      if (it == state_->nodes.end()) it = state_->nodes.try_emplace(std::string(host)).first;
      node = &it->second;
    }
    Values& values = (*node)[a];
    // Most lines repeat a value their node already has: no line text is built for them.
    if (values.first_line.size() >= kMaxValuesPerAspect || values.first_line.count(value) > 0)
      continue;
    values.first_line.emplace(std::move(value), state_->source + ":" + std::to_string(line_no) +
                                                    ": " + std::string(Trim(raw)));
  }
}

// The nodes whose value of aspect `a` is not the majority's, each with the lines of the
// values the majority does not have.
void NcclNodeCollector::AddDifferences(size_t a, const std::string& majority, size_t votes,
                                       NcclNodeComparison& out) const {
  const std::string name(kAspects[a].name);
  std::set<std::string> usual;
  for (size_t start = 0; start <= majority.size();) {
    const size_t end = majority.find("; ", start);
    usual.insert(
        majority.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 2;
  }
  for (const auto& [host, aspects] : out.nodes) {
    const auto it = aspects.find(name);
    if (it == aspects.end() || it->second == majority) continue;
    NcclNodeDifference d{host, name, it->second, majority, votes, {}};
    for (const auto& [value, line] : state_->nodes.at(host)[a].first_line) {
      if (usual.count(value) == 0) d.lines.push_back(line);
    }
    out.differences.push_back(std::move(d));
  }
}

NcclNodeComparison NcclNodeCollector::Finish() {
  NcclNodeComparison out;
  out.source = state_->source;
  out.lines = state_->lines;
  for (const auto& [host, aspects] : state_->nodes) {
    for (size_t a = 0; a < kAspectCount; ++a) {
      if (!aspects[a].first_line.empty()) {
        out.nodes[host][std::string(kAspects[a].name)] = Joined(aspects[a]);
      }
    }
  }
  for (size_t a = 0; a < kAspectCount; ++a) {
    const std::string name(kAspects[a].name);
    std::map<std::string, size_t> votes;
    for (const auto& [host, aspects] : out.nodes) {
      if (const auto it = aspects.find(name); it != aspects.end()) ++votes[it->second];
    }
    if (votes.empty()) continue;
    const auto top = std::max_element(votes.begin(), votes.end(), [](const auto& x, const auto& y) {
      return x.second < y.second;
    });
    // With no majority (two nodes, one each) there is nobody to name.
    if (votes.size() > 1 && top->second * 2 <= out.nodes.size()) continue;
    out.majority[name] = top->first;
    AddDifferences(a, top->first, top->second, out);
  }
  std::sort(out.differences.begin(), out.differences.end(),
            [](const NcclNodeDifference& x, const NcclNodeDifference& y) {
              return std::tie(x.host, x.aspect) < std::tie(y.host, y.aspect);
            });
  return out;
}

NcclNodeComparison CompareNcclNodesInFile(const std::string& path) {
  NcclNodeCollector collector(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return collector.Finish();
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  analyze::ChunkedLineReader reader(fd);
  reader.ForEachLine(
      [&](std::string_view line, size_t line_no, bool) { collector.Feed(line, line_no); });
  ::close(fd);
  return collector.Finish();
}

NcclNodeComparison CompareNcclNodes(std::string_view text, const std::string& source) {
  NcclNodeCollector collector(source);
  ForEachLine(text,
              [&](std::string_view line, size_t line_no, bool) { collector.Feed(line, line_no); });
  return collector.Finish();
}

std::string RenderNcclNodes(const NcclNodeComparison& c) {
  std::string out = fmt::format("NCCL log of {}: {} nodes compared ({} NCCL INFO lines)\n",
                                c.source, c.nodes.size(), c.lines);
  for (const auto& [aspect, value] : c.majority) {
    out += fmt::format("  most nodes  {:<9} {}\n", aspect, value);
  }
  if (c.differences.empty()) {
    out += c.nodes.size() > 1 ? "  every node agrees with the majority\n" : "";
    return out;
  }
  for (const NcclNodeDifference& d : c.differences) {
    out += fmt::format("  DIFFERS  {}  {}: {} (most nodes, {} of {}: {})\n", d.host, d.aspect,
                       d.value, d.majority_nodes, c.nodes.size(), d.majority);
    for (const std::string& line : d.lines) out += "      " + line + "\n";
  }
  return out;
}

}  // namespace fabricscope
