// Slurm's host lists: the forms scontrol expands, the bounds that refuse a hostile list, and
// the same names as the real `scontrol show hostnames` (slurm-wlm) for lists it accepts.
#include "fabricscope/host_list.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

using Names = std::vector<std::string>;

std::string ErrorOf(std::string_view list) {
  try {
    ExpandHostList(list);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(HostList, RangesListsAndPadding) {
  EXPECT_EQ(ExpandHostList("node[01-03,7],gpu1"),
            (Names{"node01", "node02", "node03", "node7", "gpu1"}));
  EXPECT_EQ(ExpandHostList("node[001-003]"), (Names{"node001", "node002", "node003"}));
  // The width is the low number's as written, as Slurm's _parse_single_range.
  EXPECT_EQ(ExpandHostList("node[1-003]"), (Names{"node1", "node2", "node3"}));
  EXPECT_EQ(ExpandHostList("node[9-11]"), (Names{"node9", "node10", "node11"}));
  EXPECT_EQ(ExpandHostList("node[09-11]"), (Names{"node09", "node10", "node11"}));
  EXPECT_EQ(ExpandHostList("a,,b c\td"), (Names{"a", "b", "c", "d"}));
  EXPECT_EQ(ExpandHostList("a[2,1,1]"), (Names{"a2", "a1", "a1"}));
  EXPECT_EQ(ExpandHostList(""), Names{});
  EXPECT_EQ(ExpandHostList("[1-2]"), (Names{"1", "2"}));
}

TEST(HostList, SeveralBracketsAreEveryCombinationFirstOutermost) {
  EXPECT_EQ(ExpandHostList("a[1-2]b[3-4],x"), (Names{"a1b3", "a1b4", "a2b3", "a2b4", "x"}));
  EXPECT_EQ(ExpandHostList("r[1,3]n[08-09]"), (Names{"r1n08", "r1n09", "r3n08", "r3n09"}));
  // A suffix after the last bracket (Slurm 22.05 refuses it; newer lists use it).
  EXPECT_EQ(ExpandHostList("rack[3-4]-gpu"), (Names{"rack3-gpu", "rack4-gpu"}));
}

TEST(HostList, MalformedListsAreRefusedWithTheReason) {
  EXPECT_NE(ErrorOf("node[3-1]").find("range 3-1 runs down"), std::string::npos);
  EXPECT_NE(ErrorOf("node[1-x]").find("'x' is not a number"), std::string::npos);
  EXPECT_NE(ErrorOf("node[1-2").find("'[' without ']'"), std::string::npos);
  EXPECT_NE(ErrorOf("node1-2]").find("']' without '['"), std::string::npos);
  EXPECT_NE(ErrorOf("a[[1-2]]").find("'[' inside brackets"), std::string::npos);
  EXPECT_NE(ErrorOf("a[]").find("empty range"), std::string::npos);
  EXPECT_NE(ErrorOf("a[1-2,]").find("empty range"), std::string::npos);
  EXPECT_NE(ErrorOf("a[1-]").find("empty number"), std::string::npos);
  EXPECT_NE(ErrorOf("a[-1]").find("empty number"), std::string::npos);
  EXPECT_NE(ErrorOf("a[+1]").find("not a number"), std::string::npos);
  EXPECT_NE(ErrorOf("a[18446744073709551616]").find("too large a number"), std::string::npos);
  EXPECT_NE(ErrorOf("a[99999999999999999999999999999]").find("too large"), std::string::npos);
  // The message names the list and shows the form.
  EXPECT_NE(ErrorOf("a[]").find("Slurm host list 'a[]'"), std::string::npos);
  EXPECT_NE(ErrorOf("a[]").find("gpu[07-09,12]"), std::string::npos);
}

TEST(HostList, ListsPastTheBoundAreRefusedWithoutExpanding) {
  const std::string too_many = "expands to more than 1048576 names";
  EXPECT_NE(ErrorOf("node[1-2147483647]").find(too_many), std::string::npos);
  EXPECT_NE(ErrorOf("node[0-18446744073709551615]").find(too_many), std::string::npos);
  EXPECT_NE(ErrorOf("n[1-1048577]").find(too_many), std::string::npos);
  // Each range within the bound; their product, or their sum, past it.
  EXPECT_NE(ErrorOf("a[1-2000]b[1-2000]").find(too_many), std::string::npos);
  EXPECT_NE(ErrorOf("a[1-600000,1-600000]").find(too_many), std::string::npos);
  EXPECT_NE(ErrorOf("a[1-600000],b[1-600000]").find(too_many), std::string::npos);
  EXPECT_NE(ErrorOf("a[1-2]b[1-2]c[1-2]d[1-2]e[1-2]f[1-2]g[1-2]h[1-2]i[1-2]j[1-2]k[1-2]l[1-2]"
                    "m[1-2]n[1-2]o[1-2]p[1-2]q[1-2]r[1-2]s[1-2]t[1-2]u[1-2]")
                .find(too_many),
            std::string::npos);
  // Exactly the bound is taken; the bound is an option.
  EXPECT_EQ(ExpandHostList("n[1-1048576]").size(), kMaxHostListNames);
  EXPECT_EQ(ExpandHostList("n[1-4]", 4).size(), 4u);
  EXPECT_THROW(ExpandHostList("n[1-4],m", 4), UsageError);
  EXPECT_THROW(ExpandHostList("n[1-2]m[1-3]", 5), UsageError);
}

// scontrol without a controller: a minimal slurm.conf is enough for `show hostnames`.
class Scontrol {
 public:
  Scontrol() {
    if (std::system("command -v scontrol >/dev/null 2>&1") != 0) return;
    dir_ = std::filesystem::temp_directory_path() /
           ("fabricscope-hostlist-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "slurm.conf") << "ClusterName=test\nSlurmctldHost=localhost\n"
                                          "NodeName=localhost CPUs=1 State=UNKNOWN\n"
                                          "PartitionName=p Nodes=localhost Default=YES\n";
    available_ = true;
  }
  ~Scontrol() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  Scontrol(const Scontrol&) = delete;
  Scontrol& operator=(const Scontrol&) = delete;
  bool available() const { return available_; }

  // The names scontrol prints for `list` (the list holds no quote).
  Names Hostnames(const std::string& list) const {
    const std::string command = "SLURM_CONF='" + (dir_ / "slurm.conf").string() +
                                "' scontrol show hostnames '" + list + "' 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    Names out;
    std::array<char, 512> buffer{};
    std::string line;
    while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
      line += buffer.data();
      if (!line.empty() && line.back() == '\n') {
        line.pop_back();
        out.push_back(line);
        line.clear();
      }
    }
    pclose(pipe);
    return out;
  }

 private:
  std::filesystem::path dir_;
  bool available_ = false;
};

std::string RandomNumber(std::mt19937& rng, int value) {
  std::string digits = std::to_string(value);
  const int pad = std::uniform_int_distribution<int>(0, 2)(rng);
  return std::string(static_cast<size_t>(pad), '0') + digits;
}

std::string RandomBracket(std::mt19937& rng) {
  const int ranges = std::uniform_int_distribution<int>(1, 3)(rng);
  std::string out = "[";
  for (int r = 0; r < ranges; ++r) {
    const int lo = std::uniform_int_distribution<int>(0, 120)(rng);
    if (r > 0) out += ",";
    out += RandomNumber(rng, lo);
    if (std::uniform_int_distribution<int>(0, 2)(rng) > 0) {
      out += "-" + RandomNumber(rng, lo + std::uniform_int_distribution<int>(0, 12)(rng));
    }
  }
  return out + "]";
}

// A list scontrol 22.05 accepts: names with up to two brackets, none after the last one.
std::string RandomList(std::mt19937& rng) {
  static constexpr std::array<const char*, 5> kPrefixes = {"node", "gpu-", "a1", "r", "x.y"};
  const int items = std::uniform_int_distribution<int>(1, 4)(rng);
  std::string out;
  for (int i = 0; i < items; ++i) {
    if (i > 0) out += std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? " " : ",";
    out += kPrefixes[std::uniform_int_distribution<size_t>(0, kPrefixes.size() - 1)(rng)];
    const int brackets = std::uniform_int_distribution<int>(0, 2)(rng);
    for (int b = 0; b < brackets; ++b) out += (b > 0 ? "n" : "") + RandomBracket(rng);
  }
  return out;
}

TEST(HostList, SameNamesAsScontrolShowHostnames) {
  const Scontrol scontrol;
  if (!scontrol.available()) GTEST_SKIP() << "no scontrol (apt-get install slurm-client)";
  const std::vector<std::string> fixed = {"node[1-3]",        "node[001-003]", "node[1-003]",
                                          "node[01-3]",       "node[9-11]",    "node[09-11]",
                                          "node[0099-0101]",  "a[1-2]b[3-4]",  "a[1-2]b[3-4],x",
                                          "x[1,3-4],y",       "a,,b",          "a[2,1,1]",
                                          "a[1-2],a[2-3]",    "[1-2]",         "a[010-12]",
                                          "a[1-2,5-6]b[1,2]", "a1[1-2]",       "n[1-65536]",
                                          "a[007]",           "a[0-0]"};
  for (const std::string& list : fixed) {
    EXPECT_EQ(ExpandHostList(list), scontrol.Hostnames(list)) << list;
  }
  std::mt19937 rng(27);
  for (int i = 0; i < 150; ++i) {
    const std::string list = RandomList(rng);
    EXPECT_EQ(ExpandHostList(list), scontrol.Hostnames(list)) << list;
  }
  // Three brackets: the same names; scontrol's order there is its own (a135 a136 a235 ...).
  Names ours = ExpandHostList("a[1-2][3-4][5-6]");
  Names theirs = scontrol.Hostnames("a[1-2][3-4][5-6]");
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  EXPECT_EQ(ours, theirs);
  // What scontrol refuses, this parser refuses too.
  for (const std::string list : {"node[1-2147483647]", "n[3-1]", "a[]", "a[1-2,]", "a[-1]"}) {
    EXPECT_THROW(ExpandHostList(list), UsageError) << list;
    ASSERT_FALSE(scontrol.Hostnames(list).empty());
    EXPECT_NE(scontrol.Hostnames(list).back().find("Invalid hostlist"), std::string::npos);
  }
}

}  // namespace
}  // namespace fabricscope
