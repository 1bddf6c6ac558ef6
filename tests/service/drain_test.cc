// --drain and --resume: which findings blame a node, the reason, drain and resume over a
// NodeService, and the binary end to end with test doubles of scontrol and kubectl on PATH
// (tests/service/fake-scontrol keeps node states in a file; tests/service/fake-kubectl logs
// its argv).
#include "fabricscope/drain.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/binary_test.h"
#include "fabricscope/error.h"
#include "fabricscope/tool_run.h"
#include "service/services.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;

Finding NodeFinding(const std::string& host, const std::string& source = "ib_ports",
                    const std::string& element = "node") {
  return {.severity = Severity::kCritical,
          .source = source,
          .what = "mlx5_0 port 1 is DOWN",
          .where = "mlx5_0/1",
          .element = element,
          .nodes = {host}};
}

Finding LinkFinding(const std::string& a, const std::string& b) {
  return {.severity = Severity::kCritical,
          .source = "slow-link",
          .what = "rank 0 -> rank 1 runs at 30% of the others",
          .where = "rank 0 -> rank 1",
          .element = "link",
          .nodes = {a, b}};
}

// An in-memory scheduler: node -> state, and every call made.
class MemoryService : public NodeService {
 public:
  std::map<std::string, NodeState> nodes;
  std::vector<std::string> calls;

  NodeState State(const std::string& node) override {
    calls.push_back("state " + node);
    return nodes[node];
  }
  ServiceCall Drain(const std::string& node, const std::string& source,
                    const std::string& reason) override {
    calls.push_back("drain " + node + " " + source);
    nodes[node] = {.drained = true, .state = "DRAIN", .reason = reason};
    return {.command = "drain " + node, .ran = true, .error = ""};
  }
  ServiceCall Resume(const std::string& node) override {
    calls.push_back("resume " + node);
    nodes[node] = {.drained = false, .state = "IDLE"};
    return {.command = "resume " + node, .ran = true, .error = ""};
  }
};

TEST(DrainTest, OnlyDecidedCriticalFindingsOfANodeOrNicBlameANode) {
  EXPECT_TRUE(BlamesNode(NodeFinding("n1")));
  EXPECT_TRUE(BlamesNode(NodeFinding("n1", "mtu", "nic")));
  Finding warn = NodeFinding("n1");
  warn.severity = Severity::kWarn;
  EXPECT_FALSE(BlamesNode(warn));
  Finding undecided = NodeFinding("n1");
  undecided.decided = false;
  EXPECT_FALSE(BlamesNode(undecided));
  EXPECT_FALSE(BlamesNode(LinkFinding("n1", "n2")));
  EXPECT_FALSE(BlamesNode(NodeFinding("n1", "bandwidth", "nodes")));
  EXPECT_FALSE(BlamesNode(NodeFinding("n1", "uplink", "switch")));
  EXPECT_FALSE(BlamesNode(NodeFinding("", "nccl_env")));
}

TEST(DrainTest, NodeNameIsTheShortHostName) {
  EXPECT_EQ(NodeNameOf("n2.cluster.example.com"), "n2");
  EXPECT_EQ(NodeNameOf("gpu-a17"), "gpu-a17");
}

TEST(DrainTest, ReasonIsOneLineWithoutDoubleQuotesAndShort) {
  Finding f = NodeFinding("n1", "nccl_env");
  f.what = "NCCL_IB_HCA=\"mlx9\" selects\nno RDMA device\tof this node " + std::string(300, 'x');
  const std::string reason = DrainReason("doctor", f);
  EXPECT_TRUE(
      reason.starts_with("fabricscope doctor: nccl_env: mlx5_0/1: NCCL_IB_HCA='mlx9' "
                         "selects no RDMA device of this node x"))
      << reason;
  EXPECT_LE(reason.size(), kMaxDrainReason);
  EXPECT_TRUE(reason.ends_with("...")) << reason;
  EXPECT_EQ(reason.find('\n'), std::string::npos);
  EXPECT_EQ(reason.find('"'), std::string::npos);
  Finding nowhere = NodeFinding("n1");
  nowhere.where = "";
  EXPECT_EQ(DrainReason("check", nowhere), "fabricscope check: ib_ports: mlx5_0 port 1 is DOWN");
}

TEST(DrainTest, DrainsEachBlamedNodeOnceWithItsFindingsJoined) {
  MemoryService service;
  const std::vector<Finding> findings = {NodeFinding("n2.example"), NodeFinding("n2", "mtu", "nic"),
                                         NodeFinding("n3", "nccl_env")};
  const auto records = ApplyService(service, {.command = "doctor", .findings = findings});
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].node, "n2");
  EXPECT_EQ(records[0].action, ServiceAction::kDrained);
  EXPECT_EQ(records[0].reason,
            "fabricscope doctor: ib_ports: mlx5_0/1: mlx5_0 port 1 is DOWN; mtu: mlx5_0 port 1 "
            "is DOWN");
  EXPECT_EQ(records[1].node, "n3");
  EXPECT_EQ(ServiceRecordLine(records[0]), "fabricscope: drained node n2: " + records[0].reason);
  EXPECT_EQ(service.calls, (std::vector<std::string>{"state n2", "drain n2 ib_ports", "state n3",
                                                     "drain n3 nccl_env"}));
}

TEST(DrainTest, AnOperatorsDrainIsLeftAlone) {
  MemoryService service;
  service.nodes["n2"] = {.drained = true, .state = "IDLE+DRAIN", .reason = "operator: bad fan"};
  const auto records =
      ApplyService(service, {.command = "doctor", .findings = {NodeFinding("n2")}});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].action, ServiceAction::kLeftAlone);
  EXPECT_EQ(ServiceRecordLine(records[0]),
            "fabricscope: left alone node n2: drained by someone else: operator: bad fan");
  EXPECT_EQ(service.nodes["n2"].reason, "operator: bad fan");
}

TEST(DrainTest, LinksSwitchesAndNodeSetsAreNeverDrained) {
  MemoryService service;
  Finding set = NodeFinding("n1", "bandwidth", "nodes");
  set.nodes = {"n1", "n2"};
  const auto records =
      ApplyService(service, {.command = "watch", .findings = {LinkFinding("n1", "n2"), set}});
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(ServiceRecordLine(records[0]),
            "fabricscope: not drained: link n1<->n2 is not a node (slow-link)");
  EXPECT_EQ(ServiceRecordLine(records[1]),
            "fabricscope: not drained: nodes n1, n2 are a set of nodes, not one (bandwidth)");
  EXPECT_TRUE(service.calls.empty());
}

TEST(DrainTest, ResumeReturnsOnlyOurOwnDrainOfTheSameCommandOnNodesThatPassed) {
  MemoryService service;
  service.nodes["n1"] = {.drained = true, .state = "DRAIN", .reason = "fabricscope doctor: x"};
  service.nodes["n2"] = {.drained = true, .state = "DRAIN", .reason = "fabricscope check: y"};
  service.nodes["n3"] = {.drained = true, .state = "DRAIN", .reason = "operator: bad fan"};
  service.nodes["n4"] = {.drained = true, .state = "DRAIN", .reason = "fabricscope doctor: z"};
  service.nodes["n5"] = {.drained = false, .state = "IDLE"};
  // n4 fails again: it stays drained (and is drained anew, as the findings say).
  const auto records = ApplyService(service, {.command = "doctor",
                                              .findings = {NodeFinding("n4")},
                                              .covered_hosts = {"n1", "n2", "n3", "n4", "n5"},
                                              .drain = false,
                                              .resume = true});
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].node, "n1");
  EXPECT_EQ(records[0].action, ServiceAction::kResumed);
  EXPECT_EQ(records[1].action, ServiceAction::kLeftAlone);
  EXPECT_EQ(ServiceRecordLine(records[1]),
            "fabricscope: left alone node n2: drained by another fabricscope command: "
            "fabricscope check: y");
  EXPECT_EQ(ServiceRecordLine(records[2]),
            "fabricscope: left alone node n3: drained by someone else: operator: bad fan");
  EXPECT_FALSE(service.nodes["n1"].drained);
  EXPECT_TRUE(service.nodes["n2"].drained);
  EXPECT_TRUE(service.nodes["n3"].drained);
  EXPECT_TRUE(service.nodes["n4"].drained);
}

TEST(DrainTest, ParsesScontrolShowNode) {
  const NodeState s = service::ParseSlurmNode(
      "NodeName=fss-d-n2 Arch=x86_64 CoresPerSocket=2 State=IDLE+DRAIN ThreadsPerCore=1 "
      "Partitions=debug Reason=fabricscope doctor: nccl_env: NCCL_P2P_DISABLE=1 turns off GPU "
      "peer-to-peer [root@2026-12-02T01:02:03]\n");
  EXPECT_TRUE(s.drained);
  EXPECT_EQ(s.state, "IDLE+DRAIN");
  EXPECT_EQ(s.reason,
            "fabricscope doctor: nccl_env: NCCL_P2P_DISABLE=1 turns off GPU peer-to-peer");
  const NodeState idle = service::ParseSlurmNode("NodeName=n1 State=IDLE ThreadsPerCore=1");
  EXPECT_FALSE(idle.drained);
  EXPECT_EQ(idle.reason, "");
  EXPECT_TRUE(service::ParseSlurmNode("NodeName=n1 State=DOWN+NOT_RESPONDING").drained);
  EXPECT_TRUE(service::ParseSlurmNode("NodeName=n1 State=MIXED+DRAINING").drained);
}

TEST(DrainTest, CommandLinesPasteIntoAShell) {
  EXPECT_EQ(CommandLineOf({"scontrol", "update", "NodeName=n2", "State=DRAIN",
                           "Reason=fabricscope doctor: a 'b' $c"}),
            "scontrol update NodeName=n2 State=DRAIN Reason=\"fabricscope doctor: a 'b' \\$c\"");
  EXPECT_EQ(CommandLineOf({"kubectl", "-p", "{\"a\":1}"}), "kubectl -p '{\"a\":1}'");
}

TEST(DrainTest, UnknownModeNamesTheServices) {
  EXPECT_THROW(FindNodeService("lsf"), UsageError);
  EXPECT_EQ(FindNodeService("dry-run").tool, "");
  EXPECT_EQ(FindNodeService("slurm").tool, "scontrol");
}

// The binary with the test doubles on PATH: a node tree whose host name is n2.cluster.example
// (doctor reads it from etc/hostname under --root) and NCCL_P2P_DISABLE=1, which doctor's
// nccl_env check calls CRITICAL on that node.
class DrainCliTest : public test::BinaryTest {
 protected:
  void SetUp() override {
    BinaryTest::SetUp();
    root_ = dir() / "root";
    fs::create_directories(root_ / "etc");
    std::ofstream(root_ / "etc" / "hostname") << "n2.cluster.example\n";
    bin_ = dir() / "bin";
    fs::create_directories(bin_);
    const fs::path source = fs::path(FABRICSCOPE_SOURCE_DIR) / "tests" / "service";
    fs::create_symlink(source / "fake-scontrol", bin_ / "scontrol");
    fs::create_symlink(source / "fake-kubectl", bin_ / "kubectl");
    path_ = bin_.string() + ":/usr/bin:/bin";
    state_ = dir() / "nodes";
    log_ = dir() / "calls";
  }

  std::string Vars(const std::string& extra = "") const {
    return "env -u NCCL_P2P_DISABLE PATH=" + path_ + " FAKE_SCONTROL_STATE=" + state_.string() +
           " FAKE_SCONTROL_LOG=" + log_.string() + " FAKE_KUBECTL_LOG=" + log_.string() + " " +
           extra;
  }
  test::Outcome Doctor(const std::string& flags, const std::string& extra = "") {
    return RunProgram(FABRICSCOPE_BINARY,
                      "doctor --root " + root_.string() + " --check nccl_env " + flags,
                      Vars(extra));
  }
  void SetNode(const std::string& line) { std::ofstream(state_, std::ios::app) << line << "\n"; }
  std::string Calls() const { return test::Slurp(log_); }
  fs::path dir() const { return dir_; }

  fs::path root_, bin_, state_, log_;
  std::string path_;  // PATH: the test doubles first
};

TEST_F(DrainCliTest, DoctorDrainsTheBlamedNode) {
  const auto o = Doctor("--drain", "NCCL_P2P_DISABLE=1");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.out.find("CRITICAL"), std::string::npos) << o.out;  // the report, as ever
  EXPECT_NE(o.err.find("fabricscope: drained node n2: fabricscope doctor: nccl_env: "
                       "NCCL_P2P_DISABLE=1 turns off GPU peer-to-peer"),
            std::string::npos)
      << o.err;
  EXPECT_NE(Calls().find("update NodeName=n2 State=DRAIN Reason=fabricscope doctor: nccl_env: "),
            std::string::npos)
      << Calls();
}

TEST_F(DrainCliTest, DoctorLeavesAnOperatorsDrainAlone) {
  SetNode("n2|IDLE+DRAIN|operator: bad fan");
  const auto o = Doctor("--drain", "NCCL_P2P_DISABLE=1");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.err.find("fabricscope: left alone node n2: drained by someone else: operator: bad "
                       "fan"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(Calls().find("update"), std::string::npos) << Calls();
}

TEST_F(DrainCliTest, ResumeReturnsOurDrainOnlyForTheSameCommand) {
  SetNode("n2|IDLE+DRAIN|fabricscope check: bandwidth: slow");
  auto o = Doctor("--resume");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("left alone node n2: drained by another fabricscope command"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(Calls().find("update"), std::string::npos) << Calls();

  SetNode("n2|IDLE+DRAIN|fabricscope doctor: nccl_env: NCCL_P2P_DISABLE=1");
  o = Doctor("--resume");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("fabricscope: resumed node n2: fabricscope doctor passed on it"),
            std::string::npos)
      << o.err;
  EXPECT_NE(Calls().find("update NodeName=n2 State=RESUME"), std::string::npos) << Calls();

  // Failing again: not resumed.
  SetNode("n2|IDLE+DRAIN|fabricscope doctor: nccl_env: NCCL_P2P_DISABLE=1");
  o = Doctor("--resume", "NCCL_P2P_DISABLE=1");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_EQ(o.err.find("resumed"), std::string::npos) << o.err;
}

TEST_F(DrainCliTest, DryRunPrintsTheLinesAndChangesNothing) {
  // No scontrol on PATH at all (not even a real one): the state is taken as not drained.
  fs::remove(bin_ / "scontrol");
  path_ = bin_.string();
  const auto o = Doctor("--drain=dry-run", "NCCL_P2P_DISABLE=1");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.err.find("fabricscope: dry run: would drain node n2: scontrol update NodeName=n2 "
                       "State=DRAIN Reason=\"fabricscope doctor: nccl_env: NCCL_P2P_DISABLE=1"),
            std::string::npos)
      << o.err;
  EXPECT_FALSE(fs::exists(state_));
  EXPECT_FALSE(fs::exists(log_));
}

TEST_F(DrainCliTest, NoScontrolIsAUsageErrorBeforeAnythingRuns) {
  fs::remove(bin_ / "scontrol");
  path_ = bin_.string();
  const auto o = Doctor("--drain", "NCCL_P2P_DISABLE=1");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("--drain: scontrol not found: --drain acts on Slurm nodes (give "
                       "--drain=dry-run to see the lines, --drain=kubernetes for a Kubernetes "
                       "node)"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(o.out, "");
}

TEST_F(DrainCliTest, FailingScontrolIsAnErrorAfterTheReport) {
  // Resuming on a clean run: exit 0 would have been the answer, the failure makes it 3.
  SetNode("n2|IDLE+DRAIN|fabricscope doctor: nccl_env: NCCL_P2P_DISABLE=1");
  auto o = Doctor("--resume", "FAKE_SCONTROL_FAIL=1");
  EXPECT_EQ(o.exit_code, 3) << o.err;
  EXPECT_NE(o.out.find("nccl_env"), std::string::npos) << o.out;  // the report is kept
  EXPECT_NE(o.err.find("fabricscope: error: node n2: 'scontrol update NodeName=n2 "
                       "State=RESUME' exited with 1: slurm_update error: Invalid user id"),
            std::string::npos)
      << o.err;
  // A run that failed already keeps its own exit code, and still says why the drain failed.
  o = Doctor("--drain", "NCCL_P2P_DISABLE=1 FAKE_SCONTROL_FAIL=1");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.out.find("CRITICAL"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("fabricscope: error: node n2: 'scontrol update NodeName=n2 State=DRAIN"),
            std::string::npos)
      << o.err;
}

TEST_F(DrainCliTest, UnknownModeIsAUsageError) {
  const auto o = Doctor("--drain=lsf");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("unknown --drain mode 'lsf'"), std::string::npos) << o.err;
}

TEST_F(DrainCliTest, KubernetesTaintsAndSetsACondition) {
  auto o = Doctor("--drain=kubernetes", "NCCL_P2P_DISABLE=1");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.err.find("fabricscope: drained node n2: fabricscope doctor: nccl_env:"),
            std::string::npos)
      << o.err;
  const std::string calls = Calls();
  EXPECT_NE(calls.find("get\nnode\nn2\n-o\n"), std::string::npos) << calls;
  EXPECT_NE(
      calls.find("taint\nnodes\nn2\nfabricscope.io/fault=nccl_env:NoSchedule\n--overwrite\n--\n"),
      std::string::npos)
      << calls;
  EXPECT_NE(calls.find("patch\nnode\nn2\n--subresource=status\n--type=strategic\n-p\n"
                       "{\"status\":{\"conditions\":[{\"type\":\"FabricscopeFault\",\"status\":"
                       "\"True\",\"reason\":\"NcclEnv\",\"message\":\"fabricscope doctor: "
                       "nccl_env:"),
            std::string::npos)
      << calls;

  fs::remove(log_);
  o = Doctor("--drain=kubernetes --resume",
             "FAKE_KUBECTL_GET='\\tTrue\\tfabricscope doctor: nccl_env: x'");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("fabricscope: resumed node n2"), std::string::npos) << o.err;
  const std::string resumed = Calls();
  EXPECT_NE(resumed.find("taint\nnodes\nn2\nfabricscope.io/fault-\n--\n"), std::string::npos)
      << resumed;
  EXPECT_NE(resumed.find("\"status\":\"False\""), std::string::npos) << resumed;
}

}  // namespace
}  // namespace fabricscope

namespace fabricscope {
namespace {

// check --drain: a one-host test below the platform's band blames that host (it ran there
// alone), a multi-host one blames the node set, which is never drained.
class CheckDrainCliTest : public DrainCliTest {
 protected:
  // A real run's JSON with its rows at `busbw` GB/s, on the hosts `hosts` (one per rank).
  std::string Results(double busbw, const std::vector<std::string>& hosts) {
    const std::string base = (dir() / "base.json").string();
    if (!fs::exists(base)) {
      const auto o = Run("run -t 2 -b 1M -e 2M -f 2 --backend gloo -n 2 -J " + base);
      EXPECT_EQ(o.exit_code, 0) << o.err;
    }
    nlohmann::json j = nlohmann::json::parse(test::Slurp(base));
    for (size_t i = 0; i < j["config"]["devices"].size(); ++i) {
      j["config"]["devices"][i]["hostname"] = hosts[i % hosts.size()];
    }
    for (auto& row : j["results"]) {
      for (const char* placement : {"out_of_place", "in_place"}) {
        row[placement]["bus_bw"] = busbw;
        row[placement]["alg_bw"] = busbw;
      }
    }
    return Write("run-" + std::to_string(hosts.size()) + ".json", j.dump());
  }
  test::Outcome Check(const std::string& file) {
    return RunProgram(FABRICSCOPE_BINARY,
                      "check --gpus-per-node 2 --intra-node-busbw 100 --nics 1 --nic-rate 100 "
                      "--transport TCP --judge-from 1M --drain " +
                          file,
                      Vars());
  }
};

TEST_F(CheckDrainCliTest, AOneNodeRunBelowItsBandDrainsThatNode) {
  const auto o = Check(Results(10, {"n2.cluster.example"}));
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.out.find("CRITICAL"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("fabricscope: drained node n2: fabricscope check: bandwidth: "),
            std::string::npos)
      << o.err;
  EXPECT_NE(Calls().find("update NodeName=n2 State=DRAIN Reason=fabricscope check: bandwidth"),
            std::string::npos)
      << Calls();
}

TEST_F(CheckDrainCliTest, ASlowMultiNodeRunDrainsNobodyAndSaysWhy) {
  const auto o = Check(Results(0.1, {"n2", "n3"}));
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.err.find("not drained: nodes n2, n3 are a set of nodes, not one"), std::string::npos)
      << o.err;
  EXPECT_EQ(Calls().find("update"), std::string::npos) << Calls();
}

}  // namespace
}  // namespace fabricscope
