// `fabricscope check --fabric DIR`: a run below its expectation pointed at the link or switch
// that explains it, on the fabrics captured from the ibsim test bed (tests/fabric/data).
// The runs are nccl-tests logs of 16 hosts h1..h16, one GPU each, judged against a generic
// 4X QDR platform (1 NIC of 40 Gb/s a node): a healthy ring reaches about 4 GB/s.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "check/fixtures.h"
#include "common/in_process.h"
#include "fabricscope/check.h"
#include "fabricscope/fabric.h"
#include "fabricscope/parse.h"

namespace fabricscope {
namespace {

using check_testing::CurveRows;
using check_testing::LogSpec;
using check_testing::NcclTestsLog;

std::string Data(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/fabric/data/" + name;
}

std::vector<std::string> Hosts(int first, int last, const std::string& prefix = "h") {
  std::vector<std::string> out;
  for (int i = first; i <= last; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// A run of `collective` over `hosts` whose large sizes reach `busbw` GB/s.
std::string Log(const std::vector<std::string>& hosts, double busbw,
                const std::string& collective = "all_reduce") {
  LogSpec spec;
  spec.collective = collective;
  spec.nodes = static_cast<int>(hosts.size());
  spec.gpus_per_node = 1;
  spec.hosts = hosts;
  spec.rows = CurveRows(collective, spec.nodes, busbw, 30, size_t{8} << 30);
  return NcclTestsLog(spec);
}

PlatformChoice Qdr() {
  GenericPlatformOptions o;
  o.gpus_per_node = 1;
  o.intra_node_busbw = 100;
  o.nics = 1;
  o.nic_rate_gbps = 40;
  PlatformChoice choice;
  choice.platform = GenericPlatform(o);
  choice.origin = "command line";
  return choice;
}

fabric::FabricReport FabricOf(const std::string& name) {
  fabric::RunOptions options;
  options.from = Data(name);
  return fabric::RunFabric(options);
}

// The `fabric` rule's finding of the check's only test.
Finding FabricFinding(const std::string& log, const fabric::FabricReport& report,
                      std::vector<std::string> fabric_hosts = {}) {
  CheckOptions options;
  options.fabric = &report;
  options.fabric_hosts = std::move(fabric_hosts);
  const CheckReport r = Check(ParseResults(log, "job.log").runs, Qdr(), options);
  EXPECT_EQ(r.tests.size(), 1u);
  if (r.tests.empty()) return {};
  const auto& f = r.tests.front().findings;
  const auto it =
      std::find_if(f.begin(), f.end(), [](const Finding& x) { return x.source == "fabric"; });
  EXPECT_NE(it, f.end());
  return it == f.end() ? Finding{} : *it;
}

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(CheckOnFabric, SlowRunIsPointedAtTheOneXLinkThatLimitsIt) {
  // faults: leaf1[5] at 1X, leaf2[5] at SDR, leaf3[6] unplugged, errors on leaf1[7]; the ring
  // over h1..h16 is limited to 1/4 by the 1X link. The run reaches 1.0 GB/s of 4.5 expected.
  const auto report = FabricOf("faults");
  const Finding f = FabricFinding(Log(Hosts(1, 16), 1.0), report);
  EXPECT_EQ(f.severity, Severity::kCritical) << f.what;
  EXPECT_EQ(f.where, "leaf1[5] <-> spine1[1]") << f.what;
  EXPECT_TRUE(Has(f.what, "the fabric explains it (link-width, CRITICAL): runs at 1X QDR"))
      << f.what;
  EXPECT_TRUE(Has(f.fix, "reseat or replace the cable")) << f.fix;
  EXPECT_TRUE(Has(f.what, "runs at 1X QDR")) << f.what;
  EXPECT_TRUE(Has(f.what, "limits it to 1/4.00")) << f.what;
  EXPECT_TRUE(Has(f.what, "predicts 1.00 GB/s as routed and 4.00 GB/s balanced")) << f.what;
  EXPECT_TRUE(Has(f.what, "Also on this job's path:")) << f.what;
  EXPECT_DOUBLE_EQ(f.figures.at("fabric_limit_factor"), 4.0);
  EXPECT_DOUBLE_EQ(f.figures.at("fabric_routed_fraction"), 0.25);
  EXPECT_NEAR(f.figures.at("fabric_expected_busbw"), 4.5 * 0.25, 1e-9);
  // The tools' own lines for both ends of the link.
  ASSERT_GE(f.evidence.size(), 2u);
  EXPECT_TRUE(Has(f.evidence[0], "iblinkinfo.txt:")) << f.evidence[0];
}

TEST(CheckOnFabric, HealthyFabricDoesNotExplainASlowRun) {
  const auto report = FabricOf("healthy");
  const Finding f = FabricFinding(Log(Hosts(1, 16), 1.0), report);
  EXPECT_EQ(f.severity, Severity::kOk) << f.what;
  EXPECT_TRUE(f.where.empty());
  EXPECT_TRUE(Has(f.what, "the fabric does not explain it")) << f.what;
  EXPECT_TRUE(Has(f.what, "fabricscope doctor")) << f.what;
  EXPECT_DOUBLE_EQ(f.figures.at("fabric_limit_factor"), 1.0);
}

TEST(CheckOnFabric, HealthyRunOnAFaultyFabricPassesAndListsWhatItsPathCrosses) {
  const auto report = FabricOf("faults");
  const Finding f = FabricFinding(Log(Hosts(1, 16), 3.9), report);
  EXPECT_EQ(f.severity, Severity::kOk) << f.what;
  EXPECT_TRUE(Has(f.what, "on its path without limiting it: link-width leaf1[5]")) << f.what;
}

TEST(CheckOnFabric, OnlyTheFindingsOnTheJobsRoutesCount) {
  // h9..h16 hang from leaf3 and leaf4: the 1X link of leaf1 and the SDR link of leaf2 are off
  // their routes. leaf3's unplugged uplink is on them, but a ring over two leaves crosses
  // once each way: 3 uplinks carry it at full rate, so it does not explain a slow run.
  const auto report = FabricOf("faults");
  const Finding f = FabricFinding(Log(Hosts(9, 16), 1.5), report);
  EXPECT_EQ(f.severity, Severity::kOk) << f.what;
  EXPECT_TRUE(Has(f.what, "the fabric does not explain it")) << f.what;
  EXPECT_TRUE(Has(f.what, "on its path without limiting it: missing-uplink leaf3")) << f.what;
  EXPECT_TRUE(Has(f.what, "limits it to 1/1.00")) << f.what;
  EXPECT_FALSE(Has(f.what, "link-width")) << f.what;
  EXPECT_FALSE(Has(f.what, "link-speed")) << f.what;
  EXPECT_FALSE(Has(f.what, "error-counter")) << f.what;
}

TEST(CheckOnFabric, ErrorsOnThePathMayExplainWhatTheRoutesDoNot) {
  // The routed model cannot show retransmissions: error counters on a port the ring crosses
  // are named when the routes alone do not limit it. (The healthy fabric with one counter
  // finding added on leaf1's first uplink, which the ring over h1..h16 crosses.)
  auto report = FabricOf("healthy");
  report.findings.push_back({.severity = Severity::kWarn,
                             .source = "error-counter",
                             .what = "error counters set: SymbolErrorCounter=5000",
                             .where = "leaf1[5]",
                             .evidence = {"ibqueryerrors.txt:3: [SymbolErrorCounter == 5000]"},
                             .fix = "reseat or replace the cable"});
  const Finding f = FabricFinding(Log(Hosts(1, 16), 1.0), report);
  EXPECT_EQ(f.severity, Severity::kCritical) << f.what;
  EXPECT_EQ(f.where, "leaf1[5]");
  EXPECT_TRUE(Has(f.what,
                  "the fabric may explain it, the routes do not limit it (error-counter, WARN): "
                  "error counters set: SymbolErrorCounter=5000"))
      << f.what;
  EXPECT_EQ(f.fix, "reseat or replace the cable");
  EXPECT_EQ(f.evidence,
            (std::vector<std::string>{"ibqueryerrors.txt:3: [SymbolErrorCounter == 5000]"}));
}

TEST(CheckOnFabric, UnusedSpineExplainsASlowAllToAll) {
  // dor leaves spine2 unused: the all-to-all over every host is limited to 1/1.60.
  const auto report = FabricOf("dor-engine");
  const Finding f = FabricFinding(Log(Hosts(1, 16), 2.0, "alltoall"), report);
  ASSERT_TRUE(f.severity == Severity::kWarn || f.severity == Severity::kCritical) << f.what;
  EXPECT_EQ(f.where, "spine2") << f.what;
  EXPECT_TRUE(Has(f.what, "(unused-spine, CRITICAL)")) << f.what;
  EXPECT_DOUBLE_EQ(f.figures.at("fabric_limit_factor"), 1.6);
}

TEST(CheckOnFabric, DeadSwitchOnThePathIsListedBesideTheLinkThatLimits) {
  // dead-switch: the faults of `faults` and spine2 dead; the 1X link still sets the pace.
  const auto report = FabricOf("dead-switch");
  const Finding f = FabricFinding(Log(Hosts(1, 16), 1.0), report);
  EXPECT_EQ(f.severity, Severity::kCritical) << f.what;
  EXPECT_EQ(f.where, "leaf1[5] <-> spine1[1]") << f.what;
  EXPECT_TRUE(Has(f.what, "Also on this job's path: ")) << f.what;
  EXPECT_TRUE(Has(f.what, "dead-node LID 3")) << f.what;
}

TEST(CheckOnFabric, FabricHostsMapTheRunsHostNames) {
  // The run names its hosts node0..node15; --fabric-hosts gives their HCAs in rank order.
  const auto report = FabricOf("faults");
  Finding f = FabricFinding(Log(Hosts(0, 15, "node"), 1.0), report, Hosts(1, 16));
  EXPECT_EQ(f.where, "leaf1[5] <-> spine1[1]") << f.what;
  EXPECT_TRUE(Has(f.what, "16 hosts (h1, h2, ... h16: the run's host names)")) << f.what;
  // Without the mapping the whole fabric is judged, and the reason says which names missed.
  f = FabricFinding(Log(Hosts(0, 15, "node"), 1.0), report);
  EXPECT_TRUE(Has(f.what, "every HCA of the fabric")) << f.what;
  EXPECT_TRUE(Has(f.what, "are not HCAs of the fabric")) << f.what;
}

TEST(CheckOnFabric, HcasOfHostsMatchesDescriptionsThatStartWithTheHostName) {
  fabric::Fabric fabric;
  fabric.nodes.push_back({fabric::NodeKind::kHca, "0x1", "node01 mlx5_0", 5, {}});
  fabric.nodes.push_back({fabric::NodeKind::kHca, "0x2", "node02", 6, {}});
  std::vector<std::string> missing;
  EXPECT_EQ(fabric::HcasOfHosts(fabric, {"node02", "node01", "node03"}, &missing),
            (std::vector<std::string>{"node02", "node01 mlx5_0"}));
  EXPECT_EQ(missing, (std::vector<std::string>{"node03"}));
}

class CheckFabricCli : public test::InProcessTest {
 protected:
  CheckFabricCli() : InProcessTest("check") {}
  const std::string qdr =
      "--gpus-per-node 1 --intra-node-busbw 100 --nics 1 --nic-rate 40 --transport IB ";
};

TEST_F(CheckFabricCli, TextAndJsonNameTheLinkWithItsEvidence) {
  const std::string log = Write("job.log", Log(Hosts(1, 16), 1.0));
  auto o = Here(qdr + "--fabric " + Data("faults") + " " + log);
  EXPECT_EQ(o.exit_code, 1) << o.err;
  // The finding writer's line (finding.h): severity, the rule, where: what; the evidence under it.
  EXPECT_TRUE(Has(o.out,
                  "\n  CRITICAL      fabric          leaf1[5] <-> spine1[1]: the fabric explains "
                  "it (link-width, CRITICAL): runs at 1X QDR"))
      << o.out;
  const std::string under(2 + 14 + 14 + 2, ' ');
  EXPECT_TRUE(Has(o.out, "\n" + under + "evidence: " + Data("faults") + "/iblinkinfo.txt:"))
      << o.out;
  EXPECT_TRUE(Has(o.out, "\n" + under + "fix: reseat or replace the cable")) << o.out;
  EXPECT_TRUE(Has(o.out, "\nCRITICAL: 1 test, 1 CRITICAL\n")) << o.out;
  o = Here(qdr + "--fabric " + Data("faults") + " --format json " + log);
  EXPECT_EQ(o.exit_code, 1) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  const auto& findings = json["tests"][0]["findings"];
  const auto it = std::find_if(findings.begin(), findings.end(),
                               [](const nlohmann::json& f) { return f["source"] == "fabric"; });
  ASSERT_NE(it, findings.end()) << o.out;
  EXPECT_EQ((*it)["severity"], "CRITICAL");
  EXPECT_EQ((*it)["where"], "leaf1[5] <-> spine1[1]");
  EXPECT_TRUE(Has((*it)["fix"], "reseat or replace the cable")) << (*it)["fix"];
  EXPECT_EQ((*it)["figures"]["fabric_limit_factor"], 4.0);
  EXPECT_GE((*it)["evidence"].size(), 2u);
  // Without --fabric the rule stands aside.
  o = Here(qdr + log);
  EXPECT_FALSE(Has(o.out, " fabric ")) << o.out;
}

TEST_F(CheckFabricCli, BadFabricInputIsAClearUsageError) {
  const std::string log = Write("job.log", Log(Hosts(1, 16), 1.0));
  ExpectRefusedHere(qdr + "--fabric /nonexistent/dir " + log, 2,
                    "--fabric: the fabric directory '/nonexistent/dir' is not a directory");
  const auto empty = dir_ / "empty";
  std::filesystem::create_directories(empty);
  ExpectRefusedHere(qdr + "--fabric " + empty.string() + " " + log, 2,
                    "holds neither iblinkinfo.txt nor ibnetdiscover.txt");
  ExpectRefusedHere(qdr + "--fabric-hosts h1,h2 " + log, 2, "give --fabric DIR too");
  ExpectRefusedHere(qdr + "--fabric " + Data("healthy") + " --fabric-hosts h1,h99 " + log, 2,
                    "--fabric-hosts names 'h99', which is not an HCA");
}

}  // namespace
}  // namespace fabricscope
