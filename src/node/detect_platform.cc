// Platform detection on the node: what the node says about itself (DMI), its GPUs and its
// GPU-fabric NICs, read through the doctor's probes under one root, matched to the catalog.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "fabricscope/joined.h"
#include "fabricscope/node.h"
#include "fabricscope/node_ib.h"
#include "fabricscope/node_pci.h"
#include "fabricscope/node_root.h"
#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

using node::Root;

// `key` in `text` as a whole word, case-insensitive ("H200" in "GH100 [H200 SXM 141GB]", but
// not "H100" in "GH100").
bool HasWord(const std::string& text, const std::string& key) {
  const std::string hay = Lower(text);
  const std::string needle = Lower(key);
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
    const size_t end = at + needle.size();
    const bool start = at == 0 || std::isalnum(static_cast<unsigned char>(hay[at - 1])) == 0;
    const bool stop = end == hay.size() || std::isalnum(static_cast<unsigned char>(hay[end])) == 0;
    if (start && stop) return true;
  }
  return false;
}

// "H100" of "NVIDIA H100": the word that tells GPU generations apart.
std::string GpuKey(const std::string& model) {
  const size_t space = model.rfind(' ');
  return space == std::string::npos ? model : model.substr(space + 1);
}

// A GPU's model name and where it was read: NVIDIA's driver names it under /proc; else the
// node's pci.ids names its PCI device id; else only the id is known.
struct GpuModel {
  std::string name;  // empty: unknown
  std::string from;
};

GpuModel ReadGpuModel(const Root& root, const node::PciDevice& gpu) {
  const std::string info = "/proc/driver/nvidia/gpus/" + gpu.bdf + "/information";
  if (const auto text = root.Read(info)) {
    for (const std::string& line : Split(*text, '\n')) {
      if (line.starts_with("Model:")) {
        return {std::string(Trim(line.substr(6))),
                root.Show("/proc/driver/nvidia/gpus/*/information")};
      }
    }
  }
  const auto device = root.ReadInt("/sys/bus/pci/devices/" + gpu.bdf + "/device");
  if (!device) return {};
  const std::string vendor_id = fmt::format("{:04x}", gpu.vendor);
  const std::string device_id = fmt::format("{:04x}", *device);
  for (const char* ids : {"/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"}) {
    const auto text = root.Read(ids);
    if (!text) continue;
    // Vendors start a line with their id; their devices follow, indented by one tab.
    bool in_vendor = false;
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      if (line[0] != '\t') {
        in_vendor = line.starts_with(vendor_id + " ");
      } else if (in_vendor && line.size() > 1 && line[1] != '\t' &&
                 line.substr(1).starts_with(device_id + " ")) {
        return {std::string(Trim(line.substr(1 + device_id.size()))), root.Show(ids)};
      }
    }
  }
  return {"", fmt::format("PCI id {}:{} (no driver name, no pci.ids entry)", vendor_id, device_id)};
}

// What the node says about itself.
struct NodeFacts {
  std::string product;  // DMI product name; empty when absent
  std::string vendor;
  int gpus = 0;
  std::string gpu_model;  // the most common model; empty when unknown
  int rdma_ports = 0;
  double rdma_rate = 0;  // Gb/s of most ports
  int rdma_at_rate = 0;
  int rdma_inactive = 0;
  std::string link_layer;  // "InfiniBand" or "Ethernet" (RoCE)
  int plain_nics = 0;      // network functions without RDMA
};

// The DMI product name and vendor.
void ReadDmiFacts(const Root& root, NodeFacts& f, PlatformChoice& choice) {
  std::string why;
  const std::string product_path = "/sys/class/dmi/id/product_name";
  if (auto product = root.ReadLine(product_path, &why); product && !product->empty()) {
    f.product = *product;
    choice.evidence.push_back("DMI product name '" + f.product + "' (" + root.Show(product_path) +
                              ")");
  } else {
    choice.evidence.push_back("no DMI product name (" + root.Show(product_path) + ": " +
                              (why.empty() ? "empty" : why) + ")");
  }
  const std::string vendor_path = "/sys/class/dmi/id/sys_vendor";
  if (auto vendor = root.ReadLine(vendor_path); vendor && !vendor->empty()) {
    f.vendor = *vendor;
    choice.evidence.push_back("DMI vendor '" + f.vendor + "' (" + root.Show(vendor_path) + ")");
  }
}

// The GPUs among the PCI devices and their most common model.
void ReadGpuFacts(const Root& root, const node::PciScan& pci, NodeFacts& f,
                  PlatformChoice& choice) {
  if (!pci.unavailable.empty()) {
    choice.evidence.push_back("no PCI devices: " + pci.unavailable);
  }
  std::map<std::string, int> models;
  std::string model_from;
  for (const node::PciDevice* gpu : pci.topology.Gpus()) {
    ++f.gpus;
    const GpuModel model = ReadGpuModel(root, *gpu);
    ++models[model.name];
    if (model_from.empty()) model_from = model.from;
  }
  int most = 0;
  for (const auto& [name, count] : models) {
    if (count > most && !name.empty()) {
      most = count;
      f.gpu_model = name;
    }
  }
  if (f.gpus > 0) {
    choice.evidence.push_back(
        fmt::format("{} GPU{} {} ({})", f.gpus, f.gpus == 1 ? "" : "s",
                    f.gpu_model.empty() ? std::string("of unknown model") : "'" + f.gpu_model + "'",
                    model_from.empty() ? root.Show("/sys/bus/pci/devices") : model_from));
  } else if (pci.unavailable.empty()) {
    choice.evidence.push_back("no GPU among the PCI devices (" + root.Show("/sys/bus/pci/devices") +
                              ")");
  }
}

// The RDMA ports: how many, at which rate most of them run, and their link layer.
void ReadRdmaFacts(const Root& root, NodeFacts& f, PlatformChoice& choice) {
  const node::IbScan ib = node::ScanIb(root);
  std::map<double, int> rates;
  for (const node::IbPort* port : ib.Ports()) {
    ++f.rdma_ports;
    ++rates[port->rate.gbps];
    if (port->state != "ACTIVE") ++f.rdma_inactive;
    if (f.link_layer.empty()) f.link_layer = port->link_layer;
  }
  for (const auto& [rate, count] : rates) {
    if (count > f.rdma_at_rate) {
      f.rdma_at_rate = count;
      f.rdma_rate = rate;
    }
  }
  if (f.rdma_ports > 0) {
    choice.evidence.push_back(
        fmt::format("{} RDMA port{}, {} at {:g} Gb/s, link layer {}{} ({})", f.rdma_ports,
                    f.rdma_ports == 1 ? "" : "s", f.rdma_at_rate, f.rdma_rate, f.link_layer,
                    f.rdma_inactive > 0 ? fmt::format(", {} not ACTIVE", f.rdma_inactive) : "",
                    root.Show("/sys/class/infiniband")));
  } else {
    choice.evidence.push_back("no RDMA ports: " +
                              (ib.unavailable.empty()
                                   ? root.Show("/sys/class/infiniband") + " lists no port"
                                   : ib.unavailable));
  }
}

NodeFacts ReadFacts(const Root& root, PlatformChoice& choice) {
  NodeFacts f;
  ReadDmiFacts(root, f, choice);
  const node::PciScan pci = node::ScanPci(root);
  ReadGpuFacts(root, pci, f, choice);
  ReadRdmaFacts(root, f, choice);
  for (const node::PciDevice* nic : pci.topology.Nics()) {
    if (!nic->rdma()) ++f.plain_nics;
  }
  if (f.plain_nics > 0) {
    choice.evidence.push_back(fmt::format("{} network function{} without RDMA ({})", f.plain_nics,
                                          f.plain_nics == 1 ? "" : "s",
                                          root.Show("/sys/bus/pci/devices")));
  }
  return f;
}

// How one catalog platform fits the node.
struct Fit {
  const Platform* platform = nullptr;
  bool dmi = false;
  bool nics = false;
  int score() const { return (dmi ? 2 : 0) + (nics ? 1 : 0); }
};

bool DmiFits(const NodeFacts& f, const Platform& p) {
  if (f.product.empty()) return false;
  const bool product =
      std::any_of(p.detect.dmi_product_names.begin(), p.detect.dmi_product_names.end(),
                  [&](const std::string& name) { return Lower(name) == Lower(f.product); });
  return product &&
         (p.detect.dmi_sys_vendor.empty() || Lower(p.detect.dmi_sys_vendor) == Lower(f.vendor));
}

bool NicsFit(const NodeFacts& f, const Platform& p) {
  // gIB (Google's NCCL plugin) runs over RoCE NICs: their link layer is Ethernet.
  if (p.transport == "IB" || p.transport == "RoCE" || p.transport == "gIB" ||
      p.transport == "EFA") {
    const bool layer = p.transport == "EFA" || f.link_layer.empty() ||
                       (p.transport == "IB") == (f.link_layer == "InfiniBand");
    return f.rdma_at_rate == p.nics && std::fabs(f.rdma_rate - p.nic_rate_gbps) < 1 && layer;
  }
  // TCPX, TCPXO and TCP ride on plain NICs; a cloud VM adds its primary NIC to the data ones.
  return f.rdma_ports == 0 && (f.plain_nics == p.nics || f.plain_nics == p.nics + 1);
}

// Two platforms a detection cannot tell apart and need not: the same hardware and figures.
bool SameFigures(const Platform& a, const Platform& b) {
  return a.gpu_model == b.gpu_model && a.gpus_per_node == b.gpus_per_node && a.nics == b.nics &&
         a.nic_rate_gbps == b.nic_rate_gbps && a.transport == b.transport &&
         a.expected.size() == b.expected.size() &&
         std::equal(a.expected.begin(), a.expected.end(), b.expected.begin(),
                    [](const Expectation& x, const Expectation& y) {
                      return x.collective == y.collective && x.nodes_min == y.nodes_min &&
                             x.typical_busbw == y.typical_busbw && x.low_busbw == y.low_busbw;
                    });
}

std::string Describe(const NodeFacts& f) {
  std::string out = f.gpus > 0
                        ? fmt::format("{} x {}", f.gpus, f.gpu_model.empty() ? "GPU" : f.gpu_model)
                        : "no GPU";
  if (f.rdma_ports > 0) {
    out += fmt::format(", {} x {:g} Gb/s RDMA ({})", f.rdma_at_rate, f.rdma_rate, f.link_layer);
  } else {
    out += fmt::format(", {} NIC{} without RDMA", f.plain_nics, f.plain_nics == 1 ? "" : "s");
  }
  if (!f.product.empty()) out += ", DMI product name '" + f.product + "'";
  return out;
}

}  // namespace

PlatformChoice DetectPlatform(const Catalog& catalog, const std::string& root_dir) {
  const Root root(root_dir);
  PlatformChoice choice;
  choice.origin = "detected";
  const NodeFacts facts = ReadFacts(root, choice);
  if (facts.gpus == 0) {
    choice.origin = "none";
    choice.unavailable = "could not detect the platform: this node has no GPU";
    return choice;
  }
  std::vector<Fit> fits;
  for (const Platform& p : catalog.platforms()) {
    const bool gpu = facts.gpus == p.gpus_per_node &&
                     (facts.gpu_model.empty() || HasWord(facts.gpu_model, GpuKey(p.gpu_model)));
    if (!gpu) continue;
    Fit fit{&p, DmiFits(facts, p), NicsFit(facts, p)};
    if (fit.score() > 0) fits.push_back(fit);
  }
  if (fits.empty()) {
    choice.origin = "none";
    choice.unavailable =
        "could not detect the platform: " + Describe(facts) + " fits no platform of the catalog";
    return choice;
  }
  std::stable_sort(fits.begin(), fits.end(),
                   [](const Fit& a, const Fit& b) { return a.score() > b.score(); });
  std::vector<const Platform*> tied;
  for (const Fit& fit : fits) {
    if (fit.score() == fits.front().score()) tied.push_back(fit.platform);
  }
  const Fit& best = fits.front();
  const bool same = std::all_of(tied.begin(), tied.end(),
                                [&](const Platform* p) { return SameFigures(*p, *best.platform); });
  if (!same) {
    const std::string names = Joined(tied, [](const Platform* t) { return t->name; });
    choice.origin = "none";
    choice.unavailable = "could not detect the platform: " + Describe(facts) +
                         " fits several platforms with different figures (" + names +
                         "): give --platform";
    return choice;
  }
  const Platform& p = *best.platform;
  choice.platform = p;
  if (tied.size() > 1) {
    std::string others;
    for (const Platform* t : tied) {
      if (t != &p) others += (others.empty() ? "" : ", ") + t->name;
    }
    choice.notes.push_back("the node fits " + others + " equally, with the same figures as " +
                           p.name + "; give --platform to name it");
  }
  if (!best.dmi && !p.detect.dmi_product_names.empty()) {
    choice.notes.push_back(
        fmt::format("the DMI product name is not {}'s ({}): chosen by its GPUs and NICs", p.name,
                    p.detect.dmi_product_names.front()));
  }
  if (!best.nics) {
    choice.notes.push_back(
        fmt::format("{} has {} x {:g} Gb/s {} NICs, this node shows {}: run fabricscope doctor",
                    p.name, p.nics, p.nic_rate_gbps, p.transport, Describe(facts)));
  }
  if (facts.gpu_model.empty()) {
    choice.notes.push_back(
        "the GPU model is unknown (no NVIDIA driver information, no pci.ids "
        "entry): matched by the GPU count");
  }
  return choice;
}

}  // namespace fabricscope
