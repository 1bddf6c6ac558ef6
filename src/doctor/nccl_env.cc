#include "doctor/nccl_env.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include "doctor/check.h"
#include "fabricscope/joined.h"

namespace fabricscope::doctor {
namespace {

std::string Quote(const std::string& name, const EnvSetting& s) {
  return name + "=" + s.value + " (" + s.source + ")";
}

bool IsOne(const std::string& value) { return Trim(value) == "1"; }

// NCCL's device lists (NCCL_IB_HCA, NCCL_SOCKET_IFNAME): "^" excludes, "=" matches exact
// names instead of prefixes, entries are comma-separated, an entry may end in ":port".
struct DeviceList {
  bool exclude = false;
  bool exact = false;
  struct Entry {
    std::string name;
    int port = -1;
  };
  std::vector<Entry> entries;

  explicit DeviceList(std::string value) {
    value = std::string(Trim(value));
    if (value.starts_with("^")) {
      exclude = true;
      value.erase(0, 1);
    }
    if (value.starts_with("=")) {
      exact = true;
      value.erase(0, 1);
    }
    for (const std::string& item : Split(value, ',')) {
      Entry e;
      const size_t colon = item.find(':');
      e.name = item.substr(0, colon);
      if (colon != std::string::npos) {
        if (auto port = ParseInt(item.substr(colon + 1))) e.port = static_cast<int>(*port);
      }
      entries.push_back(e);
    }
  }
  bool Matches(const Entry& e, const std::string& candidate) const {
    return exact ? candidate == e.name : candidate.starts_with(e.name);
  }
  // The candidates NCCL would use.
  std::vector<std::string> Select(const std::vector<std::string>& candidates) const {
    std::vector<std::string> out;
    for (const auto& c : candidates) {
      const bool hit = std::any_of(entries.begin(), entries.end(),
                                   [&](const Entry& e) { return Matches(e, c); });
      if (hit != exclude) out.push_back(c);
    }
    return out;
  }
  // Entries that name nothing present.
  std::vector<std::string> Missing(const std::vector<std::string>& candidates) const {
    std::vector<std::string> out;
    for (const auto& e : entries) {
      if (std::none_of(candidates.begin(), candidates.end(),
                       [&](const std::string& c) { return Matches(e, c); })) {
        out.push_back(e.name);
      }
    }
    return out;
  }
};

std::string JoinList(const std::vector<std::string>& items) {
  return items.empty() ? "none" : Joined(items);
}

// Whether NCCL's level parser takes `value` (graph/paths.cc ncclGetLevel: a path name of
// graph/topo.cc's table, or an old number 0-5, larger numbers read as SYS), as the generated
// table says for `name` at its newest release.
bool AcceptedLevel(const std::string& name, const std::string& value) {
  if (!value.empty() &&
      std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return true;
  }
  const GeneratedVariable* v = NcclSourceVariables().Find(name);
  const std::vector<std::string> fallback = {"LOC", "NVL", "NVB", "PIX",
                                             "PXB", "PXN", "PHB", "SYS"};
  const std::vector<std::string>& names =
      v != nullptr && !v->accepted.empty() ? v->accepted : fallback;
  return std::find(names.begin(), names.end(), value) != names.end();
}

std::string AcceptedNames(const std::string& name) {
  const GeneratedVariable* v = NcclSourceVariables().Find(name);
  return v != nullptr && !v->accepted.empty() ? Joined(v->accepted) : "LOC, PIX, PXB, PHB, SYS";
}

void GdrLevel(const std::string& name, const EnvSetting& s, const LintContext&,
              std::vector<Finding>& out) {
  const std::string v(Trim(s.value));
  if (v == "0" || v == "LOC") {
    out.push_back(
        MakeFinding(Severity::kCritical,
                    name + "=" + v +
                        " switches GPUDirect RDMA off: every inter-node byte is "
                        "staged through host memory (30-60% less bandwidth)",
                    {Quote(name, s)},
                    "unset " + name + " (NCCL picks the distance itself), or give PXB/PHB/SYS"));
  } else if (!AcceptedLevel("NCCL_NET_GDR_LEVEL", v)) {
    out.push_back(MakeFinding(
        Severity::kWarn, name + "='" + v + "' is not a level NCCL knows", {Quote(name, s)},
        "give one of " + AcceptedNames("NCCL_NET_GDR_LEVEL") + " (or unset it)"));
  }
}

void IbDisable(const std::string& name, const EnvSetting& s, const LintContext& c,
               std::vector<Finding>& out) {
  if (!IsOne(s.value)) return;
  if (c.ib.devices.empty()) {
    out.push_back(MakeFinding(Severity::kOk, name + "=1, and this node has no RDMA device anyway",
                              {Quote(name, s)}, ""));
    return;
  }
  std::vector<std::string> names;
  for (const auto& d : c.ib.devices) names.push_back(d.name);
  out.push_back(
      MakeFinding(Severity::kCritical,
                  name + "=1 turns InfiniBand/RoCE off: NCCL falls back to TCP sockets although "
                         "RDMA devices are present",
                  {Quote(name, s), "RDMA devices: " + JoinList(names)}, "unset " + name));
}

void P2pDisable(const std::string& name, const EnvSetting& s, const LintContext&,
                std::vector<Finding>& out) {
  if (!IsOne(s.value)) return;
  out.push_back(
      MakeFinding(Severity::kCritical,
                  name + "=1 turns off GPU peer-to-peer (NVLink and PCIe): GPUs of a node talk "
                         "through host memory",
                  {Quote(name, s)}, "unset " + name));
}

void P2pLevel(const std::string& name, const EnvSetting& s, const LintContext&,
              std::vector<Finding>& out) {
  const std::string v(Trim(s.value));
  if (v == "0" || v == "LOC") {
    out.push_back(MakeFinding(Severity::kCritical,
                              name + "=" + v + " never uses GPU peer-to-peer, not even over NVLink",
                              {Quote(name, s)}, "unset " + name));
  } else if (!AcceptedLevel(name, v)) {
    out.push_back(MakeFinding(Severity::kWarn, name + "='" + v + "' is not a level NCCL knows",
                              {Quote(name, s)},
                              "give one of " + AcceptedNames(name) + " (or unset it)"));
  }
}

void ShmDisable(const std::string& name, const EnvSetting& s, const LintContext&,
                std::vector<Finding>& out) {
  if (!IsOne(s.value)) return;
  out.push_back(
      MakeFinding(Severity::kWarn,
                  name + "=1: where peer-to-peer is impossible, GPUs of one node go through "
                         "the network instead of shared memory",
                  {Quote(name, s)}, "unset " + name + " unless it works around a known problem"));
}

void Forced(const std::string& name, const EnvSetting& s, const LintContext&,
            std::vector<Finding>& out) {
  out.push_back(MakeFinding(Severity::kWarn,
                            name + "=" + s.value +
                                " forces NCCL's choice for every size: measured "
                                "bandwidth reflects the forced choice, not the tuned one",
                            {Quote(name, s)},
                            "unset " + name +
                                " for production; keep it only for a deliberate measurement "
                                "(e.g. NCCL_ALGO=Ring to measure the network)"));
}

void NetForce(const std::string& name, const EnvSetting& s, const LintContext& c,
              std::vector<Finding>& out) {
  const std::string v(Trim(s.value));
  if (v == "Socket" && !c.ib.devices.empty()) {
    out.push_back(MakeFinding(Severity::kCritical,
                              name + "=Socket forces TCP sockets although RDMA devices are present",
                              {Quote(name, s)}, "unset " + name));
  } else if (v == "IB" && c.ib.devices.empty()) {
    out.push_back(MakeFinding(
        Severity::kCritical, name + "=IB but this node has no RDMA device: NCCL cannot initialize",
        {Quote(name, s), c.ib.unavailable}, "load the RDMA driver (mlx5_ib) or unset " + name));
  }
}

void IbHca(const std::string& name, const EnvSetting& s, const LintContext& c,
           std::vector<Finding>& out) {
  std::vector<std::string> present;
  for (const auto& d : c.ib.devices) present.push_back(d.name);
  const DeviceList list(s.value);
  const auto selected = list.Select(present);
  const auto missing = list.Missing(present);
  std::vector<std::string> evidence = {Quote(name, s), "RDMA devices here: " + JoinList(present)};
  if (selected.empty()) {
    out.push_back(MakeFinding(
        Severity::kCritical,
        name + " selects no RDMA device of this node: NCCL falls back to sockets", evidence,
        "name devices from /sys/class/infiniband (prefixes, or '=' for exact names)"));
    return;
  }
  if (!list.exclude && !missing.empty()) {
    out.push_back(MakeFinding(
        Severity::kWarn, name + " names devices this node does not have: " + JoinList(missing),
        evidence, "drop them, or fix the names (a typo, or a node with fewer HCAs)"));
  }
  for (const auto& e : list.entries) {
    if (e.port < 0 || list.exclude) continue;
    for (const auto& d : c.ib.devices) {
      if (!list.Matches(e, d.name)) continue;
      const bool has = std::any_of(d.ports.begin(), d.ports.end(),
                                   [&](const IbPort& p) { return p.port == e.port; });
      if (!has) {
        out.push_back(MakeFinding(
            Severity::kWarn,
            name + " names port " + std::to_string(e.port) + " of " + d.name +
                ", which has no such port",
            evidence, "use a port listed under /sys/class/infiniband/" + d.name + "/ports"));
      }
    }
  }
}

void SocketIfname(const std::string& name, const EnvSetting& s, const LintContext& c,
                  std::vector<Finding>& out) {
  const DeviceList list(s.value);
  const auto selected = list.Select(c.interfaces);
  std::vector<std::string> evidence = {Quote(name, s),
                                       "interfaces here: " + JoinList(c.interfaces)};
  if (selected.empty()) {
    out.push_back(
        MakeFinding(Severity::kCritical,
                    name + " selects no network interface of this node: NCCL's bootstrap fails "
                           "('no socket interface found')",
                    evidence, "name interfaces from /sys/class/net (prefixes, or '=' for exact)"));
    return;
  }
  if (!list.exclude) {
    if (const auto missing = list.Missing(c.interfaces); !missing.empty()) {
      out.push_back(MakeFinding(
          Severity::kWarn, name + " names interfaces this node does not have: " + JoinList(missing),
          evidence, "drop them or fix the names"));
    }
  }
  if (std::all_of(selected.begin(), selected.end(),
                  [](const std::string& i) { return i == "lo" || i.starts_with("docker"); })) {
    out.push_back(MakeFinding(
        Severity::kWarn,
        name + " selects only " + JoinList(selected) + ", which other nodes cannot reach", evidence,
        "name the interface of the cluster network"));
  }
}

void CrossNic(const std::string& name, const EnvSetting& s, const LintContext&,
              std::vector<Finding>& out) {
  if (!IsOne(s.value)) return;
  out.push_back(
      MakeFinding(Severity::kWarn,
                  name + "=1 lets a ring leave a node on a different NIC than it entered: on a "
                         "rail-optimized fabric that traffic crosses the spine",
                  {Quote(name, s)}, "unset it (NCCL decides), or 0 on rail-optimized fabrics"));
}

void GidIndex(const std::string& name, const EnvSetting& s, const LintContext& c,
              std::vector<Finding>& out) {
  const auto index = ParseInt(s.value);
  if (!index) {
    out.push_back(MakeFinding(Severity::kWarn, name + "='" + s.value + "' is not a number",
                              {Quote(name, s)}, "give the index of a RoCE v2 GID"));
    return;
  }
  if (*index < 0) {
    // -1 is NCCL's own default since 2.21.5 (transport/net_ib: pick the GID itself, by
    // NCCL_IB_ADDR_FAMILY and NCCL_IB_ROCE_VERSION_NUM).
    out.push_back(MakeFinding(
        Severity::kOk,
        name + "=" + s.value + ": NCCL selects the GID itself (its default since 2.21.5)",
        {Quote(name, s)}, ""));
    return;
  }
  int roce = 0;
  for (const IbPort* p : c.ib.Ports()) {
    if (!p->roce()) continue;
    ++roce;
    const auto gid = std::find_if(p->gids.begin(), p->gids.end(),
                                  [&](const Gid& g) { return g.index == *index; });
    const std::string where =
        "/sys/class/infiniband/" + p->device + "/ports/" + std::to_string(p->port);
    if (gid == p->gids.end()) {
      out.push_back(
          MakeFinding(Severity::kCritical,
                      name + "=" + s.value + " but " + p->name() + " has no GID at that index",
                      {Quote(name, s), c.root.Show(where + "/gids/" + s.value) + ": empty"},
                      "pick the index of a RoCE v2 IPv4 GID (see gid_attrs/types), or unset it "
                      "(NCCL 2.21+ selects one)"));
    } else if (gid->type != "RoCE v2") {
      out.push_back(MakeFinding(
          Severity::kWarn,
          name + "=" + s.value + " is a " + (gid->type.empty() ? "?" : gid->type) + " GID on " +
              p->name() + ": RoCE v1 is not routable across subnets",
          {Quote(name, s), c.root.Show(where + "/gid_attrs/types/" + s.value) + ": " + gid->type},
          "pick the index of a RoCE v2 GID"));
    }
  }
  if (roce == 0) {
    out.push_back(MakeFinding(Severity::kOk,
                              name + " is set; no RoCE port here, InfiniBand ignores it",
                              {Quote(name, s)}, ""));
  }
}

void SocketThreads(const std::string& name, const EnvSetting& s, const LintContext&,
                   std::vector<Finding>& out) {
  const auto v = ParseInt(s.value);
  if (!v || *v < 1 || *v > 16) {
    out.push_back(MakeFinding(Severity::kWarn, name + "=" + s.value + " is outside 1..16",
                              {Quote(name, s)}, "give 1 to 16"));
  }
}

void TopoFile(const std::string& name, const EnvSetting& s, const LintContext& c,
              std::vector<Finding>& out) {
  if (!c.root.Exists(s.value)) {
    out.push_back(MakeFinding(
        Severity::kWarn,
        name + " names a file that does not exist: NCCL ignores it and detects "
               "the topology itself",
        {Quote(name, s), c.root.Show(s.value) + ": absent"}, "fix the path or unset it"));
  }
}

void GdrRead(const std::string& name, const EnvSetting& s, const LintContext&,
             std::vector<Finding>& out) {
  if (Trim(s.value) == "0") {
    out.push_back(MakeFinding(Severity::kWarn,
                              name +
                                  "=0: sends stage GPU data through host memory even where the NIC "
                                  "could read it directly",
                              {Quote(name, s)}, "unset it"));
  }
}

void IgnoreAffinity(const std::string& name, const EnvSetting& s, const LintContext&,
                    std::vector<Finding>& out) {
  if (!IsOne(s.value)) return;
  out.push_back(MakeFinding(
      Severity::kWarn, name + "=1: NCCL's threads may run on the socket far from their GPU and NIC",
      {Quote(name, s)}, "unset it unless the job binds CPUs itself"));
}

void Renamed(const std::string& name, const EnvSetting& s, const LintContext&,
             std::vector<Finding>& out) {
  // A name the newest release still reads (NCCL_MAX_NRINGS, kept as an alias) is not obsolete.
  const GeneratedVariable* read = NcclSourceVariables().Find(name);
  if (read != nullptr && read->last == NcclSourceVariables().newest) return;
  for (const auto& v : NcclVariables()) {
    if (v.name == name && !v.replaced_by.empty()) {
      out.push_back(
          MakeFinding(Severity::kWarn,
                      name + " is obsolete: current versions read " + std::string(v.replaced_by),
                      {Quote(name, s)}, "rename it to " + std::string(v.replaced_by)));
    }
  }
}

// A name NCCL's source reads (or read): nothing to say when the newest release reads it; the
// release range when it no longer does.
bool SourceKnows(const std::string& name, const EnvSetting& setting, std::vector<Finding>& out) {
  const GeneratedVariables& table = NcclSourceVariables();
  const GeneratedVariable* v = table.Find(name);
  if (v == nullptr) return false;
  if (v->last != table.newest) {
    out.push_back(MakeFinding(
        Severity::kWarn,
        name + " is no longer read: NCCL read it from " + v->first + " to " + v->last + " (" +
            v->file + ":" + std::to_string(v->line) + " at " + v->last + "); " + table.newest +
            " ignores it",
        {Quote(name, setting)},
        "remove it (on a cluster that runs " + v->last + " or older it still applies)"));
  }
  return true;
}

}  // namespace

// Edit distance, for suggesting the variable a typo meant.
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

const std::vector<NcclVariable>& NcclVariables() {
  // From NCCL's environment-variable documentation (docs.nvidia.com/deeplearning/nccl,
  // user guide, "Environment Variables") and, for the last group, the tools around NCCL.
  static const std::vector<NcclVariable> kVariables = [] {
    std::vector<NcclVariable> v = {
        {"NCCL_ALGO", "algorithms allowed (Ring, Tree, CollnetDirect, CollnetChain, NVLS, ...)",
         Forced},
        {"NCCL_ALLOC_P2P_NET_LL_BUFFERS", "LL buffers for all P2P network connections"},
        {"NCCL_BUFFSIZE", "buffer size per channel and protocol (default 4 MiB)"},
        {"NCCL_CGA_CLUSTER_SIZE", "CUDA cooperative group array cluster size"},
        {"NCCL_CHECKS_DISABLE", "argument checks off"},
        {"NCCL_CHECK_POINTERS", "checks CUDA pointers of every call"},
        {"NCCL_COLLNET_ENABLE", "CollNet (in-network reduction, SHARP)"},
        {"NCCL_COLLNET_NODE_THRESHOLD", "nodes from which CollNet is used"},
        {"NCCL_COMM_BLOCKING", "blocking communicator calls"},
        {"NCCL_COMM_ID", "bootstrap address of rank 0"},
        {"NCCL_CONF_FILE", "configuration file read instead of /etc/nccl.conf"},
        {"NCCL_CROSS_NIC", "rings may use different NICs on each node (0, 1, 2=default)", CrossNic},
        {"NCCL_CTA_POLICY", "CTA scheduling policy"},
        {"NCCL_CUMEM_ENABLE", "cuMem* allocation of NCCL buffers"},
        {"NCCL_CUMEM_HOST_ENABLE", "cuMem* for host buffers"},
        {"NCCL_DEBUG", "log level: VERSION, WARN, INFO, TRACE"},
        {"NCCL_DEBUG_FILE", "log file name (%h host, %p pid)"},
        {"NCCL_DEBUG_SUBSYS", "subsystems logged: INIT, NET, GRAPH, ..."},
        // Not in NVIDIA's NCCL: the NCCL that GCP's GPUDirect-TCPX plugin image ships reads it
        // (skypilot@d7fe39d examples/gcp_gpu_direct_tcpx/nccl_tcpx_gcpvm_h100.yaml line 50;
        // dstack@511c318 mkdocs/docs/examples/clusters/gcp.md line 563).
        {"NCCL_DYNAMIC_CHUNK_SIZE", "chunk size of GCP's GPUDirect-TCPX NCCL build"},
        {"NCCL_DEBUG_TIMESTAMP_FORMAT", "log timestamp format"},
        {"NCCL_DEBUG_TIMESTAMP_LEVELS", "levels that get a timestamp"},
        {"NCCL_DMABUF_ENABLE", "GPUDirect RDMA registration through Linux dma-buf"},
        {"NCCL_GDRCOPY_ENABLE", "GDRCopy for host access to GPU memory"},
        {"NCCL_GDRCOPY_FIFO_ENABLE", "GDRCopy for the proxy FIFO"},
        {"NCCL_GDRCOPY_FLUSH_ENABLE", "GDRCopy flush"},
        {"NCCL_GDRCOPY_SYNC_ENABLE", "GDRCopy for sync"},
        {"NCCL_GRAPH_DUMP_FILE", "file the chosen graphs are written to"},
        {"NCCL_GRAPH_FILE", "graphs read from a file"},
        {"NCCL_GRAPH_MIXING_SUPPORT", "CUDA graph mixing"},
        {"NCCL_GRAPH_REGISTER", "buffer registration inside CUDA graphs"},
        {"NCCL_HOSTID", "host identity override"},
        {"NCCL_IB_ADAPTIVE_ROUTING", "InfiniBand adaptive routing"},
        {"NCCL_IB_ADDR_FAMILY", "RoCE GID address family (AF_INET, AF_INET6)"},
        {"NCCL_IB_ADDR_RANGE", "RoCE GID address range"},
        {"NCCL_IB_AR_THRESHOLD", "size from which adaptive routing is used"},
        {"NCCL_IB_CUDA_SUPPORT", "old switch of GPUDirect RDMA", nullptr, "NCCL_NET_GDR_LEVEL"},
        {"NCCL_IB_DATA_DIRECT", "Data Direct for mlx5"},
        {"NCCL_IB_DISABLE", "1: InfiniBand/RoCE off, sockets instead", IbDisable},
        {"NCCL_IB_ECE_ENABLE", "enhanced connection establishment"},
        {"NCCL_IB_FIFO_TC", "traffic class of the control FIFO"},
        {"NCCL_IB_GDR_LEVEL", "old name of NCCL_NET_GDR_LEVEL", GdrLevel, "NCCL_NET_GDR_LEVEL"},
        {"NCCL_IB_GID_INDEX", "RoCE GID index (v2 IPv4 is the usual choice)", GidIndex},
        {"NCCL_IB_HCA", "RDMA devices and ports to use (prefixes, ^ exclude, = exact)", IbHca},
        {"NCCL_IB_MERGE_NICS", "merge the ports of a dual-port NIC"},
        {"NCCL_IB_MERGE_VFS", "merge virtual functions of one NIC"},
        {"NCCL_IB_PCI_RELAXED_ORDERING", "PCIe relaxed ordering for IB verbs"},
        {"NCCL_IB_QPS_PER_CONNECTION", "queue pairs per connection (ECMP spread)"},
        {"NCCL_IB_RETRY_CNT", "InfiniBand retry count"},
        {"NCCL_IB_RETURN_ASYNC_EVENTS", "report IB async events as errors"},
        {"NCCL_IB_ROCE_VERSION_NUM", "RoCE version of the GID to select"},
        {"NCCL_IB_SL", "InfiniBand service level"},
        {"NCCL_IB_SPLIT_DATA_ON_QPS", "split messages across queue pairs"},
        {"NCCL_IB_TC", "InfiniBand traffic class (RoCE DSCP)"},
        {"NCCL_IB_TIMEOUT", "InfiniBand timeout (4.096 us x 2^n)"},
        {"NCCL_IB_USE_INLINE", "inline sends"},
        {"NCCL_IGNORE_CPU_AFFINITY", "1: ignore the GPU's CPU affinity", IgnoreAffinity},
        {"NCCL_IGNORE_DISABLED_P2P", "silence the warning about disabled P2P"},
        {"NCCL_LAUNCH_MODE", "PARALLEL or GROUP kernel launches"},
        {"NCCL_LL128_BUFFSIZE", "LL128 buffer size"},
        {"NCCL_LL128_NTHREADS", "LL128 threads"},
        {"NCCL_LL_BUFFSIZE", "LL buffer size"},
        {"NCCL_LL_THRESHOLD", "old LL protocol threshold", nullptr, "NCCL_PROTO"},
        {"NCCL_LOCAL_REGISTER", "user buffer registration"},
        {"NCCL_MAX_CTAS", "maximum CTAs per collective"},
        {"NCCL_MAX_NCHANNELS", "maximum channels"},
        {"NCCL_MAX_NRINGS", "old name of NCCL_MAX_NCHANNELS", nullptr, "NCCL_MAX_NCHANNELS"},
        {"NCCL_MAX_P2P_NCHANNELS", "maximum P2P channels"},
        {"NCCL_MIN_CTAS", "minimum CTAs per collective"},
        {"NCCL_MIN_NCHANNELS", "minimum channels"},
        {"NCCL_MIN_NRINGS", "old name of NCCL_MIN_NCHANNELS", nullptr, "NCCL_MIN_NCHANNELS"},
        {"NCCL_MIN_P2P_NCHANNELS", "minimum P2P channels"},
        {"NCCL_MNNVL_ENABLE", "multi-node NVLink"},
        {"NCCL_NCHANNELS_PER_NET_PEER", "channels per network peer"},
        {"NCCL_NET", "network to use: IB, Socket, or a plugin's name", NetForce},
        {"NCCL_NET_DISABLE_INTRA", "no network transport inside a node"},
        {"NCCL_NET_FORCE_FLUSH", "flush after GPUDirect RDMA receives"},
        {"NCCL_NET_GDR_C2C", "GPUDirect RDMA over C2C (Grace)"},
        {"NCCL_NET_GDR_LEVEL", "farthest GPU-NIC path with GPUDirect RDMA (LOC=off)", GdrLevel},
        {"NCCL_NET_GDR_READ", "GPUDirect RDMA for sends (NIC reads GPU memory)", GdrRead},
        {"NCCL_NET_MERGE_LEVEL", "distance under which NICs are merged"},
        {"NCCL_NET_OVERHEAD", "network overhead in the tuning model"},
        {"NCCL_NET_PLUGIN", "network plugin library (libnccl-net-<name>.so)"},
        {"NCCL_NET_SHARED_BUFFERS", "shared network buffers"},
        {"NCCL_NET_SHARED_COMMS", "shared network connections (PXN)"},
        {"NCCL_NSOCKS_PERTHREAD", "sockets per helper thread (x threads <= 64)"},
        {"NCCL_NTHREADS", "CUDA threads per block"},
        {"NCCL_NVB_DISABLE", "no NVLink-bridged paths through an intermediate GPU"},
        {"NCCL_NVLS_ENABLE", "NVLink SHARP (NVSwitch reductions)"},
        {"NCCL_NVLS_CHUNKSIZE", "NVLS chunk size"},
        {"NCCL_NVTX_DISABLE", "no NVTX ranges"},
        {"NCCL_OOB_NET_ENABLE", "out-of-band bootstrap over the network plugin"},
        {"NCCL_OOB_NET_IFNAME", "interface of the out-of-band network"},
        {"NCCL_P2P_DIRECT_DISABLE", "no direct pointers between GPUs of one process"},
        {"NCCL_P2P_DISABLE", "1: GPU peer-to-peer (NVLink, PCIe) off", P2pDisable},
        {"NCCL_P2P_LEVEL", "farthest path with GPU peer-to-peer (LOC=off)", P2pLevel},
        {"NCCL_P2P_LL_THRESHOLD", "P2P LL threshold"},
        {"NCCL_P2P_NET_CHUNKSIZE", "P2P chunk size over the network"},
        {"NCCL_P2P_NVL_CHUNKSIZE", "P2P chunk size over NVLink"},
        {"NCCL_P2P_PCI_CHUNKSIZE", "P2P chunk size over PCIe"},
        {"NCCL_P2P_PXN_LEVEL", "when to send through another GPU's NIC (PXN)"},
        {"NCCL_P2P_READ_ENABLE", "P2P read instead of write"},
        {"NCCL_P2P_USE_CUDA_MEMCPY", "copy engines for P2P"},
        {"NCCL_PROFILER_PLUGIN", "profiler plugin library"},
        {"NCCL_PROTO", "protocols allowed (LL, LL128, Simple)", Forced},
        {"NCCL_PROXY_PROFILE", "proxy profiling output"},
        {"NCCL_PXN_DISABLE", "no PXN (sending through another GPU's NIC)"},
        {"NCCL_RAS_ADDR", "address of the RAS service"},
        {"NCCL_RAS_ENABLE", "the RAS (reliability) service"},
        {"NCCL_RINGS", "old manual ring order"},
        {"NCCL_RUNTIME_CONNECT", "connect peers lazily"},
        {"NCCL_SET_STACK_SIZE", "set the CUDA stack size"},
        {"NCCL_SET_THREAD_NAME", "name NCCL's threads"},
        {"NCCL_SHM_DISABLE", "1: shared-memory transport off", ShmDisable},
        {"NCCL_SHM_LOCALITY", "where the SHM buffers live"},
        {"NCCL_SHM_MEMCPY_MODE", "SHM copy mode"},
        {"NCCL_SHM_USE_CUDA_MEMCPY", "copy engines for SHM"},
        {"NCCL_SINGLE_RING_THRESHOLD", "old single-ring threshold"},
        {"NCCL_SOCKET_FAMILY", "address family of sockets (AF_INET, AF_INET6)"},
        {"NCCL_SOCKET_IFNAME", "interfaces for sockets and bootstrap (prefixes, ^, =)",
         SocketIfname},
        {"NCCL_SOCKET_NTHREADS", "socket helper threads per connection (1..16)", SocketThreads},
        {"NCCL_SOCKET_RETRY_CNT", "socket connect retries"},
        {"NCCL_SOCKET_RETRY_SLEEP_MSEC", "pause between socket retries"},
        {"NCCL_TOPO_DUMP_FILE", "file NCCL writes the detected topology to"},
        {"NCCL_TOPO_FILE", "topology XML loaded before detection", TopoFile},
        {"NCCL_TREE_THRESHOLD", "old tree threshold", nullptr, "NCCL_ALGO"},
        {"NCCL_TUNER_PLUGIN", "tuner plugin library"},
        {"NCCL_UID_STAGGER_RATE", "rate of unique-id bootstrap connections"},
        {"NCCL_UID_STAGGER_THRESHOLD", "ranks from which bootstrap connections are staggered"},
        {"NCCL_WORK_FIFO_BYTES", "size of the work FIFO"},
        {"NCCL_WORK_FIFO_DEPTH", "old name of NCCL_WORK_FIFO_BYTES", nullptr,
         "NCCL_WORK_FIFO_BYTES"},
        // Read by PyTorch, not NCCL (PyTorch renamed them TORCH_NCCL_*).
        {"NCCL_ASYNC_ERROR_HANDLING", "PyTorch: abort on NCCL errors", nullptr,
         "TORCH_NCCL_ASYNC_ERROR_HANDLING"},
        {"NCCL_BLOCKING_WAIT", "PyTorch: blocking waits", nullptr, "TORCH_NCCL_BLOCKING_WAIT"},
        {"NCCL_DESYNC_DEBUG", "PyTorch: desync debugging", nullptr, "TORCH_NCCL_DESYNC_DEBUG"},
    };
    std::sort(v.begin(), v.end(),
              [](const NcclVariable& a, const NcclVariable& b) { return a.name < b.name; });
    return v;
  }();
  return kVariables;
}

const std::vector<std::pair<std::string_view, std::string_view>>& NcclVariablePrefixes() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kPrefixes = {
      {"NCCL_TESTS_", "nccl-tests"},
      {"NCCL_UCX_", "the UCX network plugin"},
      {"NCCL_SHARP_", "the SHARP CollNet plugin"},
  };
  return kPrefixes;
}

namespace {
bool Linted(std::string_view key) {
  return std::any_of(LintedPrefixes().begin(), LintedPrefixes().end(),
                     [&](std::string_view p) { return key.starts_with(p); });
}
}  // namespace

EnvSettings CollectNcclSettings(const Root& root,
                                const std::map<std::string, std::string>& environment) {
  EnvSettings out;
  std::string conf = "/etc/nccl.conf";
  if (auto it = environment.find("NCCL_CONF_FILE"); it != environment.end()) conf = it->second;
  if (auto text = root.Read(conf)) {
    std::istringstream in(*text);
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      line = std::string(Trim(line));
      if (line.empty() || line.front() == '#') continue;
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string key(Trim(line.substr(0, eq)));
      if (!Linted(key)) continue;
      out[key] = {std::string(Trim(line.substr(eq + 1))), conf + ":" + std::to_string(number)};
    }
  }
  for (const auto& [key, value] : environment) {
    if (Linted(key)) out[key] = {value, "environment"};
  }
  return out;
}

std::string ClosestVariable(std::string_view name) {
  // A typo is one or two edits: a name farther away is another variable, and suggesting it
  // would change what the setting does (NCCL_RMA_DISABLE is not NCCL_IB_DISABLE).
  std::string best;
  size_t best_distance = kTypoEdits + 1;
  const auto consider = [&](std::string_view candidate) {
    const size_t d = Distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(candidate);
    }
  };
  for (const auto& v : NcclVariables()) consider(v.name);
  for (const GeneratedVariable& v : NcclSourceVariables().variables) {
    if (v.last == NcclSourceVariables().newest) consider(v.name);
  }
  return best;
}

std::vector<Finding> LintNcclSettings(const LintContext& context) {
  std::vector<Finding> out;
  const auto& known = NcclVariables();
  for (const auto& [name, setting] : context.env) {
    if (LintFamilyVariable(name, setting, context, out)) continue;
    if (RcclDrops(name, setting, context, out)) continue;
    const auto it =
        std::lower_bound(known.begin(), known.end(), name,
                         [](const NcclVariable& v, const std::string& n) { return v.name < n; });
    if (it != known.end() && it->name == name) {
      if (it->rule != nullptr) it->rule(name, setting, context, out);
      if (!it->replaced_by.empty()) Renamed(name, setting, context, out);
      continue;
    }
    const auto prefix =
        std::find_if(NcclVariablePrefixes().begin(), NcclVariablePrefixes().end(),
                     [&name = name](const auto& p) { return name.starts_with(p.first); });
    if (prefix != NcclVariablePrefixes().end()) continue;
    if (SourceKnows(name, setting, out)) continue;
    if (ReadByOthers(name, setting, context, out)) continue;
    const std::string suggestion = ClosestVariable(name);
    out.push_back(MakeFinding(Severity::kWarn,
                              name + " is not a variable NCCL reads" +
                                  (suggestion.empty() ? "" : ": did you mean " + suggestion + "?"),
                              {Quote(name, setting)},
                              suggestion.empty()
                                  ? "remove it, or check the spelling against NCCL's "
                                    "environment-variable documentation"
                                  : "rename it to " + suggestion));
  }
  // Rules that involve two variables.
  const auto threads = context.env.find("NCCL_SOCKET_NTHREADS");
  const auto socks = context.env.find("NCCL_NSOCKS_PERTHREAD");
  if (threads != context.env.end() || socks != context.env.end()) {
    const int64_t t =
        threads != context.env.end() ? ParseInt(threads->second.value).value_or(1) : 1;
    const int64_t s = socks != context.env.end() ? ParseInt(socks->second.value).value_or(1) : 1;
    if (t * s > 64) {
      std::vector<std::string> evidence;
      if (threads != context.env.end()) evidence.push_back(Quote(threads->first, threads->second));
      if (socks != context.env.end()) evidence.push_back(Quote(socks->first, socks->second));
      out.push_back(
          MakeFinding(Severity::kWarn,
                      "NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = " + std::to_string(t * s) +
                          " exceeds NCCL's limit of 64 sockets per connection: NCCL cuts it",
                      evidence, "keep the product at 64 or less (e.g. 4 x 8)"));
    }
  }
  return out;
}

}  // namespace fabricscope::doctor
