// The result check of --check: exact bitwise comparison with the expected pattern.
#include "fabricscope/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "fabricscope/collective.h"

namespace fabricscope {
namespace {

// One rank's broadcast from itself: the expected output is its own input.
template <typename T>
ValidationCase BroadcastCase(DataType type, size_t count) {
  ValidationCase c;
  c.spec = &SpecOf(Collective::kBroadcast);
  c.counts = c.spec->counts(count * sizeof(T), sizeof(T), 1);
  c.type = type;
  c.seed = 3;
  return c;
}

TEST(ValidationTest, CorrectDoubleBufferHasNoWrongElement) {
  const ValidationCase c = BroadcastCase<double>(DataType::kDouble, 64);
  std::vector<double> buffer(c.counts.recv_count);
  FillInput(c, buffer.data());
  EXPECT_EQ(CountWrong(c, buffer.data()), 0);
}

TEST(ValidationTest, NanAndNegativeZeroAreWrongInDouble) {
  const ValidationCase c = BroadcastCase<double>(DataType::kDouble, 64);
  std::vector<double> buffer(c.counts.recv_count);
  FillInput(c, buffer.data());
  size_t zero = buffer.size();
  for (size_t i = 0; i < buffer.size(); ++i) {
    if (buffer[i] == 0.0) zero = i;
  }
  ASSERT_LT(zero, buffer.size()) << "the pattern has a zero";
  buffer[zero] = -0.0;
  buffer[(zero + 1) % buffer.size()] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(CountWrong(c, buffer.data()), 2);
}

TEST(ValidationTest, OneWrongFloatAndHalfElementIsCounted) {
  const ValidationCase f = BroadcastCase<float>(DataType::kFloat, 32);
  std::vector<float> floats(f.counts.recv_count);
  FillInput(f, floats.data());
  floats[5] += 1.0F;
  EXPECT_EQ(CountWrong(f, floats.data()), 1);

  const ValidationCase h = BroadcastCase<Half>(DataType::kHalf, 32);
  std::vector<Half> halves(h.counts.recv_count);
  FillInput(h, halves.data());
  EXPECT_EQ(CountWrong(h, halves.data()), 0);
  halves[7].bits ^= 1U;
  EXPECT_EQ(CountWrong(h, halves.data()), 1);
}

}  // namespace
}  // namespace fabricscope
