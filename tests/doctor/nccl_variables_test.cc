// NCCL's variable table as generated from NCCL's source (data/nccl/env-variables.json,
// scripts/gen-nccl-env.py): the generator reproduces its fixture byte for byte, the combined
// table is the combination of the per-tag tables, and the doctor reads what it says.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "doctor/nccl_env.h"

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
