// The fabric parsers and findings on outputs captured from the real infiniband-diags tools
// on the ibsim test bed (tests/fabric/data, written by scripts/testbed/ibsim.sh and
// `fabricscope fabric --save`), and the command's handling of bad input (in this process;
// the binary where the environment matters).
#include "fabricscope/fabric.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "common/in_process.h"
#include "fabricscope/error.h"
#include "fabricscope/finding.h"

namespace fabricscope::fabric {
namespace {

std::string Data(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/fabric/data/" + name;
}

FabricReport Report(const std::string& name, const std::string& baseline = "") {
  AnalyzeOptions options;
  Fabric base;
  if (!baseline.empty()) {
    base = ParseFabric(ReadSaved(Data(baseline)));
    options.findings.baseline = &base;
  }
  return Analyze(ParseFabric(ReadSaved(Data(name))), options);
}

std::set<std::string> Named(const FabricReport& report) {
  std::set<std::string> out;
  for (const auto& f : report.findings) out.insert(f.source + " " + f.where);
  return out;
}

TEST(FabricParse, HealthyFabricHasEveryNodeLinkAndTable) {
  const Fabric f = ParseFabric(ReadSaved(Data("healthy")));
  EXPECT_TRUE(f.problems.empty()) << f.problems.front();
  EXPECT_EQ(f.nodes.size(), 22u);  // 2 spines, 4 leaves, 16 HCAs
  const Node* leaf1 = f.FindByName("leaf1");
  ASSERT_NE(leaf1, nullptr);
  EXPECT_EQ(leaf1->kind, NodeKind::kSwitch);
  EXPECT_EQ(leaf1->guid, "0x0000000000200002");
  ASSERT_EQ(leaf1->ports.size(), 8u);
  const Port& p5 = leaf1->ports[4];
  EXPECT_EQ(p5.number, 5);
  EXPECT_EQ(p5.lanes, 4);
  EXPECT_DOUBLE_EQ(p5.lane_gbps, 10.0);
  EXPECT_EQ(p5.state, "Active");
  EXPECT_EQ(p5.physical, "LinkUp");
  EXPECT_EQ(p5.peer_name, "spine1");
  EXPECT_EQ(p5.peer_port, 1);
  EXPECT_NE(p5.evidence.find("iblinkinfo.txt:"), std::string::npos);
  EXPECT_EQ(f.tables.size(), 6u);
  EXPECT_TRUE(f.sm.present);
  EXPECT_EQ(f.sm.state, "SMINFO_MASTER");
  const Topology t = TopologyOf(f);
  EXPECT_EQ(t.leaves, (std::vector<std::string>{"leaf1", "leaf2", "leaf3", "leaf4"}));
  EXPECT_EQ(t.spines, (std::vector<std::string>{"spine1", "spine2"}));
  EXPECT_EQ(t.host_leaf.at("h7"), "leaf2");
  EXPECT_EQ((t.uplinks.at({"leaf3", "spine2"})), 2);
}

TEST(FabricFindings, HealthyFabricNamesNothing) {
  const FabricReport r = Report("healthy");
  EXPECT_TRUE(r.findings.empty()) << r.findings.front().source << " " << r.findings.front().where;
  EXPECT_DOUBLE_EQ(r.routing.ring.limit_factor, 1.0);
  EXPECT_DOUBLE_EQ(r.routing.alltoall.limit_factor, 1.0);
  // check_lft_balance's count: 12 remote hosts over a leaf's 4 uplinks.
  for (const auto& b : r.routing.balance) {
    if (b.switch_name.starts_with("leaf")) {
      EXPECT_EQ(b.destinations, 3) << b.switch_name;
    }
  }
}

TEST(FabricFindings, EachInjectedFaultIsNamed) {
  // width 1X on leaf1[5], SDR on leaf2[5], leaf3[6] unplugged, errors on leaf1[7].
  const FabricReport r = Report("faults", "healthy");
  EXPECT_EQ(Named(r), (std::set<std::string>{
                          "link-width leaf1[5] <-> spine1[1]", "link-speed leaf2[5] <-> spine1[3]",
                          "link-down leaf3[6] <-> spine1[6]", "error-counter leaf1[7]"}));
  const auto width = std::find_if(r.findings.begin(), r.findings.end(),
                                  [](const Finding& f) { return f.source == "link-width"; });
  // The ring all_reduce's hottest link is the 1X one: the factor goes to its finding.
  EXPECT_NEAR(r.routing.ring.limit_factor, 4.0, 1e-9);
  EXPECT_EQ(r.routing.ring.links.front().from, "leaf1[5]");
  EXPECT_TRUE(std::any_of(width->evidence.begin(), width->evidence.end(),
                          [](const std::string& e) { return e.starts_with("impact:"); }));
}

TEST(FabricFindings, WithoutBaselineADownUplinkIsMissingCabling) {
  const FabricReport r = Report("faults");
  EXPECT_TRUE(Named(r).contains("missing-uplink leaf3"));
  EXPECT_FALSE(Named(r).contains("link-down leaf3[6] <-> spine1[6]"));
}

TEST(FabricFindings, ExpectedRateJudgesEveryLink) {
  AnalyzeOptions options;
  options.findings.expect = ParseLinkRate("4xNDR");
  const FabricReport r = Analyze(ParseFabric(ReadSaved(Data("healthy"))), options);
  EXPECT_EQ(std::count_if(r.findings.begin(), r.findings.end(),
                          [](const Finding& f) { return f.source == "link-speed"; }),
            32);
}

TEST(FabricFindings, DeadSwitchMissingUplinkAndUnusedSpine) {
  // The baseline names the switch that no longer answers.
  const FabricReport dead = Report("dead-switch", "healthy");
  EXPECT_EQ(Named(dead),
            (std::set<std::string>{"dead-node spine2", "link-width leaf1[5] <-> spine1[1]",
                                   "link-speed leaf2[5] <-> spine1[3]",
                                   "link-down leaf3[6] <-> spine1[6]", "error-counter leaf1[7]"}));
  const auto named = std::find_if(dead.findings.begin(), dead.findings.end(),
                                  [](const Finding& f) { return f.source == "dead-node"; });
  EXPECT_NE(named->what.find("the baseline names it spine2 (GUID 0x0000000000200001, LID 3)"),
            std::string::npos)
      << named->what;
  EXPECT_NE(std::find(named->evidence.begin(), named->evidence.end(),
                      "baseline: switch spine2 GUID 0x0000000000200001 LID 3"),
            named->evidence.end());
  // Without one it is known by its LID alone, and the message says how to name it.
  const FabricReport lid_only = Report("dead-switch");
  const auto by_lid = std::find_if(lid_only.findings.begin(), lid_only.findings.end(),
                                   [](const Finding& f) { return f.source == "dead-node"; });
  ASSERT_NE(by_lid, lid_only.findings.end());
  EXPECT_EQ(by_lid->where, "LID 3");
  EXPECT_NE(by_lid->what.find("known only by LID 3: name it with 'fabricscope fabric "
                              "--baseline DIR'"),
            std::string::npos)
      << by_lid->what;
  EXPECT_NE(by_lid->what.find("'saquery -O 3'"), std::string::npos) << by_lid->what;
  EXPECT_EQ(Named(Report("missing-uplink")), (std::set<std::string>{"missing-uplink leaf4"}));
  const FabricReport dor = Report("dor-engine");
  EXPECT_EQ(Named(dor), (std::set<std::string>{"unused-spine spine2"}));
  EXPECT_EQ(dor.fabric.sm.routing_engine, "dor");
  EXPECT_NEAR(dor.routing.alltoall.limit_factor, 1.6, 1e-9);
  EXPECT_NEAR(dor.routing.alltoall.balanced_factor, 1.0, 1e-9);
}

TEST(FabricFindings, CounterGrowthBetweenTwoReads) {
  Fabric earlier;
  ParseIbqueryerrors(
      "Errors for 0x200002 \"leaf1\"\n   GUID 0x200002 port 7: "
      "[SymbolErrorCounter == 1234]\n",
      "first", earlier);
  Fabric now;
  ParseIbqueryerrors(
      "Errors for 0x200002 \"leaf1\"\n   GUID 0x200002 port 7: "
      "[SymbolErrorCounter == 5000]\n   GUID 0x200002 port 8: "
      "[PortXmitDiscards == 3]\n",
      "second", now);
  FindingOptions options;
  options.earlier = &earlier;
  options.interval_seconds = 10;
  const auto found = CounterFindings(now, options);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].source, "error-growth");
  EXPECT_NE(found[0].what.find("SymbolErrorCounter=3766"), std::string::npos);
  EXPECT_EQ(found[1].source, "error-growth");  // new since the first read
}

TEST(FabricParse, BadLinesAreProblemsWithFileAndLine) {
  ToolOutputs outputs;
  outputs.text["iblinkinfo"] =
      "Switch: 0x0000000000200002 leaf1:\n"
      "           4    5[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>       2    1[  ] "
      "\"spine1\" ( )\n"
      "           4    6[  ] ==( garbage )==> nonsense\n"
      "what is this\n"
      "           99999999999999999999    7[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>"
      "       2    1[  ] \"spine1\" ( )\n";
  outputs.origin["iblinkinfo"] = "saved/iblinkinfo.txt";
  outputs.text["dump_fts"] = "0x0001 005 : (Channel Adapter portguid 0x1: 'h1')\n";
  outputs.origin["dump_fts"] = "saved/dump_fts.txt";
  const Fabric f = ParseFabric(outputs);
  ASSERT_EQ(f.problems.size(), 4u);
  EXPECT_TRUE(f.problems[0].starts_with("saved/iblinkinfo.txt:3:"));
  EXPECT_TRUE(f.problems[1].starts_with("saved/iblinkinfo.txt:4:"));
  EXPECT_TRUE(f.problems[2].starts_with("saved/iblinkinfo.txt:5:"));
  EXPECT_NE(f.problems[2].find("out of range"), std::string::npos);
  EXPECT_TRUE(f.problems[3].starts_with("saved/dump_fts.txt:1:"));
  EXPECT_EQ(f.nodes.size(), 1u);
}

TEST(FabricParse, LinkRates) {
  EXPECT_EQ(ParseLinkRate("4xNDR").lanes, 4);
  EXPECT_DOUBLE_EQ(ParseLinkRate("4XHDR").lane_gbps, 53.125);
  EXPECT_THROW(ParseLinkRate("fast"), UsageError);
  EXPECT_THROW(ParseLinkRate("4xZZR"), UsageError);
  EXPECT_THROW(ParseLinkRate("0xNDR"), UsageError);
  EXPECT_THROW(ParseLinkRate("99999999999999999xNDR"), UsageError);
  EXPECT_EQ(RateName(4, 106.25), "4X NDR");
  EXPECT_NEAR(DataGbps(4, 106.25), 412.12, 0.01);
  EXPECT_DOUBLE_EQ(DataGbps(4, 10.0), 32.0);
}

class FabricCli : public test::InProcessTest {
 protected:
  FabricCli() : InProcessTest("fabric") {}
};

TEST_F(FabricCli, SavedFabricAsTextJsonAndSvg) {
  auto o = Here("--from " + Data("faults") + " --baseline " + Data("healthy"));
  EXPECT_EQ(o.exit_code, 1) << o.err;  // CRITICAL findings
  EXPECT_TRUE(std::regex_search(o.out, std::regex("\nCRITICAL +link-width +leaf1\\[5\\] <-> "
                                                  "spine1\\[1\\]: runs at 1X QDR")))
      << o.out;
  EXPECT_NE(o.out.find("evidence: " + Data("faults") + "/iblinkinfo.txt:"), std::string::npos);
  o = Here("--from " + Data("healthy") + " --format json");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  EXPECT_EQ(json["findings"].size(), 0u);
  EXPECT_EQ(json["findings_version"], kFindingsVersion);
  EXPECT_EQ(json["worst"], "OK");
  EXPECT_EQ(json["topology"]["host_leaf"]["h16"], "leaf4");
  EXPECT_EQ(json["routing"]["ring"]["limit_factor"], 1.0);
  o = Here("--from " + Data("faults") + " --format svg");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_TRUE(o.out.starts_with("<svg")) << o.out.substr(0, 100);
  EXPECT_NE(o.out.find("#fb8c00"), std::string::npos);  // a link in a finding
  EXPECT_NE(o.out.find("#e53935"), std::string::npos);  // the link down
}

TEST_F(FabricCli, PathThroughTheTablesAndAsIbtracertSawIt) {
  auto o = Here("--from " + Data("healthy") + " --path h4,h14 --format json");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto path = nlohmann::json::parse(o.out)["path"];
  const std::vector<std::string> hops = {"h4[1] -> leaf1[4]", "leaf1[6] -> spine1[2]",
                                         "spine1[8] -> leaf4[6]", "leaf4[2] -> h14[1]"};
  EXPECT_EQ(path["hops"].get<std::vector<std::string>>(), hops);
  EXPECT_EQ(path["ibtracert_hops"].get<std::vector<std::string>>(), hops);
  o = Here("--from " + Data("healthy") + " --path h4,h99");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("'h99', which is not an HCA"), std::string::npos) << o.err;
  o = Here("--from " + Data("healthy") + " --path h4");
  EXPECT_EQ(o.exit_code, 2);
}

TEST_F(FabricCli, MissingHostIsCritical) {
  const auto o = Here("--from " + Data("healthy") + " --hosts h1,h2,h99");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_TRUE(std::regex_search(
      o.out, std::regex("\nCRITICAL +missing-host +h99: h99 is on the expected list")))
      << o.out;
}

// The findings go through the one text writer and the one JSON form (finding.h): the text
// report holds the writer's lines for them, the JSON every key of every finding.
TEST_F(FabricCli, FindingsInTheSharedTextAndJsonForms) {
  const FabricReport r = Report("faults", "healthy");
  ASSERT_FALSE(r.findings.empty());
  auto o = Here("--from " + Data("faults") + " --baseline " + Data("healthy"));
  EXPECT_NE(o.out.find(FindingsText(r.findings)), std::string::npos) << o.out;
  o = Here("--from " + Data("faults") + " --baseline " + Data("healthy") + " --format json");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  EXPECT_EQ(json["findings_version"], kFindingsVersion);
  EXPECT_EQ(json["worst"], "CRITICAL");
  ASSERT_EQ(json["findings"].size(), r.findings.size());
  for (const auto& f : json["findings"]) {
    for (const char* key : {"severity", "source", "what", "where", "evidence", "fix", "figures",
                            "decided", "element", "nodes"}) {
      EXPECT_TRUE(f.contains(key)) << key << " missing in " << f.dump();
    }
  }
  const auto& first = json["findings"][0];
  EXPECT_EQ(first["severity"], SeverityName(r.findings[0].severity));
  EXPECT_EQ(first["source"], r.findings[0].source);
  EXPECT_EQ(first["where"], r.findings[0].where);
  EXPECT_EQ(first["what"], r.findings[0].what);
}

// INFO findings (a partly filled leaf) show their fix only under --verbose; problems always.
TEST(FabricText, InfoFindingsKeepTheirFixForVerbose) {
  FabricReport r;
  r.findings.push_back({.severity = Severity::kInfo,
                        .source = "hosts-per-leaf",
                        .what = "3 hosts where most leaves have 4",
                        .where = "leaf4",
                        .fix = "expected for a partly filled leaf"});
  EXPECT_EQ(FormatText(r, false).find("fix: expected"), std::string::npos) << FormatText(r, false);
  EXPECT_NE(FormatText(r, true).find("fix: expected"), std::string::npos) << FormatText(r, true);
  EXPECT_EQ(r.worst(), Severity::kInfo);
  r.findings.clear();
  EXPECT_EQ(r.worst(), Severity::kOk);
}

// One table gives each kind its family; the report folds and the job's impact groups by it.
TEST(FabricText, EveryKindHasItsFamily) {
  EXPECT_EQ(CategoryOf("link-width"), "link");
  EXPECT_EQ(CategoryOf("link-mismatch"), "link");
  EXPECT_EQ(CategoryOf("error-growth"), "counters");
  EXPECT_EQ(CategoryOf("dead-node"), "cabling");
  EXPECT_EQ(CategoryOf("route-imbalance"), "routing");
  EXPECT_EQ(CategoryOf("no-sm"), "subnet-manager");
  EXPECT_EQ(CategoryOf("bandwidth"), "");
  // Every kind the captured fabrics give is in the table.
  for (const char* name : {"faults", "dead-switch", "missing-uplink", "dor-engine"}) {
    for (const Finding& f : Report(name).findings) {
      EXPECT_NE(CategoryOf(f.source), "") << f.source;
    }
  }
}

TEST_F(FabricCli, BadInputIsAClearUsageError) {
  auto o = Here("--from /nonexistent/dir");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("is not a directory"), std::string::npos) << o.err;
  o = Here("--from " + dir_.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("holds neither iblinkinfo.txt nor ibnetdiscover.txt"), std::string::npos);
  o = Here("--from " + Data("healthy") + " --expect fast");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("e.g. 4xNDR"), std::string::npos) << o.err;
  o = Here("--from " + Data("healthy") + " --format pdf");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("text, json, svg"), std::string::npos) << o.err;
  o = Here("--from " + Data("healthy") + " --interval 2");
  EXPECT_EQ(o.exit_code, 2);
  o = Here("--from " + Data("healthy") + " --tool-timeout 1e300");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--tool-timeout must be"), std::string::npos) << o.err;
  Write("iblinkinfo.txt", "complete nonsense\n");
  o = Here("--from " + dir_.string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("note: " + (dir_ / "iblinkinfo.txt").string() + ":1:"), std::string::npos)
      << o.out;
}

TEST_F(FabricCli, NoToolsOnPathIsARuntimeError) {
  const auto o = RunProgram(FABRICSCOPE_BINARY, "--tool-timeout 5", "PATH=/nonexistent");
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_NE(o.err.find("could not be started"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace fabricscope::fabric

namespace fabricscope::fabric {
namespace {

// `fabricscope model --fabric DIR`: the simulator's max-min sharing over the routed flows.
class ModelOnFabric : public test::BinaryTest {
 protected:
  ModelOnFabric() : BinaryTest("model") {}
  nlohmann::json Predict(const std::string& dir, const std::string& collective) {
    const auto o = Run("--fabric " + Data(dir) + " --collective " + collective + " --format json");
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return nlohmann::json::parse(o.out);
  }
};

TEST_F(ModelOnFabric, AsRoutedAgainstBalanced) {
  // 4X QDR: 32 Gb/s of data, 4 GB/s per host link.
  auto p = Predict("healthy", "all_reduce");
  EXPECT_DOUBLE_EQ(p["host_gbs"], 4.0);
  EXPECT_DOUBLE_EQ(p["as_routed"]["busbw_gbs"], 4.0);
  // The ring crosses the 1X link leaf1[5] -> spine1[1]: a quarter of the line rate.
  p = Predict("faults", "all_reduce");
  EXPECT_DOUBLE_EQ(p["as_routed"]["busbw_gbs"], 1.0);
  EXPECT_EQ(p["as_routed"]["bottleneck"], "leaf1[5] -> spine1[1]");
  EXPECT_DOUBLE_EQ(p["balanced"]["busbw_gbs"], 4.0);
  // dor leaves spine2 unused: spine1's links carry 1.6 times a host's all-to-all share.
  p = Predict("dor-engine", "alltoall");
  EXPECT_DOUBLE_EQ(p["as_routed"]["busbw_gbs"], 2.5);
  EXPECT_DOUBLE_EQ(p["balanced"]["busbw_gbs"], 4.0);
  const auto o = Run("--fabric " + Data("dor-engine") + " --collective alltoall");
  EXPECT_NE(o.out.find("as routed          2.50"), std::string::npos) << o.out;
}

TEST_F(ModelOnFabric, BadInput) {
  auto o = Run("--fabric /nonexistent");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("is not a directory"), std::string::npos) << o.err;
  o = Run("--fabric " + Data("healthy") + " --collective broadcast");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("all_reduce (ring) or alltoall"), std::string::npos) << o.err;
  Write("iblinkinfo.txt", test::Slurp(Data("healthy") + "/iblinkinfo.txt"));
  o = Run("--fabric " + dir_.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("no forwarding tables"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace fabricscope::fabric
