// The topology locate blames: host-to-switch maps, Slurm's topology.conf and its host lists,
// and a 64-node two-tier cluster (8 leaves of 8) whose one leaf has slow uplinks: named as
// that leaf's uplinks, not as the 448 links or the 8 nodes behind it.
#include "locate/topology.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
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
  // topology.conf's Nodes= is held to Slurm's own range bound, 65536 hosts a line.
  EXPECT_EQ(ParseSlurmTopology("SwitchName=s0 Nodes=n[1-65536]\n", "t.conf").leaf_of.size(),
            65536u);
  try {
    ParseSlurmTopology("SwitchName=s0 Nodes=n[0-65536]\n", "t.conf");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("expands to more than 65536 names"), std::string::npos)
        << e.what();
  }
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

// ---------------------------------------------------------------------------------------
// The model's fat-trees as the simulated cluster: 64 nodes under 8 leaves of 8 ports at 2:1,
// so each leaf has 4 uplinks (spine0-spine3); each pair routed by ECMP.

constexpr const char* kFatTree = "leaf-ports=8,oversubscription=2";

SimulatedClusterOptions FatTreeCluster(const std::vector<std::string>& faults,
                                       const char* spec = kFatTree, int nodes = 64) {
  SimulatedClusterOptions c;
  c.nodes = nodes;
  c.noise = 0.1;
  c.transient_rate = 0.02;
  c.fat_tree = ParseFatTree(spec);
  for (const std::string& f : faults) c.faults.push_back(ParseSimulatedFault(f));
  return c;
}

// Locate on the fat-tree; the topology is the fabric's own (leaves and routes) unless given.
LocateReport MeasureFatTree(const SimulatedClusterOptions& c,
                            const std::optional<Topology>& topology = std::nullopt) {
  SimulatedCluster sim(c);
  LocateOptions options;
  options.topology = topology ? *topology : sim.FabricTopology();
  options.stragglers = false;
  return Locate(options, sim.Layout(), sim);
}

std::string Kinds(const LocateReport& r) {
  std::string out;
  for (const Suspect& s : r.suspects) out += std::string(NameOf(s.kind)) + " " + s.element + "; ";
  return out;
}

TEST(FatTree, SpecAndFaultsParse) {
  const SimulatedFatTree t = ParseFatTree(
      "leaf-ports=8,oversubscription=2,tiers=2,design=classic,"
      "routing=ecmp,seed=7");
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.leaf_ports, 8);
  EXPECT_EQ(t.oversubscription, 2);
  EXPECT_EQ(t.design, sim::FabricDesign::kClassic);
  EXPECT_EQ(t.seed, 7u);
  EXPECT_THROW(ParseFatTree("leafports=8"), UsageError);
  EXPECT_THROW(ParseFatTree("leaf-ports"), UsageError);
  EXPECT_THROW(ParseFatTree("leaf-ports=x"), UsageError);
  EXPECT_THROW(ParseFatTree("design=torus"), UsageError);

  const SimulatedFault up = ParseSimulatedFault("uplink:leaf3-spine1:0.4");
  EXPECT_EQ(up.kind, SuspectKind::kUplink);
  EXPECT_EQ(up.fabric_link, "leaf3->spine1");
  EXPECT_DOUBLE_EQ(up.factor, 0.4);
  EXPECT_EQ(ParseSimulatedFault("uplink:24-31").fabric_link, "");  // a leaf's nodes, as before
  EXPECT_EQ(ParseSimulatedFault("spine-link:spine2-leaf5").fabric_link, "spine2->leaf5");
  EXPECT_EQ(ParseSimulatedFault("fabric:n3.nic0->leaf0").fabric_link, "n3.nic0->leaf0");
  EXPECT_EQ(ParseSimulatedFault("switch:leaf2").fabric_switch, "leaf2");
  const SimulatedFault rail = ParseSimulatedFault("rail:2:0.5");
  EXPECT_EQ(rail.kind, SuspectKind::kRail);
  EXPECT_EQ(rail.rail, 2);
  EXPECT_THROW(ParseSimulatedFault("spine-link:spine2"), UsageError);
  EXPECT_THROW(ParseSimulatedFault("fabric:"), UsageError);
  EXPECT_THROW(ParseSimulatedFault("rail:x"), UsageError);
}

TEST(FatTree, BadFaultsAreRefusedWithTheFix) {
  SimulatedClusterOptions plain;
  plain.nodes = 8;
  plain.faults = {ParseSimulatedFault("uplink:leaf0-spine1")};
  try {
    SimulatedCluster sim(plain);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("add --fat-tree"), std::string::npos) << e.what();
  }
  auto build = [](const SimulatedClusterOptions& c) { SimulatedCluster sim(c); };
  EXPECT_THROW(build(FatTreeCluster({"uplink:leaf9-spine1"})), UsageError);  // 8 leaves
  EXPECT_THROW(build(FatTreeCluster({"switch:leaf99"})), UsageError);
  EXPECT_THROW(build(FatTreeCluster({"rail:1"})), UsageError);  // one rail
  EXPECT_THROW(build(FatTreeCluster({}, "tiers=4")), UsageError);
}

// The model: a pair is slow exactly when one of its two directions' routes crosses the
// degraded link, and its topology's routes are the ones the measurements took.
TEST(FatTree, APairIsSlowExactlyWhenItsRouteCrossesTheDegradedLink) {
  SimulatedClusterOptions c = FatTreeCluster({"uplink:leaf3-spine1:0.4"});
  c.noise = 0;
  c.transient_rate = 0;
  SimulatedCluster sim(c);
  const Topology t = sim.FabricTopology();
  EXPECT_EQ(t.leaf_of.at("sim27"), "leaf3");
  EXPECT_EQ(t.leaf_of.size(), 64u);
  const ClusterLayout layout = sim.Layout();
  int slow = 0;
  int crossing = 0;
  for (const Round& round : RoundRobinSchedule(64)) {
    for (const PairSample& s : sim.MeasureRound(round)) {
      const auto links = t.route(layout.names[static_cast<size_t>(s.pair.a)],
                                 layout.names[static_cast<size_t>(s.pair.b)], 0);
      const bool crosses = std::find(links.begin(), links.end(), "leaf3->spine1") != links.end();
      EXPECT_NEAR(s.sendrecv_busbw, crosses ? 10.0 : 25.0, 1e-9);
      slow += crosses ? 1 : 0;
      crossing += (s.pair.a / 8 == 3) != (s.pair.b / 8 == 3) ? 1 : 0;
    }
  }
  // One uplink of four: about a quarter of the leaf's 448 crossing pairs.
  EXPECT_EQ(crossing, 448);
  EXPECT_GT(slow, 448 / 8);
  EXPECT_LT(slow, 448 / 2);
  // A pair inside one leaf crosses no switch-to-switch link.
  EXPECT_TRUE(t.route("sim24", "sim25", 0).empty());
}

TEST(FatTree, OneDegradedUplinkAmongFourIsNamedAsThatLink) {
  const LocateReport r = MeasureFatTree(FatTreeCluster({"uplink:leaf3-spine1:0.4"}));
  ASSERT_EQ(r.suspects.size(), 1u) << Kinds(r);
  EXPECT_EQ(r.suspects[0].kind, SuspectKind::kUplink);
  EXPECT_EQ(r.suspects[0].element, "leaf3-spine1");
  EXPECT_EQ(r.suspects[0].nodes, (std::vector<int>{24, 25, 26, 27, 28, 29, 30, 31}));
  EXPECT_NE(r.suspects[0].evidence.find("cross leaf3->spine1 slow (none fine)"), std::string::npos)
      << r.suspects[0].evidence;
  EXPECT_EQ(r.status, LocateStatus::kFound);
}

TEST(FatTree, ADegradedSpineLinkIsNamedAsThatLink) {
  const LocateReport r = MeasureFatTree(FatTreeCluster({"spine-link:spine2-leaf5:0.4"}));
  ASSERT_EQ(r.suspects.size(), 1u) << Kinds(r);
  EXPECT_EQ(r.suspects[0].kind, SuspectKind::kSpineLink);
  EXPECT_EQ(r.suspects[0].element, "spine2-leaf5");
  EXPECT_EQ(r.suspects[0].nodes.front(), 40);
}

TEST(FatTree, AllUplinksOfALeafAreStillTheLeafsUplinks) {
  std::vector<std::string> faults;
  for (int k = 0; k < 4; ++k) faults.push_back("fabric:leaf3-spine" + std::to_string(k) + ":0.4");
  const LocateReport r = MeasureFatTree(FatTreeCluster(faults));
  ASSERT_EQ(r.suspects.size(), 1u) << Kinds(r);
  EXPECT_EQ(r.suspects[0].kind, SuspectKind::kUplink);
  EXPECT_EQ(r.suspects[0].element, "leaf3");
}

TEST(FatTree, ASlowSpineSwitchIsTheSpine) {
  const LocateReport r = MeasureFatTree(FatTreeCluster({"switch:spine1:0.4"}));
  ASSERT_EQ(r.suspects.size(), 1u) << Kinds(r);
  EXPECT_EQ(r.suspects[0].kind, SuspectKind::kSpine);
  EXPECT_EQ(r.suspects[0].element, "spine1");
  EXPECT_NEAR(r.suspects[0].ratio, 0.4, 0.05);
}

TEST(FatTree, ASlowNodeOrHostLinkIsNotBlamedOnASwitch) {
  const LocateReport node = MeasureFatTree(FatTreeCluster({"node:9"}));
  ASSERT_EQ(node.suspects.size(), 1u) << Kinds(node);
  EXPECT_EQ(node.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(node.suspects[0].nodes, std::vector<int>{9});
  // The link from one host's NIC up to its leaf: every pair of that host.
  const LocateReport host = MeasureFatTree(FatTreeCluster({"fabric:n12.nic0->leaf1:0.4"}));
  ASSERT_EQ(host.suspects.size(), 1u) << Kinds(host);
  EXPECT_EQ(host.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(host.suspects[0].nodes, std::vector<int>{12});
  // One slow pair across the spines: that link, not the switch links it crosses.
  const LocateReport link = MeasureFatTree(FatTreeCluster({"link:3-40"}));
  ASSERT_EQ(link.suspects.size(), 1u) << Kinds(link);
  EXPECT_EQ(link.suspects[0].kind, SuspectKind::kLink);
}

TEST(FatTree, WithoutTheRoutesTheLeafWhoseUplinksAreImplicatedIsNamed) {
  // The map file knows the leaves, not ECMP's hash: a subset of leaf3's crossing pairs.
  const LocateReport r =
      MeasureFatTree(FatTreeCluster({"uplink:leaf3-spine1:0.4"}), EightLeaves(false));
  ASSERT_EQ(r.suspects.size(), 1u) << Kinds(r);
  EXPECT_EQ(r.suspects[0].kind, SuspectKind::kSomeUplinks);
  EXPECT_EQ(r.suspects[0].element, "leaf3");
  EXPECT_NE(r.suspects[0].evidence.find("a subset"), std::string::npos) << r.suspects[0].evidence;
  const LocateReport spine =
      MeasureFatTree(FatTreeCluster({"spine-link:spine2-leaf5:0.4"}), EightLeaves(true));
  ASSERT_EQ(spine.suspects.size(), 1u) << Kinds(spine);
  EXPECT_EQ(spine.suspects[0].kind, SuspectKind::kSomeUplinks);
  EXPECT_EQ(spine.suspects[0].element, "leaf5");
}

TEST(FatTree, ARailsSwitchIsTheRail) {
  // Rail-optimized, one scalable unit: rail r of every node on leaf r.
  SimulatedClusterOptions c = FatTreeCluster({"switch:leaf2:0.4"}, "leaf-ports=16", 16);
  c.rails = 4;
  const LocateReport r = MeasureFatTree(c);
  ASSERT_EQ(r.suspects.size(), 1u) << Kinds(r);
  EXPECT_EQ(r.suspects[0].kind, SuspectKind::kRail);
  EXPECT_EQ(r.suspects[0].rails, std::vector<int>{2});
  EXPECT_NEAR(r.suspects[0].ratio, 0.4, 0.05);
  // The same on the plain simulated cluster, without any topology.
  SimulatedClusterOptions plain;
  plain.nodes = 6;
  plain.rails = 2;
  plain.noise = 0.1;
  plain.faults = {ParseSimulatedFault("rail:1:0.5")};
  SimulatedCluster sim(plain);
  LocateOptions options;
  options.stragglers = false;
  const LocateReport bare = Locate(options, sim.Layout(), sim);
  ASSERT_EQ(bare.suspects.size(), 1u) << Kinds(bare);
  EXPECT_EQ(bare.suspects[0].kind, SuspectKind::kRail);
  EXPECT_EQ(bare.suspects[0].rails, std::vector<int>{1});
  // A NIC on one rail of one node is that NIC, not its rail.
  SimulatedClusterOptions nic = plain;
  nic.faults = {ParseSimulatedFault("nic:3/1")};
  SimulatedCluster nic_sim(nic);
  const LocateReport one = Locate(options, nic_sim.Layout(), nic_sim);
  ASSERT_EQ(one.suspects.size(), 1u) << Kinds(one);
  EXPECT_EQ(one.suspects[0].kind, SuspectKind::kNic);
}

// ---------------------------------------------------------------------------------------
// The blame's parts, on hand-made judgements.

PairJudgement Judged(int a, int b, PairCall call, double ratio = 1.0) {
  PairJudgement j;
  j.pair = {a, b};
  j.call = call;
  j.ratio = ratio;
  j.sendrecv = j.all_reduce = 25 * ratio;
  return j;
}

Suspect LinkSuspect(int a, int b) {
  Suspect s;
  s.kind = SuspectKind::kLink;
  s.nodes = {a, b};
  s.rails = {0};
  s.ratio = 0.4;
  s.confirmed = true;
  return s;
}

// Eight nodes, two behind each of four leaves (a0 a1 | b0 b1 | c0 c1 | d0 d1).
LocateReport SmallReport() {
  LocateReport r;
  r.layout.names = {"a0", "a1", "b0", "b1", "c0", "c1", "d0", "d1"};
  r.layout.rails = 1;
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) r.judgements.push_back(Judged(a, b, PairCall::kFine));
  }
  return r;
}

Topology SmallTopology() {
  return ParseHostSwitchMap("a0 A\na1 A\nb0 B\nb1 B\nc0 C\nc1 C\nd0 D\nd1 D\n", "map");
}

void MakeSlow(LocateReport& r, const std::vector<NodePair>& pairs) {
  for (const NodePair& p : pairs) {
    for (PairJudgement& j : r.judgements) {
      if (j.pair == p) j = Judged(p.a, p.b, PairCall::kSlow, 0.4);
    }
    r.suspects.push_back(LinkSuspect(p.a, p.b));
  }
}

TEST(BlameParts, BestElementNeedsTwoSlowLinksNoFinePairAndNoTwin) {
  std::map<std::string, locate::ElementPairs> crossed;
  crossed["A->s0"] = {4, 4, 0, {{0, 2}, {0, 4}, {1, 6}}};
  crossed["A->s1"] = {4, 1, 3, {{1, 2}}};
  crossed["s0->B"] = {4, 1, 0, {{0, 2}}};  // one slow link: not a switch's
  EXPECT_EQ(locate::BestElement(crossed), "A->s0");
  crossed["A->s0"].fine = 1;  // a fine pair crosses it: not it
  EXPECT_EQ(locate::BestElement(crossed), std::nullopt);
  crossed["A->s0"].fine = 0;
  crossed["s0->C"] = {3, 3, 0, {{0, 2}, {0, 4}, {1, 6}}};  // every one of them crosses it too
  EXPECT_EQ(locate::BestElement(crossed), std::nullopt);
  crossed["s0->C"].slow = 2;  // 2 of 3 slow: below 3 in 4, does not qualify
  EXPECT_EQ(locate::BestElement(crossed), "A->s0");
}

TEST(BlameParts, CrossedByCountsEveryPairOnTheRoute) {
  LocateReport r = SmallReport();
  MakeSlow(r, {{0, 2}, {1, 4}});
  std::map<NodePair, double> slow = {{{0, 2}, 0.4}, {{1, 4}, 0.4}};
  const auto crossed = locate::CrossedBy(r, 0, slow, [](const NodePair& p) {
    // Leaf A's nodes go up through s0, everyone else's through s1.
    std::vector<std::string> links;
    for (int x : {p.a, p.b}) links.push_back(x < 2 ? "A->s0" : "X->s1");
    return links;
  });
  EXPECT_EQ(crossed.at("A->s0").total, 13);  // 1 inside A (counted once) + 12 crossing
  EXPECT_EQ(crossed.at("A->s0").slow, 2);
  EXPECT_EQ(crossed.at("A->s0").fine, 11);
  EXPECT_EQ(crossed.at("A->s0").links, (std::vector<NodePair>{{0, 2}, {1, 4}}));
}

TEST(BlameParts, ASubsetOfOneLeafsCrossingPairsIsItsUplinks) {
  LocateReport r = SmallReport();
  MakeSlow(r, {{0, 2}, {1, 5}, {0, 7}});
  const auto subset = locate::SubsetOf(r, {0, 1});
  ASSERT_TRUE(subset.has_value());
  EXPECT_EQ(subset->links.size(), 3u);
  EXPECT_EQ(subset->crossing, 12);
  EXPECT_FALSE(locate::SubsetOf(r, {2, 3}).has_value());  // one link crosses B
  locate::BlameLeafSubsets(SmallTopology(), r);
  ASSERT_EQ(r.suspects.size(), 1u) << Kinds(r);
  EXPECT_EQ(r.suspects[0].kind, SuspectKind::kSomeUplinks);
  EXPECT_EQ(r.suspects[0].element, "A");
  EXPECT_EQ(r.status, LocateStatus::kFound);
}

TEST(BlameParts, OneNodesLinksOrLinksInsideALeafAreNotItsUplinks) {
  LocateReport one = SmallReport();
  MakeSlow(one, {{0, 2}, {0, 4}, {0, 6}});  // all from a0: a0's, not A's
  locate::BlameLeafSubsets(SmallTopology(), one);
  EXPECT_EQ(one.suspects.size(), 3u) << Kinds(one);
  LocateReport inside = SmallReport();
  MakeSlow(inside, {{0, 2}, {1, 5}, {0, 7}, {0, 1}});
  EXPECT_FALSE(locate::SubsetOf(inside, {0, 1}).has_value());
}

TEST(BlameParts, LinksBetweenTwoLeavesAloneAreAmbiguous) {
  LocateReport r = SmallReport();
  MakeSlow(r, {{0, 2}, {0, 3}, {1, 2}, {1, 3}});
  locate::BlameLeafSubsets(SmallTopology(), r);
  EXPECT_EQ(r.suspects.size(), 4u) << Kinds(r);  // the links stay: nobody wrongly named
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("ambiguous"), std::string::npos) << r.notes[0];
}

TEST(BlameParts, LinksToASpineFromEveryLeafAreTheSpine) {
  LocateReport r = SmallReport();
  const Topology t = SmallTopology();
  auto named = [](SuspectKind kind, const std::string& element) {
    Suspect s;
    s.kind = kind;
    s.element = element;
    s.rails = {0};
    s.ratio = 0.4;
    s.agreeing = s.measurements = 3;
    return s;
  };
  const auto leaves = std::map<std::string, std::vector<int>>{
      {"A", {0, 1}}, {"B", {2, 3}}, {"C", {4, 5}}, {"D", {6, 7}}};
  EXPECT_EQ(locate::SpineOf(named(SuspectKind::kUplink, "A-s1"), leaves), "s1");
  EXPECT_EQ(locate::SpineOf(named(SuspectKind::kSpineLink, "s1-D"), leaves), "s1");
  EXPECT_EQ(locate::SpineOf(named(SuspectKind::kLink, "A-s1"), leaves), "");
  // Three leaves of four: three links, not the spine.
  r.suspects = {named(SuspectKind::kUplink, "A-s1"), named(SuspectKind::kSpineLink, "s1-B"),
                named(SuspectKind::kUplink, "C-s1"), named(SuspectKind::kUplink, "A-s0")};
  locate::BlameSpines(t, r);
  EXPECT_EQ(r.suspects.size(), 4u) << Kinds(r);
  // The fourth leaf too: the spine, and the link to the other spine stays.
  r.suspects.push_back(named(SuspectKind::kSpineLink, "s1-D"));
  locate::BlameSpines(t, r);
  ASSERT_EQ(r.suspects.size(), 2u) << Kinds(r);
  EXPECT_EQ(r.suspects[0].element, "A-s0");
  EXPECT_EQ(r.suspects[1].kind, SuspectKind::kSpine);
  EXPECT_EQ(r.suspects[1].element, "s1");
  EXPECT_EQ(r.suspects[1].measurements, 12);
}

TEST(BlameParts, ARailIsSlowOnlyWhenSignificantlyBelowTheOthers) {
  const std::vector<std::vector<double>> logs = {{0.01, -0.02, 0.0, 0.03, -0.01, 0.02},
                                                 {-0.9, -0.92, -0.88, -0.91, -0.89, -0.9}};
  const double z = 4;
  const locate::RailTest slow = locate::TestRail(logs, 1, 0.05, z, std::log(0.7));
  EXPECT_TRUE(slow.slow);
  EXPECT_NEAR(slow.diff, -0.9, 0.02);
  EXPECT_EQ(slow.pairs, 6);
  EXPECT_FALSE(locate::TestRail(logs, 0, 0.05, z, std::log(0.7)).slow);
  // The same drop with noise far larger than it: not significant.
  EXPECT_FALSE(locate::TestRail(logs, 1, 2.0, z, std::log(0.7)).slow);
  // At 0.8x with a 0.7x threshold: not slow however precise.
  const std::vector<std::vector<double>> mild = {{0, 0, 0, 0}, {-0.22, -0.22, -0.22, -0.22}};
  EXPECT_FALSE(locate::TestRail(mild, 1, 0.01, z, std::log(0.7)).slow);
}

// ---------------------------------------------------------------------------------------
// The fabric's own routes: the captured healthy fabric (tests/fabric/data/healthy: 16 HCAs
// h1..h16, four per leaf, leaves with four uplinks to two spines, opensm's forwarding
// tables in dump_fts.txt) as the topology, read as `--topology DIR` reads it.

std::string HealthyFabric() {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/fabric/data/healthy";
}

// A test double for the network this machine lacks: 16 hosts at 25 GB/s whose pairs are
// 0.4x when the fabric's route between them (either way) crosses `cable`, with seeded
// log-normal noise. The routes are the real forwarding tables'.
class RoutedPairs final : public PairMeasurer {
 public:
  RoutedPairs(const Topology& topology, std::string cable)
      : topology_(topology), cable_(std::move(cable)) {
    for (int i = 1; i <= 16; ++i) layout_.names.push_back("h" + std::to_string(i));
    for (int i = 0; i < 16; ++i) layout_.ranks.push_back({i});
  }
  const ClusterLayout& layout() const { return layout_; }
  bool Crosses(const NodePair& p) const {
    const auto cables = topology_.route(layout_.names[static_cast<size_t>(p.a)],
                                        layout_.names[static_cast<size_t>(p.b)], 0);
    return std::find(cables.begin(), cables.end(), cable_) != cables.end();
  }
  std::vector<PairSample> MeasureRound(const Round& round) override {
    std::vector<PairSample> out;
    for (const NodePair& p : round.pairs) {
      const double bw = Crosses(p) ? 10.0 : 25.0;
      out.push_back({p, 0, bw * Noise(), bw * Noise(), 0});
    }
    return out;
  }

 private:
  double Noise() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return 1.0 + 0.04 * (static_cast<double>(state_ >> 11) * 0x1.0p-53 - 0.5);  // +-2%
  }
  const Topology& topology_;
  const std::string cable_;
  ClusterLayout layout_;
  uint64_t state_ = 7;
};

TEST(FabricTopology, RoutesComeFromTheForwardingTablesAsCablesLeafEndFirst) {
  const Topology t = ReadTopology(HealthyFabric());
  ASSERT_TRUE(t.route);
  EXPECT_EQ(t.leaf_of.size(), 16u);
  EXPECT_EQ(t.leaf_of.at("h1"), "leaf1");
  EXPECT_EQ(t.leaf_of.at("h16"), "leaf4");
  // h1 -> h16 through the tables: leaf1[8] -> spine2[2], spine2[8] -> leaf4[8] (as
  // `fabricscope fabric --path h1,h16` prints it), and the way back; each cable once, its
  // leaf's end first.
  const std::vector<std::string> route = t.route("h1", "h16", 0);
  EXPECT_NE(std::find(route.begin(), route.end(), "leaf1[8]->spine2[2]"), route.end());
  EXPECT_NE(std::find(route.begin(), route.end(), "leaf4[8]->spine2[8]"), route.end());
  for (const std::string& cable : route) EXPECT_EQ(cable.rfind("leaf", 0), 0u) << cable;
  EXPECT_EQ(t.route("h16", "h1", 0), route);    // the same cables, whichever end asks
  EXPECT_TRUE(t.route("h1", "h2", 0).empty());  // one leaf: no switch-to-switch cable
  EXPECT_TRUE(t.route("h1", "nowhere", 0).empty());
  EXPECT_TRUE(t.route("h1", "h16", 1).empty());  // one HCA each: no rail 1
  // A host's full name finds its short one.
  EXPECT_EQ(t.route("h1.cluster", "h16.cluster", 0), route);
}

TEST(FabricTopology, ADegradedUplinkCableIsNamedAsThatCableNotAsTheHostsBehind) {
  const Topology t = ReadTopology(HealthyFabric());
  RoutedPairs fabric(t, "leaf1[5]->spine1[1]");
  int crossing = 0;
  for (const Round& round : RoundRobinSchedule(16)) {
    for (const NodePair& p : round.pairs) crossing += fabric.Crosses(p) ? 1 : 0;
  }
  ASSERT_GE(crossing, 4);  // several pairs' routes cross it, some of leaf1's do not
  ASSERT_LT(crossing, 4 * 12);
  LocateOptions options;
  options.topology = t;
  options.stragglers = false;
  const LocateReport r = Locate(options, fabric.layout(), fabric);
  ASSERT_EQ(r.suspects.size(), 1u) << r.suspects.size() << " suspects";
  EXPECT_EQ(r.suspects[0].kind, SuspectKind::kUplink);
  EXPECT_EQ(r.suspects[0].element, "leaf1[5]-spine1[1]");
  EXPECT_EQ(r.suspects[0].nodes, (std::vector<int>{0, 1, 2, 3}));  // h1..h4, behind leaf1
  EXPECT_NE(r.suspects[0].evidence.find("the cable between leaf1[5] and spine1[1] (routes from " +
                                        HealthyFabric() + ")"),
            std::string::npos)
      << r.suspects[0].evidence;
  EXPECT_EQ(r.status, LocateStatus::kFound);

  // Without the tables (iblinkinfo and ibnetdiscover only) the same measurements name
  // some of leaf1's uplinks, which ones unknown.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("fabricscope-i13-fabric-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* tool : {"iblinkinfo.txt", "ibnetdiscover.txt"}) {
    std::filesystem::copy_file(std::filesystem::path(HealthyFabric()) / tool, dir / tool);
  }
  options.topology = ReadTopology(dir.string());
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(options.topology.route);
  RoutedPairs again(t, "leaf1[5]->spine1[1]");
  const LocateReport leaves = Locate(options, again.layout(), again);
  ASSERT_EQ(leaves.suspects.size(), 1u) << leaves.suspects.size() << " suspects";
  EXPECT_EQ(leaves.suspects[0].kind, SuspectKind::kSomeUplinks);
  EXPECT_EQ(leaves.suspects[0].element, "leaf1");
}

}  // namespace
}  // namespace fabricscope
