// The shared string helpers and the enum-name table: their one case rule and their error.
#include "fabricscope/strings.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

TEST(Strings, LowerAndUpperAreAsciiOnly) {
  EXPECT_EQ(Lower("NVLS-Tree_2 LL128"), "nvls-tree_2 ll128");
  EXPECT_EQ(Upper("hdr x4"), "HDR X4");
  EXPECT_EQ(Lower(""), "");
  // Bytes outside ASCII (UTF-8 of "É") pass through unchanged, whatever the locale.
  EXPECT_EQ(Lower("\xc3\x89"), "\xc3\x89");
  EXPECT_TRUE(EqualsIgnoreCase("Simple", "sIMPLE"));
  EXPECT_FALSE(EqualsIgnoreCase("Ring", "Rings"));
  EXPECT_FALSE(EqualsIgnoreCase("LL", "LL128"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
}

TEST(Strings, TrimRemovesAsciiWhiteSpaceAtBothEnds) {
  EXPECT_EQ(Trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(Trim("\v\fx"), "x");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("x"), "x");
  // A view into its argument, not a copy.
  const std::string text = "  kept  ";
  EXPECT_EQ(Trim(text).data(), text.data() + 2);
}

TEST(Strings, SplitTrimsPartsAndDropsEmptyOnes) {
  EXPECT_EQ(Split("a, b,,c ", ','), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Split("/sys/devices/pci0000:00", '/'),
            (std::vector<std::string>{"sys", "devices", "pci0000:00"}));
  EXPECT_EQ(Split("one", ','), (std::vector<std::string>{"one"}));
  EXPECT_TRUE(Split("", ',').empty());
  EXPECT_TRUE(Split(" , ,", ',').empty());
}

enum class Color { kRed, kGreen, kDarkBlue };
constexpr std::array<std::string_view, 3> kColorNames = {"red", "green", "Dark-Blue"};

TEST(Strings, EnumNamesMatchRegardlessOfCase) {
  EXPECT_EQ(ParseName<Color>("red", kColorNames, "color"), Color::kRed);
  EXPECT_EQ(ParseName<Color>("GREEN", kColorNames, "color"), Color::kGreen);
  EXPECT_EQ(ParseName<Color>("dark-blue", kColorNames, "color"), Color::kDarkBlue);
  EXPECT_EQ(NameOf(Color::kDarkBlue, kColorNames), "Dark-Blue");
  for (size_t i = 0; i < kColorNames.size(); ++i) {
    const auto color = static_cast<Color>(i);
    EXPECT_EQ(ParseName<Color>(NameOf(color, kColorNames), kColorNames, "color"), color);
  }
}

TEST(Strings, AnUnknownEnumNameListsTheChoices) {
  try {
    ParseName<Color>("purple", kColorNames, "--color");
    FAIL() << "no error for an unknown name";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown --color 'purple': use one of red, green, Dark-Blue");
  }
  EXPECT_THROW(ParseName<Color>("", kColorNames, "--color"), UsageError);
  EXPECT_THROW(ParseName<Color>("red ", kColorNames, "--color"), UsageError);
}

TEST(Strings, ToNumberTakesTheWholeTextInRange) {
  EXPECT_EQ(ToNumber<int>("42"), 42);
  EXPECT_EQ(ToNumber<int>("-7"), -7);
  EXPECT_EQ(ToNumber<int>("2147483647"), 2147483647);
  EXPECT_EQ(ToNumber<int>("ff", 16), 255);
  EXPECT_EQ(ToNumber<double>("2.5"), 2.5);
  EXPECT_EQ(ToNumber<uint64_t>("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", " 1", "1 ", "+1", "1x", "x", "0x10", "1e"}) {
    EXPECT_FALSE(ToNumber<int>(bad)) << bad;
  }
  EXPECT_FALSE(ToNumber<unsigned>("-1"));
}

// Long digit strings: out of range is no number, never a wrapped or saturated one.
TEST(Strings, ToNumberRefusesLongDigitStrings) {
  EXPECT_FALSE(ToNumber<int>("2147483648"));
  EXPECT_FALSE(ToNumber<int>("-2147483649"));
  EXPECT_FALSE(ToNumber<long>("99999999999999999999"));
  EXPECT_FALSE(ToNumber<uint64_t>("18446744073709551616"));
  EXPECT_FALSE(ToNumber<int>(std::string(10000, '9')));
  EXPECT_FALSE(ToNumber<double>("1" + std::string(400, '0')));
  try {
    ParseNumber<int>(std::string(100, '9'), "--widgets");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--widgets: '9999"), std::string::npos) << what;
    EXPECT_NE(what.find("...' is not a number from -2147483648 to 2147483647"), std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace fabricscope
