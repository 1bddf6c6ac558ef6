#include "doctor/nccl_log.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string_view>

#include "fabricscope/error.h"
#include "fabricscope/node_root.h"
#include "fabricscope/strings.h"

namespace fabricscope::doctor {
namespace {

// One kind of line NCCL writes: a cheap substring test first, then the handler, so a log of
// many thousand lines costs one search per kind and line.
struct LinePattern {
  std::string_view marker;
  std::function<void(const std::string& message, int line, NcclLog& log)> handle;
};

// A number of a log line; one too long for an int (no figure NCCL prints) reads as -1.
int ToInt(const std::string& s) { return ToNumber<int>(s).value_or(-1); }

// "[0]mlx5_0:1/IB" tokens of a "Using" line.
std::vector<std::string> Bracketed(const std::string& message) {
  static const std::regex kToken(R"(\[\d+\][^\s;\[]+)");
  std::vector<std::string> out;
  for (std::sregex_iterator it(message.begin(), message.end(), kToken), end; it != end; ++it) {
    out.push_back(it->str());
  }
  return out;
}

void ParseVia(const std::string& via, NcclConnection& c) {
  const std::vector<std::string> parts = Split(via, '/');
  if (parts.empty()) return;
  c.transport = parts[0];
  if (c.transport != "NET" || parts.size() < 2) return;
  c.network = parts[1];
  if (parts.size() >= 3) {
    // "0(1)" under PXN: the device, then in parentheses the rank whose proxy sends
    // (NVIDIA/nccl src/transport/net.cc, sendSetup: "via NET/%s/%d(%d)..." with proxyRank).
    const std::string_view device = std::string_view(parts[2]).substr(0, parts[2].find('('));
    c.net_device = ToInt(std::string(device));
    c.pxn = parts[2].find('(') != std::string::npos;
  }
  for (size_t i = 3; i < parts.size(); ++i) {
    if (parts[i].starts_with("GDRDMA")) c.gdr = true;
  }
}

const std::vector<LinePattern>& Patterns() {
  static const std::vector<LinePattern> kPatterns = {
      {"NCCL version ",
       [](const std::string& m, int, NcclLog& log) {
         static const std::regex kVersion(R"(NCCL version (\S+))");
         std::smatch s;
         if (std::regex_search(m, s, kVersion)) log.version = s[1];
       }},
      {"cudaDriverVersion",
       [](const std::string& m, int, NcclLog& log) {
         static const std::regex kDriver(R"(cudaDriverVersion (\d+))");
         std::smatch s;
         if (std::regex_search(m, s, kDriver)) log.cuda_driver = s[1];
       }},
      {"NET/IB",
       [](const std::string& m, int, NcclLog& log) {
         static const std::regex kUsing(R"(^NET/IB ?: Using)");
         if (std::regex_search(m, kUsing)) log.ib_devices = Bracketed(m.substr(0, m.find(';')));
       }},
      {"NET/Socket",
       [](const std::string& m, int, NcclLog& log) {
         static const std::regex kUsing(R"(^NET/Socket ?: Using)");
         if (std::regex_search(m, kUsing)) log.socket_devices = Bracketed(m);
       }},
      {"No device found",
       [](const std::string& m, int line, NcclLog& log) {
         log.no_device.push_back({line, m});
       }},
      {"GPU Direct RDMA",
       [](const std::string& m, int line, NcclLog& log) {
         static const std::regex kState("GPU Direct RDMA (\\(DMABUF\\) )?(Enabled|Disabled)",
                                        std::regex::icase);
         // Sockets never read GPU memory: their "Disabled" line says nothing about the HCAs.
         if (m.starts_with("NET/Socket")) return;
         // Only a line that says the state: 2.30's HINT after a completion error names GPU
         // Direct RDMA too ("... would break GPU Direct RDMA protocol") and says neither.
         std::smatch s;
         if (!std::regex_search(m, s, kState)) return;
         if (EqualsIgnoreCase(s[2].str(), "Disabled")) {
           log.gdr_disabled.push_back({line, m});
         } else {
           log.gdr_enabled.push_back({line, m});
         }
       }},
      {"NET/Plugin",
       [](const std::string& m, int line, NcclLog& log) {
         log.plugin.push_back({line, m});
       }},
      {"Using network ",
       [](const std::string& m, int, NcclLog& log) {
         log.network = Trim(m.substr(m.find("Using network ") + 14));
       }},
      {" via ",
       [](const std::string& m, int line, NcclLog& log) {
         static const std::regex kConnection(
             R"((?:Channel|Ring) (\d+)(?:/\d+)? : (\d+)(?:\[[^\]]*\])? -> (\d+)(?:\[[^\]]*\])?)"
             R"((?: \[(send|receive)\])? via (.+)$)");
         std::smatch s;
         if (!std::regex_search(m, s, kConnection)) return;
         NcclConnection c;
         c.line = line;
         c.channel = ToInt(s[1]);
         c.from = ToInt(s[2]);
         c.to = ToInt(s[3]);
         c.direction = s[4].matched ? s[4].str() : "send";
         ParseVia(std::string(Trim(s[5].str())), c);
         log.connections.push_back(c);
       }},
      {"Channel ",
       [](const std::string& m, int, NcclLog& log) {
         // The ring order of a channel: "Channel 00/32 :    0   1   2 ...".
         static const std::regex kRing(R"(^Channel \d+/(\d+) :[\s\d]+$)");
         std::smatch s;
         if (std::regex_search(m, s, kRing)) log.channels = std::max(log.channels, ToInt(s[1]));
       }},
      {"coll channels",
       [](const std::string& m, int, NcclLog& log) {
         static const std::regex kColl(R"((\d+) coll channels)");
         std::smatch s;
         if (std::regex_search(m, s, kColl)) log.channels = std::max(log.channels, ToInt(s[1]));
       }},
      {"nNodes",
       [](const std::string& m, int, NcclLog& log) {
         static const std::regex kComm(R"(nRanks (\d+) nNodes (\d+))", std::regex::icase);
         std::smatch s;
         if (std::regex_search(m, s, kComm)) {
           log.ranks = std::max(log.ranks, ToInt(s[1]));
           log.nodes = std::max(log.nodes, ToInt(s[2]));
         }
       }},
  };
  return kPatterns;
}

}  // namespace

const std::vector<NcclLogCitation>& NcclLogCitations() {
  // Generated by scripts/gen-nccl-log-strings.py (docs/failures.md); 2.30.3+ prints the
  // per-GPU "GPU Direct RDMA Enabled/Disabled for GPU ..." lines at TRACE only, which release
  // builds drop: from 2.30 the per-HCA line and the connections' /GDRDMA say it.
  static const std::vector<NcclLogCitation> kCitations = {
      {"cudaDriverVersion", "v2.21.5-1", "src/misc/cudawrap.cc", 185},
      {"cudaDriverVersion", "v2.30.7-1", "src/misc/cudawrap.cc", 282},
      {"NET/IB", "v2.12.12-1", "src/transport/net_ib.cc", 248},
      {"NET/IB", "v2.21.5-1", "src/transport/net_ib.cc", 538},
      {"NET/IB", "v2.30.7-1", "src/transport/net_ib/init.cc", 513},
      {"NET/Socket", "v2.21.5-1", "src/transport/net_socket.cc", 62},
      {"NET/Socket", "v2.30.7-1", "src/transport/net_socket.cc", 77},
      {"No device found", "v2.21.5-1", "src/transport/net_ib.cc", 511},
      {"No device found", "v2.30.7-1", "src/transport/net_ib/init.cc", 470},
      {"GPU Direct RDMA", "v2.12.12-1", "src/graph/paths.cc", 393},
      {"GPU Direct RDMA", "v2.12.12-1", "src/transport/net_ib.cc", 290},
      {"GPU Direct RDMA", "v2.21.5-1", "src/graph/paths.cc", 414},
      {"GPU Direct RDMA", "v2.21.5-1", "src/graph/paths.cc", 419},
      {"GPU Direct RDMA", "v2.30.7-1", "src/graph/topo.cc", 1653},
      {"NET/Plugin", "v2.21.5-1", "src/net.cc", 349},
      {"NET/Plugin", "v2.30.7-1", "src/plugin/net/net_v10.cc", 124},
      {"Using network ", "v2.21.5-1", "src/init.cc", 322},
      {"Using network ", "v2.30.7-1", "src/init.cc", 486},
      {" via ", "v2.12.12-1", "src/transport/net.cc", 184},
      {" via ", "v2.21.5-1", "src/transport/net.cc", 195},
      {" via ", "v2.30.7-1", "src/transport/net.cc", 324},
      {" via ", "v2.30.7-1", "src/transport/net.cc", 328},
      {" via ", "v2.30.7-1", "src/transport/net.cc", 377},
      {" via ", "v2.30.7-1", "src/transport/p2p.cc", 429},
      {"coll channels", "v2.21.5-1", "src/init.cc", 1297},
      {"coll channels", "v2.30.7-1", "src/init.cc", 1646},
      {"nNodes", "v2.21.5-1", "src/init.cc", 1160},
      {"nNodes", "v2.30.7-1", "src/init.cc", 1422},
  };
  return kCitations;
}

namespace {

// The host of an NCCL line: "host:pid:tid [dev] NCCL INFO ...".
std::string HostOf(const std::string& line, size_t nccl_at) {
  static const std::regex kPrefix(R"(([A-Za-z0-9_.\-]+):\d+:\d+ \[\d+\] ?$)");
  const std::string prefix = line.substr(0, nccl_at);
  std::smatch s;
  if (std::regex_search(prefix, s, kPrefix)) return s[1];
  return "";
}

}  // namespace

NcclLog ParseNcclLog(std::istream& in, const std::string& name) {
  NcclLog log;
  log.file = name;
  NcclNodeCollector nodes(name);
  PasteReader paste;
  paste.Begin(name);
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    nodes.Feed(text, static_cast<size_t>(number));
    if (!text.empty()) paste.Line(text, static_cast<size_t>(number));
    size_t at = std::string::npos;
    std::string message;
    bool warn = false;
    for (std::string_view level : {"NCCL INFO ", "NCCL WARN ", "NCCL TRACE "}) {
      at = text.find(level);
      if (at != std::string::npos) {
        message = Trim(std::string_view(text).substr(at + level.size()));
        warn = level == "NCCL WARN ";
        break;
      }
    }
    if (at == std::string::npos) {
      // Old versions print the version banner without a level.
      at = text.find("NCCL version ");
      if (at == std::string::npos) continue;
      message = Trim(std::string_view(text).substr(at));
    }
    ++log.nccl_lines;
    if (std::string host = HostOf(text, at); !host.empty()) ++log.hosts[host];
    if (warn) log.warnings.push_back({number, message});
    for (const LinePattern& p : Patterns()) {
      if (message.find(p.marker) != std::string::npos) p.handle(message, number, log);
    }
  }
  log.node_comparison = nodes.Finish();
  // The log's platform is not this node's: its causes are judged without one.
  std::vector<PasteEvidence> read = paste.Take();
  if (!read.empty()) log.diagnosis = DiagnosePaste(read.front(), {}, PlatformChoice{});
  if (log.nccl_lines == 0) {
    throw UsageError("--nccl-log '" + name +
                     "' holds no NCCL line: expected lines such as 'host:pid:tid [0] NCCL INFO "
                     "...', written by a job run with NCCL_DEBUG=INFO (and "
                     "NCCL_DEBUG_SUBSYS=INIT,NET for the transports)");
  }
  return log;
}

NcclLog ParseNcclLog(const std::string& path) {
  std::error_code ec;
  std::ifstream in;
  if (!std::filesystem::is_directory(path, ec)) in.open(path);
  if (!in) {
    throw UsageError("cannot read --nccl-log '" + path +
                     "': give the file a job wrote with NCCL_DEBUG=INFO (NCCL_DEBUG_FILE or "
                     "the job's captured output)");
  }
  return ParseNcclLog(in, path);
}

}  // namespace fabricscope::doctor
