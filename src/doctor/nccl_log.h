// Private: what NCCL said about itself in a log written with NCCL_DEBUG=INFO: its version,
// the network it chose, and the transport of every connection.
#pragma once

#include <istream>
#include <map>
#include <string>
#include <vector>

#include "fabricscope/nccl_nodes.h"
#include "fabricscope/paste.h"

namespace fabricscope::doctor {

// A line of the log worth quoting, with its line number.
struct LogLine {
  int line = 0;
  std::string text;
};

// One channel connection: "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA".
struct NcclConnection {
  int line = 0;
  int channel = 0;
  int from = 0, to = 0;
  std::string direction;  // "send" or "receive"
  std::string transport;  // "NET", "P2P", "SHM", "COLLNET", ...
  std::string network;    // for NET: "IB", "Socket", "GPUDirectTCPX", "FasTrak", ...
  int net_device = -1;
  bool gdr = false;  // /GDRDMA: the NIC reads and writes GPU memory directly
  bool pxn = false;  // sent through another GPU's NIC (PXN): "NET/IB/0(1)"
};

// Everything the doctor takes from one log.
struct NcclLog {
  std::string file;
  int nccl_lines = 0;
  std::string version;                      // "2.18.5+cuda12.2"
  std::string cuda_driver;                  // "12020"
  std::string network;                      // "Using network IB"
  std::vector<std::string> ib_devices;      // "[0]mlx5_0:1/IB"
  std::vector<std::string> socket_devices;  // "[0]eth0:10.0.0.1<0>"
  std::vector<LogLine> no_device;           // "NET/IB : No device found."
  std::vector<LogLine> gdr_disabled;        // GPU Direct RDMA Disabled ...
  std::vector<LogLine> gdr_enabled;         // GPU Direct RDMA Enabled ...
  std::vector<LogLine> plugin;              // NET/Plugin lines
  std::vector<LogLine> warnings;            // NCCL WARN lines
  std::vector<NcclConnection> connections;
  int channels = 0;  // ring channels ("Channel 00/32 :", or "32 coll channels")
  int ranks = 0, nodes = 0;
  std::map<std::string, int> hosts;  // host -> lines
  // Each node's transport, HCAs, plugin, version, TUNING, NVLS and CollNet, and the nodes
  // that differ from the majority (a log of many ranks on many nodes).
  NcclNodeComparison node_comparison;
  // What the failure knowledge base makes of the log (docs/failures.md), as check does: the
  // cause of a failure or slowness with its evidence and fix, or the candidates ranked.
  PasteDiagnosis diagnosis;
};

// An upstream format string that a pattern of ParseNcclLog reads, at one release: the string
// is in data/nccl/log-strings/<tag>.json at that file and line (tests/doctor hold each one to
// its generated string and to the pattern's marker).
struct NcclLogCitation {
  std::string_view marker;  // the pattern's marker ("GPU Direct RDMA")
  std::string_view tag;     // "v2.30.7-1"
  std::string_view file;
  int line = 0;
};
const std::vector<NcclLogCitation>& NcclLogCitations();

// Parses a log; throws UsageError naming the file when it cannot be read or holds no NCCL
// line at all (not a log written with NCCL_DEBUG=INFO).
NcclLog ParseNcclLog(const std::string& path);
NcclLog ParseNcclLog(std::istream& in, const std::string& name);

}  // namespace fabricscope::doctor
