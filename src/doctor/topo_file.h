// Private: GPU and NIC placement from a file when sysfs alone is not enough: the text of
// `nvidia-smi topo -m`, or an NCCL topology XML (NCCL_TOPO_FILE, NCCL_TOPO_DUMP_FILE).
#pragma once

#include <string>
#include <string_view>

#include "doctor/node_probes.h"

namespace fabricscope::doctor {

// Reads either format (XML when the file starts with '<'). Throws UsageError naming the
// file, and the line where one is wrong, for anything that is neither.
PciTopology ParseTopoFile(const std::string& path);

// The matrix of `nvidia-smi topo -m`: GPU and NIC columns (NIC0.. with the "NIC Legend"
// naming them, or the NIC names themselves in older versions), PIX/PXB/PHB/NODE/SYS cells,
// the CPU and NUMA affinity columns. `name` is used in messages.
PciTopology ParseNvidiaSmiTopo(std::string_view text, const std::string& name);

// NCCL's <system><cpu numaid=..><pci busid=.. class=..><gpu/> | <nic><net name=../></nic>
// tree: NUMA node from the enclosing cpu, PCIe position from the nesting of pci elements.
PciTopology ParseNcclTopoXml(std::string_view text, const std::string& name);

}  // namespace fabricscope::doctor
