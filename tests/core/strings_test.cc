// The shared string helpers and the enum-name table: their one case rule and their error.
#include "core/strings.h"

#include <gtest/gtest.h>

#include <array>
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

}  // namespace
}  // namespace fabricscope
