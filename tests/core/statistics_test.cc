// The shared statistics against textbook values, and their contract for empty, one-element
// and out-of-domain inputs.
#include "fabricscope/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace fabricscope {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Statistics, MedianIsTheTrueMedian) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  // The mean of the two middle values, not the upper (3) or lower (2) one.
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({10, 1}), 5.5);
  EXPECT_DOUBLE_EQ(Median({7}), 7);
  EXPECT_TRUE(std::isnan(Median({})));
}

TEST(Statistics, MeanAndStandardDeviations) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(Mean(v), 5);
  // Sum of squared deviations 32: sample variance 32 / 7, population 32 / 8.
  EXPECT_DOUBLE_EQ(Variance(v), 32.0 / 7.0);
  EXPECT_DOUBLE_EQ(StdDev(v), std::sqrt(32.0 / 7.0));
  EXPECT_DOUBLE_EQ(PopulationStdDev(v), 2);
}

TEST(Statistics, EmptyAndOneElement) {
  EXPECT_TRUE(std::isnan(Mean({})));
  EXPECT_EQ(Variance({}), 0);
  EXPECT_EQ(StdDev({}), 0);
  EXPECT_TRUE(std::isnan(PopulationStdDev({})));
  EXPECT_TRUE(std::isnan(Quantile({}, 0.5)));
  EXPECT_TRUE(std::isnan(Percentile({}, 0.99)));
  EXPECT_TRUE(std::isnan(MedianAbsoluteDeviation({})));
  EXPECT_TRUE(std::isnan(RobustSigma({})));

  EXPECT_EQ(Mean({3}), 3);
  EXPECT_EQ(Variance({3}), 0);
  EXPECT_EQ(StdDev({3}), 0);
  EXPECT_EQ(PopulationStdDev({3}), 0);
  EXPECT_EQ(Quantile({3}, 0.1), 3);
  EXPECT_EQ(Percentile({3}, 0.99), 3);
  EXPECT_EQ(MedianAbsoluteDeviation({3}), 0);
}

TEST(Statistics, QuantileInterpolatesAndAgreesWithTheMedian) {
  const std::vector<double> v = {40, 10, 30, 20};
  EXPECT_DOUBLE_EQ(Quantile(v, 0), 10);
  EXPECT_DOUBLE_EQ(Quantile(v, 1), 40);
  EXPECT_DOUBLE_EQ(Quantile(v, 0.5), Median(v));
  // numpy.quantile([10, 20, 30, 40], 0.9) = 37.
  EXPECT_DOUBLE_EQ(Quantile(v, 0.9), 37);
  EXPECT_TRUE(std::isnan(Quantile(v, 1.5)));
}

TEST(Statistics, PercentileIsNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  EXPECT_EQ(Percentile(v, 0.99), 99);
  EXPECT_EQ(Percentile(v, 0.5), 50);
  EXPECT_EQ(Percentile(v, 1), 100);
  EXPECT_EQ(Percentile(v, 0), 1);
  // An observed value, the lower middle for an even count: unlike the Median.
  EXPECT_EQ(Percentile({1, 2, 3, 4}, 0.5), 2);
  EXPECT_EQ(Percentile({1, 2, 3}, 0.99), 3);
  EXPECT_TRUE(std::isnan(Percentile(v, -0.1)));
}

TEST(Statistics, RobustSpread) {
  const std::vector<double> bw = {10.0, 10.1, 9.9, 10.0, 25.0};  // one outlier
  EXPECT_DOUBLE_EQ(Median(bw), 10.0);
  EXPECT_NEAR(MedianAbsoluteDeviation(bw), 0.1, 1e-12);
  EXPECT_NEAR(RobustSigma(bw), 0.14826, 1e-9);
}

TEST(Statistics, StudentQuantilesMatchTables) {
  // One-sided: t(p, df), from the standard t table.
  EXPECT_NEAR(StudentQuantile(0.975, 10), 2.228139, 1e-6);
  EXPECT_NEAR(StudentQuantile(0.975, 1), 12.706205, 1e-6);
  EXPECT_NEAR(StudentQuantile(0.95, 5), 2.015048, 1e-6);
  EXPECT_NEAR(StudentQuantile(0.995, 30), 2.749996, 1e-6);
  EXPECT_NEAR(StudentQuantile(0.025, 10), -2.228139, 1e-6);
  EXPECT_DOUBLE_EQ(StudentQuantile(0.5, 7), 0);
  EXPECT_EQ(StudentQuantile(1, 7), kInf);
  EXPECT_EQ(StudentQuantile(0, 7), -kInf);
  // Upper tail and two-sided forms of the same numbers.
  EXPECT_NEAR(StudentUpperQuantile(0.025, 10), 2.228139, 1e-6);
  EXPECT_NEAR(StudentTwoSidedQuantile(0.95, 10), 2.228139, 1e-6);
  EXPECT_NEAR(StudentTwoSidedQuantile(0.99, 10), 3.169273, 1e-6);
  // A tiny alpha (Bonferroni over many pairs) is not lost to the rounding of 1 - alpha.
  EXPECT_NEAR(StudentUpperQuantile(1e-12, 1000), NormalUpperQuantile(1e-12), 0.15);
  EXPECT_GT(StudentUpperQuantile(1e-12, 1000), NormalUpperQuantile(1e-12));
  EXPECT_NEAR(NormalUpperQuantile(0.025), 1.959964, 1e-6);
}

TEST(Statistics, StudentCdfAndTwoSidedP) {
  EXPECT_NEAR(StudentCdf(2.228139, 10), 0.975, 1e-7);
  EXPECT_NEAR(StudentCdf(-2.228139, 10), 0.025, 1e-7);
  EXPECT_DOUBLE_EQ(StudentCdf(0, 3), 0.5);
  EXPECT_EQ(StudentCdf(kInf, 3), 1);
  EXPECT_EQ(StudentCdf(-kInf, 3), 0);
  EXPECT_NEAR(StudentTwoSidedP(2.228139, 10), 0.05, 1e-7);
  EXPECT_NEAR(StudentTwoSidedP(-2.228139, 10), 0.05, 1e-7);
  EXPECT_NEAR(StudentTwoSidedP(0, 5), 1, 1e-12);
  EXPECT_EQ(StudentTwoSidedP(kInf, 5), 0);
  EXPECT_EQ(StudentTwoSidedP(2, 0), 1);  // no degrees of freedom: no evidence
  // CDF and quantile are inverses.
  for (double p : {0.01, 0.2, 0.5, 0.9, 0.999}) {
    EXPECT_NEAR(StudentCdf(StudentQuantile(p, 4.5), 4.5), p, 1e-12) << p;
  }
}

TEST(Statistics, OutsideTheDomainIsNaNNotAnException) {
  EXPECT_TRUE(std::isnan(StudentQuantile(0.975, 0)));
  EXPECT_TRUE(std::isnan(StudentQuantile(0.975, -1)));
  EXPECT_TRUE(std::isnan(StudentQuantile(1.5, 10)));
  EXPECT_TRUE(std::isnan(StudentCdf(1, std::nan(""))));
  EXPECT_TRUE(std::isnan(StudentCdf(std::nan(""), 10)));
  EXPECT_TRUE(std::isnan(StudentTwoSidedP(std::nan(""), 10)));
  EXPECT_TRUE(std::isnan(NormalUpperQuantile(-1)));
}

TEST(Statistics, IncompleteBeta) {
  // I_0.4(2, 3) = 0.5248 (closed form for integer a, b).
  EXPECT_NEAR(IncompleteBeta(2, 3, 0.4), 0.5248, 1e-12);
  EXPECT_EQ(IncompleteBeta(2, 3, -1), 0);
  EXPECT_EQ(IncompleteBeta(2, 3, 2), 1);
}

}  // namespace
}  // namespace fabricscope
