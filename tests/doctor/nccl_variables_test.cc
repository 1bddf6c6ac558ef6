// NCCL's variable table as generated from NCCL's source (data/nccl/env-variables.json,
// scripts/gen-nccl-env.py): the generator reproduces its fixture byte for byte, the combined
// table is the combination of the per-tag tables, and the doctor reads what it says.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "doctor/nccl_env.h"
#include "fabricscope/error.h"

namespace fabricscope::doctor {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = FABRICSCOPE_SOURCE_DIR;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool HavePython() { return std::system("python3 --version > /dev/null 2>&1") == 0; }

std::string Generator() { return "python3 " + (kSource / "scripts/gen-nccl-env.py").string(); }

TEST(NcclVariablesTable, GeneratorReproducesItsFixture) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  const fs::path out = fs::temp_directory_path() / "fabricscope-nccl-env-fixture.json";
  const std::string command = Generator() + " --tree " +
                              (kSource / "tests/doctor/data/nccl-env-fixture").string() +
                              " --tag fixture --commit 0000000000000000000000000000000000000000 "
                              "--out " +
                              out.string() + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_EQ(Slurp(out), Slurp(kSource / "tests/doctor/data/nccl-env-fixture.expected.json"));
  fs::remove(out);
}

// A hand edit of data/nccl/env-variables.json (or of one tag's table) fails here.
TEST(NcclVariablesTable, CombinedTableIsThePerTagTablesCombined) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  const fs::path out = fs::temp_directory_path() / "fabricscope-nccl-env-combined.json";
  const std::string command = Generator() + " --combine " + (kSource / "data/nccl/env").string() +
                              "/*.json --out " + out.string() + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_EQ(Slurp(out), Slurp(kSource / "data/nccl/env-variables.json"));
  fs::remove(out);
}

std::string PluginGenerator() {
  return "python3 " + (kSource / "scripts/gen-plugin-env.py").string();
}

// Runs `command` (the generator on a fixture tree, writing `out`) and compares with `expected`.
void ExpectReproduces(const std::string& command, const fs::path& out, const fs::path& expected) {
  ASSERT_EQ(std::system((command + " --out " + out.string() + " > /dev/null 2>&1").c_str()), 0)
      << command;
  EXPECT_EQ(Slurp(out), Slurp(expected)) << command;
  fs::remove(out);
}

constexpr const char* kFixtureTag =
    " --tag fixture --commit 0000000000000000000000000000000000000000";

// ROCm/rccl's tree: RCCL_PARAM (rcclParam##name), its HSA_* read, another family skipped.
TEST(NcclVariablesTable, RcclProfileReproducesItsFixture) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  ExpectReproduces(Generator() + " --profile rccl --tree " +
                       (kSource / "tests/doctor/data/rccl-env-fixture").string() + kFixtureTag,
                   fs::temp_directory_path() / "fabricscope-rccl-env-fixture.json",
                   kSource / "tests/doctor/data/rccl-env-fixture.expected.json");
}

// One fixture tree per plugin source: forwarded and pasted prefixes (tcpx), a prefix added at
// run time with bounds and a vendor profile's exports (tcpxo), deprecated/removed parameters,
// writes and environment tables (aws-ofi-nccl).
TEST(NcclVariablesTable, PluginGeneratorReproducesItsFixtures) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  for (const char* source : {"tcpx", "tcpxo", "aws-ofi-nccl"}) {
    const fs::path dir = kSource / "tests/doctor/data/plugin-env-fixture";
    ExpectReproduces(PluginGenerator() + " --source " + source + " --tree " +
                         (dir / source).string() + kFixtureTag,
                     fs::temp_directory_path() / (std::string("fabricscope-") + source + ".json"),
                     dir / (std::string(source) + ".expected.json"));
  }
}

// A tree that is not the source's (tcpxo's macro absent) is refused, not read as empty.
TEST(NcclVariablesTable, PluginGeneratorRefusesAnotherSourcesTree) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  const std::string command =
      PluginGenerator() + " --source tcpxo --tree " +
      (kSource / "tests/doctor/data/plugin-env-fixture/tcpx").string() + kFixtureTag + " --out " +
      (fs::temp_directory_path() / "fabricscope-refused.json").string() + " > /dev/null 2>&1";
  EXPECT_NE(std::system(command.c_str()), 0);
}

// A hand edit of a neighbour's combined table (or one of its per-tag tables) fails here.
TEST(NcclVariablesTable, EverySourcesCombinedTableIsItsPerTagTablesCombined) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  for (const char* source : {"rccl", "tcpx", "tcpxo", "aws-ofi-nccl", "rocr"}) {
    const fs::path out =
        fs::temp_directory_path() / (std::string("fabricscope-combined-") + source + ".json");
    const std::string command = Generator() + " --combine " +
                                (kSource / "data/nccl" / source).string() + "/*.json --out " +
                                out.string() + " > /dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    EXPECT_EQ(Slurp(out), Slurp(kSource / "data/nccl" / (std::string(source) + "-variables.json")))
        << source;
    fs::remove(out);
  }
}

TEST(NcclVariablesTable, TheNeighboursTablesSayWhereTheyCameFrom) {
  EXPECT_EQ(SourceVariables("rccl").repository, "ROCm/rccl");
  EXPECT_EQ(SourceVariables("rccl").newest, "rocm-6.2.2");
  const GeneratedVariable* msccl = SourceVariables("rccl").Find("RCCL_MSCCL_ENABLE");
  ASSERT_NE(msccl, nullptr);
  EXPECT_EQ(msccl->file, "src/misc/msccl/msccl_lifecycle.cc");
  EXPECT_NE(SourceVariables("rccl").Find("HSA_FORCE_FINE_GRAIN_PCIE"), nullptr);
  EXPECT_EQ(SourceVariables("tcpx").repository, "google/nccl-plugin-gpudirecttcpx");
  EXPECT_NE(SourceVariables("tcpx").Find("NCCL_GPUDIRECTTCPX_PORT_MAPPING"), nullptr);
  EXPECT_EQ(SourceVariables("tcpxo").newest, "v1.0.17");
  EXPECT_NE(SourceVariables("tcpxo").Find("NCCL_FASTRAK_NUM_FLOWS"), nullptr);
  const GeneratedVariable* removed =
      SourceVariables("aws-ofi-nccl").Find("OFI_NCCL_RDMA_MIN_POSTED_BOUNCE_BUFFERS");
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(removed->status, "removed");
  const GeneratedVariable* fork = SourceVariables("aws-ofi-nccl").Find("FI_EFA_FORK_SAFE");
  ASSERT_NE(fork, nullptr);
  EXPECT_EQ(fork->access, std::vector<std::string>{"sets"});
  EXPECT_NE(SourceVariables("rocr").Find("HSA_ENABLE_SDMA"), nullptr);
  EXPECT_THROW(SourceVariables("nope"), UsageError);
}

TEST(NcclVariablesTable, TheDoctorReadsTheGeneratedFacts) {
  const GeneratedVariables& t = NcclSourceVariables();
  EXPECT_EQ(t.newest, "v2.30.7-1");
  const GeneratedVariable* gid = t.Find("NCCL_IB_GID_INDEX");
  ASSERT_NE(gid, nullptr);
  EXPECT_EQ(gid->file, "src/transport/net_ib/connect.cc");
  const GeneratedVariable* level = t.Find("NCCL_NET_GDR_LEVEL");
  ASSERT_NE(level, nullptr);
  EXPECT_EQ(level->kind, "level");
  EXPECT_NE(std::find(level->accepted.begin(), level->accepted.end(), "C2C"),
            level->accepted.end());
  const GeneratedVariable* inspector = t.Find("NCCL_INSPECTOR_ENABLE");
  ASSERT_NE(inspector, nullptr);
  EXPECT_EQ(inspector->plugin, "plugins/profiler/inspector");
  EXPECT_EQ(t.Find("NCCL_NOT_A_VARIABLE"), nullptr);
}

}  // namespace
}  // namespace fabricscope::doctor
