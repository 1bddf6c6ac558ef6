// The environment registry against docs/env.md and the sources, and Env itself: the one
// reader of the process environment, checked against the registry on every read.
#include "fabricscope/env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabricscope {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const size_t last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

// A cell as the registry spells it: the table's code spans are markup.
std::string Plain(const std::string& cell) {
  std::string out;
  for (char c : Trim(cell)) {
    if (c != '`') out += c;
  }
  return out;
}

struct DocRow {
  std::string name, default_value, meaning, read_by;
  int line = 0;
};

// The rows of docs/env.md's first table: "| `NAME` | default | meaning | read by |". The
// page's later sections ("The variables of NCCL's neighbours") hold other tables.
std::vector<DocRow> DocumentedVariables() {
  std::istringstream in(Slurp(fs::path(FABRICSCOPE_SOURCE_DIR) / "docs" / "env.md"));
  std::vector<DocRow> rows;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.starts_with("## ") && !rows.empty()) break;
    if (!line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::string cell;
    bool code = false;
    for (char c : line.substr(1)) {
      if (c == '`') code = !code;
      if (c == '|' && !code) {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    if (cells.size() != 4) {
      ADD_FAILURE() << "docs/env.md:" << number << ": expected 4 cells, got " << cells.size()
                    << ": " << line;
      continue;
    }
    rows.push_back({Plain(cells[0]), Plain(cells[1]), Trim(cells[2]), Plain(cells[3]), number});
  }
  return rows;
}

TEST(EnvRegistry, DocsEnvMdListsEveryVariableWithTheSameDefault) {
  const std::vector<DocRow> documented = DocumentedVariables();
  ASSERT_FALSE(documented.empty()) << "no table rows in docs/env.md";
  std::set<std::string> in_docs;
  for (const DocRow& row : documented) {
    EXPECT_TRUE(in_docs.insert(row.name).second)
        << "docs/env.md:" << row.line << ": " << row.name << " is listed twice";
    const EnvVariable* v = FindEnvVariable(row.name);
    if (v == nullptr) {
      ADD_FAILURE() << "docs/env.md:" << row.line << " lists " << row.name
                    << ", which the registry in src/core/env.cc does not: the program does not "
                       "read it, or the registry misses it";
      continue;
    }
    EXPECT_EQ(row.default_value, v->default_value)
        << "docs/env.md:" << row.line << ": the default of " << row.name;
    EXPECT_EQ(row.read_by, v->read_by)
        << "docs/env.md:" << row.line << ": the commands that read " << row.name;
    EXPECT_FALSE(row.meaning.empty()) << "docs/env.md:" << row.line << ": " << row.name;
  }
  for (const EnvVariable& v : EnvVariables()) {
    EXPECT_TRUE(in_docs.contains(std::string(v.name)))
        << v.name << " is in the registry (src/core/env.cc) but not in docs/env.md";
  }
  EXPECT_EQ(documented.size(), EnvVariables().size());
}

TEST(EnvRegistry, EveryEntryIsCompleteAndListedOnce) {
  std::set<std::string_view> names;
  for (const EnvVariable& v : EnvVariables()) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name << " is listed twice";
    EXPECT_FALSE(v.default_value.empty()) << v.name;
    EXPECT_FALSE(v.meaning.empty()) << v.name;
    EXPECT_FALSE(v.read_by.empty()) << v.name;
    // A family is a prefix and a star; a variable has no star at all.
    const size_t star = v.name.find('*');
    EXPECT_TRUE(star == std::string_view::npos || star == v.name.size() - 1) << v.name;
    EXPECT_TRUE(std::regex_match(std::string(v.name), std::regex("[A-Z][A-Z0-9_]*\\*?"))) << v.name;
  }
  EXPECT_EQ(FindEnvVariable("NO_SUCH_VARIABLE"), nullptr);
  ASSERT_NE(FindEnvVariable("MASTER_PORT"), nullptr);
  EXPECT_EQ(FindEnvVariable("MASTER_PORT")->name, "MASTER_PORT");
}

// The sources read the process environment in one place: src/core/env.cc. Passing it on to a
// child (posix_spawn's envp) is not a read. Every name a source reads through Env is listed.
TEST(EnvRegistry, OnlyEnvReadsTheProcessEnvironmentAndEveryNameReadIsListed) {
  const fs::path src = fs::path(FABRICSCOPE_SOURCE_DIR) / "src";
  const std::regex raw_read(R"(\b(secure_getenv|getenv|environ|__environ)\b)");
  const std::regex spawn_env(R"(extern char\*\* environ;|posix_spawnp?\(.*\benviron\))");
  const std::regex named_read(R"re(\b(?:Get|Family)\("([A-Za-z0-9_*]+)"\))re");
  int reads = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    const fs::path relative = fs::relative(entry.path(), src);
    std::istringstream in(Slurp(entry.path()));
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const std::string where = "src/" + relative.string() + ":" + std::to_string(number);
      if (relative != fs::path("core/env.cc") && std::regex_search(line, raw_read)) {
        // core/tool_run.cc: RunTool, which fabric's infiniband-diags and --drain's scontrol run
        // through.
        EXPECT_TRUE(relative == fs::path("core/tool_run.cc") && std::regex_search(line, spawn_env))
            << where << " reads the process environment itself: take an Env instead\n"
            << line;
      }
      for (std::sregex_iterator m(line.begin(), line.end(), named_read), end; m != end; ++m) {
        const std::string name = (*m)[1].str();
        if (name.empty() || name.front() < 'A' || name.front() > 'Z') continue;
        ++reads;
        EXPECT_NE(FindEnvVariable(name), nullptr)
            << where << " reads " << name << ", which src/core/env.cc does not list";
      }
    }
  }
  EXPECT_GT(reads, 20);  // the scan sees the launch layer's reads
}

TEST(Env, ReadsAGivenEnvironment) {
  const Env env({{"MASTER_ADDR", "node7"}, {"RANK", ""}});
  EXPECT_EQ(env.Get("MASTER_ADDR"), "node7");
  EXPECT_EQ(env.Get("RANK"), "");  // set but empty is set
  EXPECT_EQ(env.Get("MASTER_PORT"), std::nullopt);
  EXPECT_EQ(Env().Get("MASTER_ADDR"), std::nullopt);
  const Env copy = env;  // copies share the variables
  EXPECT_EQ(copy.Get("MASTER_ADDR"), "node7");
}

TEST(Env, FamiliesAreReadByPrefixInNameOrder) {
  const Env env({{"NCCL_PROTO", "Simple"},
                 {"NCCL_ALGO", "Ring"},
                 {"NCCLX", "not a member"},
                 {"GLOO_SOCKET_IFNAME", "eth0"},
                 {"HOME", "/root"}});
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(env.Family("NCCL_*"), (Pairs{{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}}));
  EXPECT_EQ(env.Family("GLOO_*"), (Pairs{{"GLOO_SOCKET_IFNAME", "eth0"}}));
  EXPECT_TRUE(env.Family("UCX_*").empty());
}

TEST(Env, AReadOfAnUnlistedNameIsAProgrammingError) {
  const Env env({{"NOT_LISTED", "1"}, {"NCCL_ALGO", "Ring"}});
  try {
    env.Get("NOT_LISTED");
    FAIL() << "an unlisted variable was read";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("'NOT_LISTED' is read but not listed in src/core/env.cc"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(env.Get("NCCL_*"), std::logic_error);        // a family is not a variable
  EXPECT_THROW(env.Family("NCCL_ALGO"), std::logic_error);  // nor a variable a family
  EXPECT_THROW(env.Family("HOME*"), std::logic_error);      // an unlisted family
}

// Process() is a copy of the environment when it is called: later changes are not seen,
// so one Env gives the same answer to every thread for the whole run.
TEST(Env, ProcessCopiesTheEnvironmentOnce) {
  ::setenv("FABRICSCOPE_PORT_FILE", "/tmp/e18-port", 1);
  const Env before = Env::Process();
  ::unsetenv("FABRICSCOPE_PORT_FILE");
  const Env after = Env::Process();
  EXPECT_EQ(before.Get("FABRICSCOPE_PORT_FILE"), "/tmp/e18-port");
  EXPECT_EQ(after.Get("FABRICSCOPE_PORT_FILE"), std::nullopt);
}

}  // namespace
}  // namespace fabricscope
