// The node probes (src/node/, namespace fabricscope::node) under the names doctor's checks
// use them by.
#pragma once

#include "fabricscope/node_ib.h"
#include "fabricscope/node_pci.h"
#include "fabricscope/node_root.h"

namespace fabricscope::doctor {

using node::ClassifyPath;
using node::DeviceKind;
using node::ErrorCounter;
using node::ErrorCounters;
using node::Gid;
using node::IbDevice;
using node::IbPort;
using node::IbScan;
using node::NumaNode;
using node::ParseInt;
using node::ParsePathName;
using node::ParsePortRate;
using node::PathName;
using node::PathType;
using node::PciDevice;
using node::PciScan;
using node::PciTopology;
using node::PortRate;
using node::Root;
using node::ScanIb;
using node::ScanPci;
using node::VendorName;

}  // namespace fabricscope::doctor
