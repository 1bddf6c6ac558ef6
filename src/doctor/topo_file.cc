#include "doctor/topo_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <pugixml.hpp>
#include <regex>
#include <sstream>

#include "fabricscope/error.h"

namespace fabricscope::doctor {
namespace {

std::vector<std::string> Tokens(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// nvidia-smi underlines and bolds the header on a terminal; a pasted copy may keep that.
std::string StripAnsi(const std::string& line) {
  static const std::regex kEscape("\x1b\\[[0-9;]*[A-Za-z]");
  return std::regex_replace(line, kEscape, "");
}

bool IsGpuColumn(std::string_view name) {
  return name.size() > 3 && name.starts_with("GPU") &&
         std::all_of(name.begin() + 3, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int LineOf(std::string_view text, ptrdiff_t offset) {
  if (offset < 0) return 0;
  const auto end = text.begin() + std::min<ptrdiff_t>(offset, static_cast<ptrdiff_t>(text.size()));
  return 1 + static_cast<int>(std::count(text.begin(), end, '\n'));
}

// Walks the pci/nic nesting of one cpu element of NCCL's XML.
class XmlWalker {
 public:
  XmlWalker(std::string_view text, PciTopology& topology, const std::string& name)
      : text_(text), topology_(topology), name_(name) {}

  void Walk(const pugi::xml_node& node, int numa, const std::string& host_bridge,
            std::vector<std::string>& chain) {
    for (const pugi::xml_node& child : node.children()) {
      const std::string_view tag = child.name();
      if (tag == "pci") {
        const std::string busid = child.attribute("busid").as_string();
        if (const pugi::xml_node gpu = child.child("gpu")) {
          PciDevice d;
          d.kind = DeviceKind::kGpu;
          d.bdf = busid;
          const int dev = gpu.attribute("dev").as_int(-1);
          d.name = "GPU" + std::to_string(dev >= 0 ? dev : gpus_);
          ++gpus_;
          Place(d, child, numa, host_bridge, chain);
        } else if (const pugi::xml_node nic = child.child("nic")) {
          AddNics(nic, busid, child, numa, host_bridge, chain);
        } else {
          chain.push_back(busid);
          Walk(child, numa, host_bridge, chain);
          chain.pop_back();
        }
      } else if (tag == "nic") {
        AddNics(child, "", child, numa, host_bridge, chain);
      }
    }
  }

 private:
  void Place(PciDevice& d, const pugi::xml_node& pci, int numa, const std::string& host_bridge,
             const std::vector<std::string>& chain) {
    d.numa = numa;
    d.host_bridge = host_bridge;
    d.bridges = chain;
    d.class_code =
        static_cast<uint32_t>(std::strtoul(pci.attribute("class").as_string("0"), nullptr, 16));
    d.vendor =
        static_cast<uint16_t>(std::strtoul(pci.attribute("vendor").as_string("0"), nullptr, 16));
    d.link_speed = pci.attribute("link_speed").as_string();
    d.link_width = pci.attribute("link_width").as_int();
    topology_.devices.push_back(d);
  }

  void AddNics(const pugi::xml_node& nic, const std::string& busid, const pugi::xml_node& pci,
               int numa, const std::string& host_bridge, const std::vector<std::string>& chain) {
    for (const pugi::xml_node& net : nic.children("net")) {
      PciDevice d;
      d.kind = DeviceKind::kNic;
      d.bdf = busid;
      d.name = net.attribute("name").as_string();
      if (d.name.empty()) d.name = busid.empty() ? "net" : busid;
      d.rdma_devices = {d.name};
      if (net.attribute("gdr") && !net.attribute("gdr").as_bool()) {
        topology_.notes.push_back(name_ + ":" + std::to_string(LineOf(text_, net.offset_debug())) +
                                  ": NCCL found no GPUDirect RDMA support for " + d.name +
                                  " (gdr=\"0\")");
      }
      Place(d, pci, numa, host_bridge, chain);
    }
  }

  std::string_view text_;
  PciTopology& topology_;
  const std::string& name_;
  int gpus_ = 0;
};

// The header line of `nvidia-smi topo -m` and its device columns (GPU0 ... NIC0 ..., up to
// the affinity columns); `lines.size()` and none when there is no header.
size_t FindSmiHeader(const std::vector<std::string>& lines, std::vector<std::string>* columns) {
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto tokens = Tokens(lines[i]);
    // The header names GPU0 GPU1 ...; the row of GPU0 goes on with "X" (itself).
    if (tokens.size() < 2 || tokens.front() != "GPU0" || tokens[1] == "X") continue;
    for (const auto& t : tokens) {
      if (t == "CPU" || t == "NUMA") break;
      columns->push_back(t);
    }
    return i;
  }
  return lines.size();
}

// One device row (`tokens`, of line `line_number`, the device of column `r`): the PCIe path
// between it and every other device, and the NUMA node of a GPU.
void ReadSmiRow(const std::vector<std::string>& tokens, size_t r, size_t line_number,
                const std::vector<std::string>& columns, const std::string& name,
                PciTopology& topology) {
  if (tokens.size() < columns.size() + 1) {
    throw UsageError(fmt::format(
        "{}:{}: row {} has {} cells but the header has {} device columns: give the unedited "
        "output of `nvidia-smi topo -m`",
        name, line_number, tokens.front(), tokens.size() - 1, columns.size()));
  }
  PciDevice& self = topology.devices[r];
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c == r) continue;
    const std::string& cell = tokens[c + 1];
    const PciDevice& other = topology.devices[c];
    const bool gpu_nic = (self.kind == DeviceKind::kGpu) != (other.kind == DeviceKind::kGpu);
    const auto path = ParsePathName(cell);
    if (!path) {
      if (!gpu_nic) continue;  // NV# between GPUs
      throw UsageError(fmt::format(
          "{}:{}: cell '{}' (row {}, column {}) is not a PCIe path: expected PIX, PXB, PHB, "
          "NODE or SYS",
          name, line_number, cell, tokens.front(), columns[c]));
    }
    topology.stated[{self.name, other.name}] = *path;
  }
  // GPU rows go on with "CPU Affinity" and "NUMA Affinity".
  if (self.kind == DeviceKind::kGpu && tokens.size() >= columns.size() + 3) {
    if (auto numa = ParseInt(tokens[columns.size() + 2])) self.numa = static_cast<int>(*numa);
  }
}

}  // namespace

PciTopology ParseNvidiaSmiTopo(std::string_view text, const std::string& name) {
  PciTopology topology;
  topology.source = "nvidia-smi topo -m (" + name + ")";
  std::vector<std::string> lines;
  {
    std::istringstream in{std::string(text)};
    for (std::string line; std::getline(in, line);) lines.push_back(StripAnsi(line));
  }
  std::vector<std::string> columns;
  const size_t header = FindSmiHeader(lines, &columns);
  if (columns.empty()) {
    throw UsageError("--topo-file '" + name +
                     "' is neither `nvidia-smi topo -m` output (a header line of GPU0 GPU1 ... "
                     "columns) nor an NCCL topology XML (<system>...)");
  }
  // "NIC Legend:" entries ("  NIC0: mlx5_0") name the NIC columns of recent versions.
  std::map<std::string, std::string> legend;
  static const std::regex kLegend(R"(^\s*(NIC\d+)\s*:\s*(\S+)\s*$)");
  for (const auto& line : lines) {
    std::smatch m;
    if (std::regex_match(line, m, kLegend)) legend[m[1]] = m[2];
  }
  auto display = [&](const std::string& column) {
    auto it = legend.find(column);
    return it == legend.end() ? column : it->second;
  };
  for (const auto& c : columns) {
    PciDevice d;
    d.kind = IsGpuColumn(c) ? DeviceKind::kGpu : DeviceKind::kNic;
    d.name = display(c);
    if (d.kind == DeviceKind::kNic) d.rdma_devices = {d.name};
    topology.devices.push_back(d);
  }
  for (size_t i = header + 1; i < lines.size(); ++i) {
    const auto tokens = Tokens(lines[i]);
    if (tokens.empty()) continue;
    const auto row = std::find(columns.begin(), columns.end(), tokens.front());
    if (row == columns.end()) continue;
    const size_t r = static_cast<size_t>(row - columns.begin());
    ReadSmiRow(tokens, r, i + 1, columns, name, topology);
  }
  return topology;
}

PciTopology ParseNcclTopoXml(std::string_view text, const std::string& name) {
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(text.data(), text.size());
  if (!parsed) {
    throw UsageError(name + ":" + std::to_string(LineOf(text, parsed.offset)) +
                     ": not well-formed XML (" + parsed.description() +
                     "): expected an NCCL topology such as NCCL_TOPO_DUMP_FILE writes");
  }
  const pugi::xml_node system = doc.child("system");
  if (!system) {
    const pugi::xml_node first = doc.first_child();
    throw UsageError(name + ":" + std::to_string(LineOf(text, first.offset_debug())) +
                     ": the root element is <" + first.name() +
                     ">, not <system>: not an NCCL topology XML");
  }
  PciTopology topology;
  topology.source = "NCCL topology XML (" + name + ")";
  XmlWalker walker(text, topology, name);
  int index = 0;
  for (const pugi::xml_node& cpu : system.children("cpu")) {
    const int numa = cpu.attribute("numaid").as_int(-1);
    const std::string host_bridge =
        "cpu" + (numa >= 0 ? std::to_string(numa) : "#" + std::to_string(index));
    std::vector<std::string> chain;
    walker.Walk(cpu, numa, host_bridge, chain);
    ++index;
  }
  return topology;
}

PciTopology ParseTopoFile(const std::string& path) {
  std::error_code ec;
  std::ifstream in;
  if (!std::filesystem::is_directory(path, ec)) in.open(path, std::ios::binary);
  if (!in) {
    throw UsageError("cannot read --topo-file '" + path +
                     "': give the saved output of `nvidia-smi topo -m` or an NCCL topology XML");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '<') return ParseNcclTopoXml(text, path);
  return ParseNvidiaSmiTopo(text, path);
}

}  // namespace fabricscope::doctor
