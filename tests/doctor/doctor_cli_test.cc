// `fabricscope doctor` as a user runs it: the real binary on fixture trees and on this
// machine, every output format and exit code, every bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "doctor/fixture.h"
#include "doctor/process.h"

namespace fabricscope::doctor::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class DoctorCliTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TestDir("cli"); }
  void TearDown() override {
    tree_.reset();
    fs::remove_all(dir_);
  }
  std::string Tree(const NodeSpec& spec) {
    tree_.reset();
    tree_ = std::make_unique<NodeTree>(dir_ / "node", spec);
    return tree_->root().string();
  }
  Outcome Doctor(std::vector<std::string> args,
                 const std::map<std::string, std::string>& env = {}) {
    args.insert(args.begin(), "doctor");
    return RunFabricscope(args, env, dir_);
  }
  // A bad input: exit 2, a message naming the problem, nothing on stdout.
  void ExpectRefused(const std::vector<std::string>& args, const std::string& needle) {
    const Outcome o = Doctor(args);
    EXPECT_EQ(o.exit_code, 2) << o.err;
    EXPECT_NE(o.err.find("error"), std::string::npos) << o.err;
    EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  // A check's name as the source column of the text form prints it: as wide as the longest
  // check name (gpu_nic_affinity), then two spaces.
  static std::string SourceColumn(const std::string& check) {
    return check + std::string(std::string_view("gpu_nic_affinity").size() + 2 - check.size(), ' ');
  }
  fs::path dir_;
  std::unique_ptr<NodeTree> tree_;
};

TEST_F(DoctorCliTest, HealthyNodeExitsZeroWithATable) {
  const Outcome o = Doctor({"--root", Tree({})});
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(o.err.empty()) << o.err;
  EXPECT_NE(o.out.find("# fabricscope doctor"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("on gpu-node (root " + tree_->root().string() + ")"), std::string::npos)
      << o.out;
  // One node: a line for every check, fine or not, in the findings' text form.
  for (const char* check : {"pci", "numa", "gpu_nic_affinity", "topo_file", "gpudirect", "ib_ports",
                            "mtu", "shm", "memlock", "nccl_env", "nccl_log"}) {
    EXPECT_NE(o.out.find(" " + SourceColumn(check)), std::string::npos) << check << o.out;
  }
  EXPECT_NE(o.out.find("\nOK            pci               8 GPUs"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\nINFO          topo_file         no --topo-file given"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("# 11 checks: 8 OK, 3 INFO, 0 WARN, 0 CRITICAL: OK"), std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("evidence:"), std::string::npos);  // only problems show evidence
  const Outcome verbose = Doctor({"--root", tree_->root().string(), "-v"});
  EXPECT_NE(verbose.out.find("evidence: GPU0 -> mlx5_0 PXB"), std::string::npos) << verbose.out;
}

TEST_F(DoctorCliTest, CriticalFindingExitsOneWithEvidenceAndFix) {
  NodeSpec spec;
  spec.peermem = false;
  const Outcome o = Doctor({"--root", Tree(spec)});
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("\nCRITICAL      gpudirect         GPUDirect RDMA is inactive"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("evidence: " + tree_->root().string() + "/proc/modules: no nvidia_peermem"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("fix: modprobe nvidia_peermem"), std::string::npos) << o.out;
}

TEST_F(DoctorCliTest, WarningsExitZeroUnlessStrict) {
  NodeSpec spec;
  spec.roce = true;
  spec.mtu = 1500;
  const std::string root = Tree(spec);
  Outcome o = Doctor({"--root", root});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("\nWARN          mtu               8 RoCE interface(s) have MTU 1500"),
            std::string::npos)
      << o.out;
  o = Doctor({"--root", root, "--strict"});
  EXPECT_EQ(o.exit_code, 1) << o.out;
}

TEST_F(DoctorCliTest, JsonReport) {
  NodeSpec spec;
  spec.errors_on_port = 1;
  const std::string out_file = (dir_ / "report.json").string();
  const Outcome o = Doctor({"--root", Tree(spec), "--format", "json", "--output", out_file});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(o.out.empty());
  const json j = json::parse(Slurp(out_file));
  EXPECT_EQ(j["tool"], "fabricscope doctor");
  EXPECT_EQ(j["findings_version"], kFindingsVersion);
  EXPECT_EQ(j["status"], "WARN");
  ASSERT_EQ(j["nodes"].size(), 1u);
  const json& node = j["nodes"][0];
  EXPECT_EQ(node["host"], "gpu-node");
  EXPECT_EQ(node["checks"].size(), 11u);
  EXPECT_EQ(node["summary"]["WARN"], 1);
  EXPECT_EQ(node["summary"]["INFO"], 3);
  EXPECT_EQ(node["facts"]["ib.mlx5_1/1.rate"], "400 Gb/sec (4X NDR)");
  for (const json& c : node["checks"]) {
    if (c["name"] != "ib_ports") continue;
    EXPECT_EQ(c["status"], "WARN");
    bool counter = false;
    for (const json& f : c["findings"]) {
      if (f["severity"] == "WARN") {
        EXPECT_EQ(f["where"], "mlx5_1/1") << f.dump(2);
        EXPECT_EQ(f["what"], "has 2 non-zero error counter(s) since the driver loaded");
      }
      for (const json& e : f["evidence"]) {
        counter = counter || e.get<std::string>().find("symbol_error: 17") != std::string::npos;
      }
    }
    EXPECT_TRUE(counter) << c.dump(2);
  }
  EXPECT_TRUE(j["drift"].empty());
}

// The text report's findings are the findings' one text form, line for line, and every JSON
// finding has every key of the one JSON form.
TEST_F(DoctorCliTest, TextAndJsonAreTheSharedFindingForms) {
  NodeSpec spec;
  spec.peermem = false;
  spec.rate[5] = "200 Gb/sec (2X NDR)";
  spec.gpu0_link_width = 8;
  const std::string root = Tree(spec);
  const Outcome text = Doctor({"--root", root});
  const Outcome doc = Doctor({"--root", root, "--format", "json"});
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_EQ(doc.exit_code, 1) << doc.err;
  // In the order FindingJson writes them.
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(doc.out);
  EXPECT_EQ(j["findings_version"], kFindingsVersion);
  const std::vector<std::string> keys = {"severity", "source",  "what",    "where",   "evidence",
                                         "fix",      "figures", "decided", "element", "nodes"};
  FindingTextStyle style;
  style.source_width = std::string_view("gpu_nic_affinity").size();
  int problems = 0, placed = 0;
  for (const auto& c : j["nodes"][0]["checks"]) {
    for (const auto& f : c["findings"]) {
      std::vector<std::string> have;
      for (const auto& item : f.items()) have.push_back(item.key());
      EXPECT_EQ(have, keys) << f.dump(2);
      Finding finding;
      for (Severity s : {Severity::kOk, Severity::kInfo, Severity::kWarn, Severity::kCritical}) {
        if (SeverityName(s) == f["severity"].get<std::string>()) finding.severity = s;
      }
      finding.source = f["source"];
      finding.what = f["what"];
      finding.where = f["where"];
      finding.evidence = f["evidence"].get<std::vector<std::string>>();
      finding.fix = f["fix"];
      EXPECT_EQ(finding.source, c["name"]);
      EXPECT_TRUE(f["decided"].get<bool>());
      problems += finding.severity >= Severity::kWarn ? 1 : 0;
      placed += finding.where.empty() ? 0 : 1;
      const std::string lines = FindingsText({finding}, style);
      EXPECT_NE(text.out.find(lines), std::string::npos) << lines << "\n" << text.out;
    }
  }
  EXPECT_GE(problems, 3);  // gpudirect, the slow port, GPU0's narrow link
  EXPECT_GE(placed, 2);    // the port and the GPU say where they are
  EXPECT_NE(
      text.out.find("\nCRITICAL      ib_ports          mlx5_5/1: runs at 200 Gb/sec (2X NDR)"),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("\nWARN          pci               GPU0 (0000:1a:00.0): runs its PCIe "
                          "link at x8 of x16"),
            std::string::npos)
      << text.out;
}

TEST_F(DoctorCliTest, ThisMachineGivesASaneReport) {
  Outcome o = Doctor({"--format", "json"});
  EXPECT_TRUE(o.exit_code == 0 || o.exit_code == 1) << o.exit_code << o.err;
  EXPECT_TRUE(o.err.empty()) << o.err;
  const json j = json::parse(o.out);
  const json& node = j["nodes"][0];
  EXPECT_EQ(node["root"], "/");
  ASSERT_EQ(node["checks"].size(), 11u);
  std::map<std::string, std::string> status;
  for (const json& c : node["checks"]) {
    status[c["name"]] = c["status"];
    for (const json& f : c["findings"]) {
      EXPECT_FALSE(f["what"].get<std::string>().empty());
      EXPECT_EQ(f["source"], c["name"]);
    }
  }
  EXPECT_EQ(status["nccl_log"], "INFO");
  EXPECT_EQ(status["topo_file"], "INFO");
  if (node["facts"].value("gpus", "0") == "0") {
    EXPECT_EQ(status["gpu_nic_affinity"], "INFO");
    EXPECT_EQ(status["gpudirect"], "INFO");
  }
  if (!fs::exists("/sys/class/infiniband")) {
    EXPECT_EQ(status["ib_ports"], "INFO");
    EXPECT_EQ(status["mtu"], "INFO");
    EXPECT_EQ(status["memlock"], "INFO");
  }
  o = Doctor({"--root", "/"});
  EXPECT_TRUE(o.exit_code == 0 || o.exit_code == 1) << o.err;
  EXPECT_NE(o.out.find("# 11 checks:"), std::string::npos) << o.out;
}

TEST_F(DoctorCliTest, EnvironmentIsLintedUnlessNoEnv) {
  const std::string root = Tree({});
  Outcome o = Doctor({"--root", root}, {{"NCCL_IB_DISABLE", "1"}, {"NCCL_SOCKET_IFNAM", "eno1"}});
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(
      o.out.find("\nCRITICAL      nccl_env          NCCL_IB_DISABLE=1 turns InfiniBand/RoCE off"),
      std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("did you mean NCCL_SOCKET_IFNAME?"), std::string::npos) << o.out;
  o = Doctor({"--root", root, "--no-env"}, {{"NCCL_IB_DISABLE", "1"}});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("\nINFO          nccl_env          --no-env"), std::string::npos) << o.out;
}

TEST_F(DoctorCliTest, NcclLogAndTopoFile) {
  const std::string root = Tree({});
  const std::string log =
      WriteFile("nccl.log",
                "n1:1:1 [0] NCCL INFO NET/IB : No device found.\n"
                "n1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
                "n1:1:1 [0] NCCL INFO Using network Socket\n"
                "n1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0\n");
  Outcome o = Doctor({"--root", root, "--nccl-log", log, "--check", "nccl_log"});
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("fell back to TCP sockets"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("evidence: " + log + ":1: NET/IB : No device found."), std::string::npos)
      << o.out;
  const std::string topo = WriteFile("topo.txt",
                                     "\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\n"
                                     "GPU0\t X \tSYS\t0-7\t0\n"
                                     "NIC0\tSYS\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n");
  o = Doctor({"--root", root, "--topo-file", topo, "--check", "topo_file"});
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("GPU0: the closest NIC is across the socket (SYS)"), std::string::npos)
      << o.out;
}

TEST_F(DoctorCliTest, ListAndHelp) {
  Outcome o = Doctor({"--list"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("gpudirect         GPUDirect RDMA"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("nccl_log"), std::string::npos);
  o = Doctor({"--help"});
  EXPECT_EQ(o.exit_code, 0);
  for (const char* flag : {"--root", "--nccl-log", "--topo-file", "--env", "--no-env", "--check",
                           "--list", "--format", "--output", "--strict", "--verbose", "--launcher",
                           "--timeout", "Exit codes: 0 every finding"}) {
    EXPECT_NE(o.out.find(flag), std::string::npos) << flag << "\n" << o.out;
  }
  o = RunFabricscope({"--help"}, {}, dir_);
  EXPECT_NE(o.out.find("doctor"), std::string::npos) << o.out;
}

TEST_F(DoctorCliTest, BadInputsAreRefusedWithTheFix) {
  const std::string root = Tree({});
  ExpectRefused({"--root", (dir_ / "nowhere").string()}, "is not a directory");
  ExpectRefused({"--root", root, "--nccl-log", (dir_ / "none.log").string()},
                "cannot read --nccl-log");
  ExpectRefused({"--root", root, "--nccl-log", WriteFile("plain.log", "hello\n")},
                "holds no NCCL line");
  ExpectRefused({"--root", root, "--topo-file", WriteFile("t.txt", "nothing useful\n")},
                "neither `nvidia-smi topo -m` output");
  ExpectRefused({"--root", root, "--topo-file", WriteFile("t.xml", "<system>\n<cpu>\n</system>\n")},
                "t.xml:3: not well-formed XML");
  ExpectRefused({"--root", root, "--format", "yaml"},
                "unknown --format 'yaml': choose one of text, json");
  ExpectRefused({"--root", root, "--check", "pcie"}, "unknown check 'pcie'");
  ExpectRefused({"--root", root, "--timeout", "0"}, "--timeout must be a positive number");
  ExpectRefused({"--root", root, "--launcher", "slurm"}, "slurm");
  ExpectRefused({"--root", root, "--bogus"}, "--bogus");
}

}  // namespace
}  // namespace fabricscope::doctor::testing
