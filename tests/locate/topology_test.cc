// The topology locate blames: host-to-switch maps, Slurm's topology.conf and its host lists,
// and a 64-node two-tier cluster (8 leaves of 8) whose one leaf has slow uplinks: named as
// that leaf's uplinks, not as the 448 links or the 8 nodes behind it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"

namespace fabricscope {
namespace {

TEST(ExpandHostList, RangesListsAndPadding) {
  EXPECT_EQ(ExpandHostList("node[01-03,7],gpu1"),
            (std::vector<std::string>{"node01", "node02", "node03", "node7", "gpu1"}));
  EXPECT_EQ(ExpandHostList("a,b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(ExpandHostList("node[3-1]"), UsageError);
  EXPECT_THROW(ExpandHostList("node[1-x]"), UsageError);
  EXPECT_THROW(ExpandHostList("node[1-2"), UsageError);
}

TEST(Topology, HostSwitchMap) {
  const Topology t =
      ParseHostSwitchMap("# host switch\nfs1 leafA\nfs2 leafA  # same\n\nfs3 leafB\n", "map.txt");
  EXPECT_EQ(t.leaf_of.size(), 3u);
  EXPECT_EQ(t.leaf_of.at("fs2"), "leafA");
  EXPECT_EQ(t.leaf_of.at("fs3"), "leafB");
  try {
    ParseHostSwitchMap("fs1 leafA\nfs2\n", "map.txt");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("map.txt:2: expected 'HOST SWITCH'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseHostSwitchMap("# nothing\n", "map.txt"), UsageError);
}

TEST(Topology, SlurmTopologyConf) {
  const Topology t = ParseSlurmTopology(
      "# topology/tree\nSwitchName=s0 Nodes=gpu[001-002]\nSwitchName=s1 Nodes=gpu[003-004],cpu1\n"
      "SwitchName=spine Switches=s[0-1]\n",
      "topology.conf");
  EXPECT_EQ(t.leaf_of.size(), 5u);
  EXPECT_EQ(t.leaf_of.at("gpu002"), "s0");
  EXPECT_EQ(t.leaf_of.at("cpu1"), "s1");
  try {
    ParseSlurmTopology("SwitchName=s0 Nodes=a\nNodes=b\n", "topology.conf");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("topology.conf:2: no SwitchName="), std::string::npos)
        << e.what();
  }
}

TEST(Topology, ReadTellsTheFormatsApartAndNamesAMissingFile) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("fabricscope-i13-topology-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "map") << "h1 l1\nh2 l2\n";
    std::ofstream(dir / "topology.conf") << "SwitchName=l1 Nodes=h[1-2]\n";
  }
  EXPECT_EQ(ReadTopology((dir / "map").string()).leaf_of.at("h2"), "l2");
  EXPECT_EQ(ReadTopology((dir / "topology.conf").string()).leaf_of.at("h2"), "l1");
  EXPECT_THROW(ReadTopology((dir / "absent").string()), SystemError);
  std::filesystem::remove_all(dir);
}

// 64 simulated nodes, 8 per leaf switch (sim00-sim07 behind leaf0, ...).
Topology EightLeaves(bool slurm) {
  std::string text;
  for (int leaf = 0; leaf < 8; ++leaf) {
    if (slurm) {
      text += "SwitchName=leaf" + std::to_string(leaf) + " Nodes=sim" + "[" +
              std::to_string(leaf * 8 + 100).substr(1) + "-" +
              std::to_string(leaf * 8 + 107).substr(1) + "]\n";
    } else {
      for (int i = 0; i < 8; ++i) {
        text += "sim" + std::to_string(leaf * 8 + i + 100).substr(1) + " leaf" +
                std::to_string(leaf) + "\n";
      }
    }
  }
  if (slurm) text += "SwitchName=spine Switches=leaf[0-7]\n";
  return slurm ? ParseSlurmTopology(text, "topology.conf") : ParseHostSwitchMap(text, "map");
}

LocateReport Measure(const std::vector<SimulatedFault>& faults, const Topology& topology) {
  SimulatedClusterOptions c;
  c.nodes = 64;
  c.noise = 0.1;
  c.transient_rate = 0.02;
  c.faults = faults;
  SimulatedCluster sim(c);
  LocateOptions options;
  options.topology = topology;
  options.stragglers = false;
  return Locate(options, sim.Layout(), sim);
}

TEST(Topology, SlowUplinksOfALeafAreNamedAsThemNotAsTheNodesBehind) {
  for (bool slurm : {false, true}) {
    const LocateReport r = Measure({ParseSimulatedFault("uplink:24-31:0.4")}, EightLeaves(slurm));
    ASSERT_EQ(r.suspects.size(), 1u) << r.suspects.size() << " suspects";
    EXPECT_EQ(r.suspects[0].kind, SuspectKind::kUplink);
    EXPECT_EQ(r.suspects[0].element, "leaf3");
    EXPECT_EQ(r.suspects[0].nodes, (std::vector<int>{24, 25, 26, 27, 28, 29, 30, 31}));
    EXPECT_NE(r.suspects[0].evidence.find("448 of the 448 pairs"), std::string::npos)
        << r.suspects[0].evidence;
    EXPECT_EQ(r.status, LocateStatus::kFound);
  }
  // Without the topology the same measurements are 448 slow links: true, and less useful.
  const LocateReport bare = Measure({ParseSimulatedFault("uplink:24-31:0.4")}, {});
  EXPECT_EQ(bare.suspects.size(), 448u);
}

TEST(Topology, ASlowNodeOrLinkIsNotBlamedOnItsSwitch) {
  const Topology t = EightLeaves(false);
  const LocateReport node = Measure({ParseSimulatedFault("node:9")}, t);
  ASSERT_EQ(node.suspects.size(), 1u);
  EXPECT_EQ(node.suspects[0].kind, SuspectKind::kNode);
  const LocateReport link = Measure({ParseSimulatedFault("link:3-40")}, t);
  ASSERT_EQ(link.suspects.size(), 1u);
  EXPECT_EQ(link.suspects[0].kind, SuspectKind::kLink);
}

}  // namespace
}  // namespace fabricscope
