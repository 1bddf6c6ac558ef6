// Reading a node's files under a root: fail-soft reads, and links resolved inside the root.
#include <gtest/gtest.h>

#include <fstream>

#include "doctor/fixture.h"
#include "fabricscope/error.h"
#include "fabricscope/node_root.h"

namespace fabricscope::node {
namespace {

namespace fs = std::filesystem;
using doctor::testing::TestDir;

class RootTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TestDir("root"); }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((dir_ / path).parent_path());
    std::ofstream(dir_ / path) << text;
  }
  fs::path dir_;
};

TEST_F(RootTest, ReadsFailSoftAndSayWhy) {
  Write("sys/a/value", "  42\n");
  Write("sys/a/hex", "0x030200\n");
  Write("sys/a/word", "ACTIVE\nsecond line\n");
  const Root root(dir_);
  EXPECT_FALSE(root.live());
  EXPECT_EQ(root.ReadInt("/sys/a/value"), 42);
  EXPECT_EQ(root.ReadInt("/sys/a/hex"), 0x030200);
  EXPECT_EQ(root.ReadLine("/sys/a/word"), "ACTIVE");
  std::string why;
  EXPECT_FALSE(root.ReadInt("/sys/a/word", &why));
  EXPECT_EQ(why, "not a number: 'ACTIVE'");
  EXPECT_FALSE(root.Read("/sys/a/missing", &why));
  EXPECT_EQ(why, "absent");
  EXPECT_FALSE(root.Read("/sys/a", &why));  // a directory
  EXPECT_NE(why.find("unreadable"), std::string::npos) << why;
  EXPECT_EQ(root.List("/sys/a"), (std::vector<std::string>{"hex", "value", "word"}));
  EXPECT_TRUE(root.List("/nothing").empty());
  EXPECT_EQ(root.Show("/sys/a/value"), dir_.string() + "/sys/a/value");
}

TEST_F(RootTest, LinksResolveInsideTheRoot) {
  Write("sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/class", "0x030200\n");
  fs::create_directories(dir_ / "sys/bus/pci/devices");
  fs::create_directory_symlink("../../../devices/pci0000:17/0000:17:01.0/0000:18:00.0",
                               dir_ / "sys/bus/pci/devices/0000:18:00.0");
  // An absolute target means the node's root, not this machine's.
  fs::create_directories(dir_ / "sys/class/x");
  fs::create_directory_symlink("/sys/devices/pci0000:17/0000:17:01.0", dir_ / "sys/class/x/abs");
  const Root root(dir_);
  EXPECT_EQ(root.Resolve("/sys/bus/pci/devices/0000:18:00.0"),
            "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0");
  EXPECT_EQ(root.Resolve("/sys/class/x/abs/0000:18:00.0/class"),
            "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/class");
  // ".." never climbs above the root.
  fs::create_directory_symlink("../../../../../../../..", dir_ / "sys/class/x/up");
  EXPECT_EQ(root.Resolve("/sys/class/x/up"), "/");
  EXPECT_FALSE(root.Resolve("/sys/class/x/missing"));
  // Loops end.
  fs::create_directory_symlink("loop2", dir_ / "sys/class/x/loop1");
  fs::create_directory_symlink("loop1", dir_ / "sys/class/x/loop2");
  EXPECT_FALSE(root.Resolve("/sys/class/x/loop1"));
  EXPECT_EQ(root.LinkName("/sys/class/x/abs"), "0000:17:01.0");
}

TEST_F(RootTest, TheLiveRootIsRecognized) {
  EXPECT_TRUE(Root("/").live());
  EXPECT_TRUE(Root("/.").live());
  EXPECT_THROW(Root(dir_ / "missing"), UsageError);
  Write("file", "x");
  EXPECT_THROW(Root(dir_ / "file"), UsageError);
}

}  // namespace
}  // namespace fabricscope::node
