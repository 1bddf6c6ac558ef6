// FormatNumber against nccl-tests' column rule, value by value.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "fabricscope/report.h"

namespace fabricscope {
namespace {

struct Case {
  double value;
  int width;
  const char* expected;
};

class FormatNumberTest : public ::testing::TestWithParam<Case> {};

TEST_P(FormatNumberTest, MatchesNcclTestsRule) {
  const Case& c = GetParam();
  EXPECT_EQ(FormatNumber(c.value, c.width), c.expected)
      << "value " << c.value << " width " << c.width;
}

INSTANTIATE_TEST_SUITE_P(
    Golden, FormatNumberTest,
    ::testing::Values(
        // Two decimals while they fit.
        Case{0, 7, "   0.00"}, Case{0, 6, "  0.00"}, Case{1e-3, 7, "   0.00"},
        Case{1e-3, 6, "  0.00"}, Case{0.005001, 6, "  0.01"}, Case{28.391, 7, "  28.39"},
        Case{116.2, 7, " 116.20"}, Case{9999.99, 7, "9999.99"}, Case{325.72, 6, "325.72"},
        Case{999.99, 6, "999.99"},
        // One decimal.
        Case{12345.678, 7, "12345.7"}, Case{24724.0, 7, "24724.0"}, Case{1000.56, 6, "1000.6"},
        Case{99.96, 6, " 99.96"},
        // No decimals.
        Case{12345.678, 6, " 12346"}, Case{1234567, 7, "1234567"}, Case{99999.4, 6, " 99999"},
        // Rounding can carry into a new digit: 9999.96 is "10000.0" at one decimal.
        Case{9999.96, 6, " 10000"}, Case{99999.996, 7, " 100000"},
        // Exponent: 1 decimal at width 7, none at width 6.
        Case{12345678, 7, "1.2e+07"}, Case{1e12, 7, "1.0e+12"}, Case{1234567, 6, " 1e+06"},
        Case{1e12, 6, " 1e+12"}, Case{123456789, 6, " 1e+08"},
        // Negative values take a column for the sign.
        Case{-1.5, 6, " -1.50"}, Case{-1.5, 7, "  -1.50"}, Case{-999.99, 7, "-999.99"},
        Case{-12345.678, 7, " -12346"}, Case{-12345.678, 6, "-12346"},
        // Wider than the column: nccl-tests would cut this to "-1.2e+0"; we keep the value.
        Case{-1234567, 7, "-1.2e+06"}, Case{-1e12, 6, "-1e+12"}));

TEST(FormatNumber, NonFiniteValuesFitTheColumn) {
  EXPECT_EQ(FormatNumber(std::numeric_limits<double>::quiet_NaN(), 7), "    nan");
  EXPECT_EQ(FormatNumber(std::numeric_limits<double>::infinity(), 6), "   inf");
}

TEST(FormatNumber, PositiveValuesFillExactlyTheWidth) {
  for (double value = 1e-4; value < 1e15; value *= 3.7) {
    for (int width : {6, 7}) {
      const std::string text = FormatNumber(value, width);
      EXPECT_EQ(text.size(), static_cast<size_t>(width)) << value;
    }
  }
}

}  // namespace
}  // namespace fabricscope
