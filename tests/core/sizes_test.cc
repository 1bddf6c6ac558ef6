#include "fabricscope/sizes.h"

#include <gtest/gtest.h>

#include <string>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

TEST(SizesTest, ParsesNcclTestsSuffixes) {
  EXPECT_EQ(ParseSize("8", "-b"), 8u);
  EXPECT_EQ(ParseSize("64K", "-b"), 65536u);
  EXPECT_EQ(ParseSize("64k", "-b"), 65536u);
  EXPECT_EQ(ParseSize("32M", "-b"), 32u << 20);
  EXPECT_EQ(ParseSize("1.5G", "-b"), 3u << 29);
  EXPECT_EQ(ParseSize("0.5K", "-b"), 512u);
  EXPECT_EQ(ParseSize("0", "-b"), 0u);
}

TEST(SizesTest, BadSizesNameTheFlagAndTheFix) {
  for (const char* bad : {"", "12Q", "M", "-5", "abc", "1.2.3K"}) {
    try {
      ParseSize(bad, "-e/--maxbytes");
      FAIL() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("-e/--maxbytes"), std::string::npos) << msg;
      EXPECT_NE(msg.find("K, M or G"), std::string::npos) << msg;
    }
  }
}

TEST(SizesTest, FactorSweepIsGeometricAndInclusive) {
  EXPECT_EQ(SizeSweep(8, 128, 1, 2), (std::vector<size_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(SizeSweep(8, 100, 1, 2), (std::vector<size_t>{8, 16, 32, 64}));
}

TEST(SizesTest, StepSweepIsArithmetic) {
  EXPECT_EQ(SizeSweep(1024, 4096, 1024, 1), (std::vector<size_t>{1024, 2048, 3072, 4096}));
  EXPECT_EQ(SizeSweep(32 << 20, 32 << 20, 1 << 20, 1), (std::vector<size_t>{32 << 20}));
}

TEST(SizesTest, MinAboveMaxIsRefused) {
  try {
    SizeSweep(1024, 8, 1, 2);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-b <= -e"), std::string::npos) << e.what();
  }
}

TEST(SizesTest, SweepsThatNeverAdvanceAreRefused) {
  EXPECT_THROW(SizeSweep(8, 1024, 0, 1), UsageError);  // -i 0
  EXPECT_THROW(SizeSweep(0, 1024, 1, 2), UsageError);  // -b 0 -f 2
  EXPECT_EQ(SizeSweep(8, 8, 0, 1).size(), 1u);         // one size needs no step
}

TEST(SizesTest, HugeFactorStopsWithoutOverflow) {
  const auto sizes = SizeSweep(1, SIZE_MAX / 2, 1, 1 << 20);
  EXPECT_EQ(sizes.size(), 4u);  // 1, 2^20, 2^40, 2^60
}

}  // namespace
}  // namespace fabricscope
