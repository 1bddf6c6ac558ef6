// The platform catalog: what each GPU-cluster node type can deliver, as data with sources.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fabricscope {

// A healthy busbw band for one collective at large sizes on a range of node counts.
struct Expectation {
  std::string collective;  // "all_reduce"
  int nodes_min = 1;
  std::optional<int> nodes_max;  // empty: any count from nodes_min up
  size_t min_size = 0;           // bytes; the band applies at and above this size
  double typical_busbw = 0;      // GB/s, what a healthy run reaches
  double low_busbw = 0;          // GB/s, the lowest still-healthy value
  // NCCL algorithm of the figure: Ring, Tree, NVLS, NVLSTree, CollNet (in-network reduction,
  // SHARP) or PAT; empty: NCCL's own choice, which the source does not name.
  std::string algorithm;
  // "measured" (a run someone published: `quote` holds its sentence, `quote_value` the number as
  // printed there), "derived" (`formula` shows how) or "assumed" (`settle` says what would
  // settle it; listed in docs/catalog.md).
  std::string basis;
  std::string source;
  std::string quote;        // measured: the source's words, with the number
  std::string quote_value;  // measured: the number as the quote prints it ("834.57")
  std::string formula;      // derived: how the figure follows from others
  std::string settle;       // assumed: what would settle it
  std::string date;         // when the source was published or read, if known

  bool Covers(const std::string& coll, int nodes, size_t size) const;
  // Whether the band needs in-network reduction (CollNet: SHARP on the fabric).
  bool InNetwork() const { return algorithm == "CollNet"; }
};

// How much a figure's basis weighs: measured 0, derived 1, assumed 2 (lower wins).
int BasisRank(const std::string& basis);

// The NCCL algorithms a band can name, as NCCL_ALGO spells them.
const std::vector<std::string>& BandAlgorithms();

// One published measurement, kept as the evidence behind the bands.
struct PublishedPoint {
  std::string collective;
  int nodes = 0;
  size_t size = 0;
  double busbw = 0;
  std::string placement;  // "out-of-place", "in-place" or empty
  std::string algorithm;
  std::string source;
};

// An NCCL variable a platform needs, with the reason.
struct EnvSetting {
  std::string name;
  std::string value;
  std::string why;
};

// How to recognise the platform on the node itself.
struct DetectHints {
  std::vector<std::string> dmi_product_names;  // /sys/class/dmi/id/product_name
  std::string dmi_sys_vendor;                  // /sys/class/dmi/id/sys_vendor, if it narrows
};

// One node type of a GPU cluster.
struct Platform {
  std::string name;
  std::vector<std::string> aliases;
  std::string vendor;
  std::string description;
  std::string gpu_model;  // "NVIDIA H200"
  // Other names the device lines of this GPU show, read in published logs: "NVIDIA Graphics
  // Device", the name a driver prints for a GPU its name table lacks (CoreWeave's GB200 runs).
  // Such a name fits several GPUs, so a log is matched by it only when its other facts agree.
  std::vector<std::string> device_names;
  std::string device_names_source;  // where the logs showing them were read
  int gpus_per_node = 0;
  double nvlink_per_direction_gbs = 0;  // per GPU
  double intra_node_ring_busbw = 0;     // GB/s, a healthy single-node ring
  std::string intra_node_source;
  // What joins the GPUs of a node: "NVSwitch", "NVLink", "XGMI", "PCIe", or "MNNVL" when the
  // NVLink switches reach beyond the node (GB200/GB300 NVL72: 4 GPUs a compute tray, 72 in
  // one NVLink domain), so that runs on several nodes of one domain never touch the NICs.
  std::string intra_fabric = "NVSwitch";
  int nvlink_domain_gpus = 0;    // GPUs in one NVLink domain; = gpus_per_node unless MNNVL
  double domain_ring_busbw = 0;  // GB/s, a healthy ring across nodes of one MNNVL domain
  std::string domain_source;
  std::string hardware_source;  // where GPUs per node / domain and link rates were read
  int nics = 0;                 // GPU-fabric NICs per node
  double nic_rate_gbps = 0;     // line rate per NIC, Gb/s
  std::string nic_model;
  std::string transport;       // IB, RoCE, gIB, TCPX, TCPXO, EFA, TCP
  std::string network_source;  // where the NIC count and rate were read
  // The node's NIC total as its provider's page states it (Gb/s), with the page's sentence.
  std::optional<double> nic_total_gbps;
  std::string nic_total_quote;
  std::string nic_total_source;
  // NVLink SHARP inside the node (NVSwitch multicast, Hopper and later): NCCL's NVLS and
  // NVLSTree algorithms are possible.
  bool nvls = false;
  // In-network reduction on the GPU fabric (InfiniBand SHARP, NCCL's CollNet): "none" where the
  // fabric cannot have it (EFA, RoCE, TCPX), "fabric" where it depends on the fabric's switches
  // and subnet manager, which check's --sharp or the run's NCCL log decides.
  std::string sharp = "none";
  std::optional<double> latency_floor_us;  // 2-node small-message floor, when published
  std::string latency_source;
  std::vector<EnvSetting> nccl_env;
  DetectHints detect;
  std::vector<Expectation> expected;
  std::vector<PublishedPoint> published;
  std::optional<double> without_gpudirect_busbw;  // what the fallback path reaches
  std::string without_gpudirect_source;

  // Whether `device` is one of device_names (case-insensitive, whole name).
  bool KnownAsDevice(const std::string& device) const;
  // Line rate of all GPU-fabric NICs of one node, one direction, GB/s (decimal).
  double NicTotalGBs() const { return nics * nic_rate_gbps / 8.0; }
  // Whether NVLink joins nodes (multi-node NVLink, the NVL72 racks).
  bool Mnnvl() const { return intra_fabric == "MNNVL"; }
  // Nodes of one NVLink domain: 18 compute trays of an NVL72 rack, 1 elsewhere.
  int NodesPerNvlinkDomain() const {
    return Mnnvl() && gpus_per_node > 0 ? nvlink_domain_gpus / gpus_per_node : 1;
  }
  // Whether a run on `nodes` nodes fits in one NVLink domain and so crosses NVLink, not the
  // NICs: 2 to 18 trays of an NVL72 rack.
  bool InNvlinkDomain(int nodes) const {
    return Mnnvl() && nodes >= 2 && nodes <= NodesPerNvlinkDomain();
  }
  // The band for this collective, node count and size; none when the catalog has no figure.
  std::optional<Expectation> ExpectationFor(const std::string& collective, int nodes,
                                            size_t size) const;
};

// A node described on the command line rather than by name.
struct GenericPlatformOptions {
  int gpus_per_node = 8;
  double intra_node_busbw = 0;  // GB/s, healthy single-node ring busbw
  int nics = 0;
  double nic_rate_gbps = 0;
  std::string transport = "IB";
  double ring_efficiency = 0.9;  // fraction of NIC line rate a healthy ring reaches
  std::optional<double> latency_floor_us;
};

// The catalog: the built-in platforms (compiled from data/platforms/*.json) plus any added.
class Catalog {
 public:
  // The platforms shipped in the binary.
  static Catalog Builtin();
  // Parses one platform document; throws UsageError naming `origin` and the bad field.
  static Platform ParsePlatform(const std::string& json_text, const std::string& origin);

  void Add(Platform platform);
  // By name or alias, case-insensitive; nullptr when unknown.
  const Platform* Find(const std::string& name) const;
  // Like Find, but throws UsageError listing every known name.
  const Platform& Get(const std::string& name) const;
  const std::vector<Platform>& platforms() const { return platforms_; }
  std::vector<std::string> Names() const;

 private:
  std::vector<Platform> platforms_;
};

// A platform from GPUs per node, intra-node bandwidth, NIC count and rate; derived bands for
// the ring collectives. Throws UsageError when a figure is missing or not positive.
Platform GenericPlatform(const GenericPlatformOptions& options);

}  // namespace fabricscope
