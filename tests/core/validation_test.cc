// The result check of --check: exact bitwise comparison with the expected pattern.
#include "fabricscope/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
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

// The all-reduce of `nranks` inputs summed one way or the other, premultiplied for mulsum as
// each rank's NCCL does (verifiable.h:31-34): the pattern must be exact in either order.
std::vector<std::byte> SummedInOrder(DataType type, ReduceOp op, int nranks, size_t count,
                                     bool reverse) {
  const size_t bytes = count * SizeOf(type);
  std::vector<std::byte> acc(bytes), input(bytes);
  for (int i = 0; i < nranks; ++i) {
    ValidationCase c;
    c.spec = &SpecOf(Collective::kAllReduce);
    c.counts = c.spec->counts(bytes, SizeOf(type), nranks);
    c.type = type;
    c.op = op;
    c.nranks = nranks;
    c.rank = reverse ? nranks - 1 - i : i;
    c.seed = 5;
    FillInput(c, input.data());
    if (op == ReduceOp::kMulSum) {
      Premultiply(type, input.data(), input.data(), count, PremulScalar(c.rank));
    }
    if (i == 0) {
      acc = input;
    } else {
      ReduceInto(type, CombiningOp(op), acc.data(), input.data(), count);
    }
  }
  return acc;
}

TEST(ValidationTest, Fp8AndMulsumPatternsAreExactInAnyOrderOnAnyRankCount) {
  for (DataType type : {DataType::kFloat8e4m3, DataType::kFloat8e5m2, DataType::kHalf}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMulSum}) {
      for (int nranks : {2, 3, 5, 8, 13, 16, 17, 33}) {
        const size_t count = 257;
        ValidationCase c;
        c.spec = &SpecOf(Collective::kAllReduce);
        c.counts = c.spec->counts(count * SizeOf(type), SizeOf(type), nranks);
        c.type = type;
        c.op = op;
        c.nranks = nranks;
        c.seed = 5;
        const std::vector<std::byte> forward = SummedInOrder(type, op, nranks, count, false);
        EXPECT_EQ(SummedInOrder(type, op, nranks, count, true), forward)
            << NameOf(type) << " " << NameOf(op) << " on " << nranks;
        EXPECT_EQ(CountWrong(c, forward.data()), 0)
            << NameOf(type) << " " << NameOf(op) << " on " << nranks;
        std::vector<std::byte> wrong = forward;
        wrong[count / 2] ^= std::byte{1};
        EXPECT_EQ(CountWrong(c, wrong.data()), 1)
            << NameOf(type) << " " << NameOf(op) << " on " << nranks;
      }
    }
  }
}

}  // namespace
}  // namespace fabricscope
