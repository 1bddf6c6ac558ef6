// Private: a seeded random source whose sequence is the same on every platform and
// standard library (std::shuffle and the std distributions are not), so a quick-mode
// schedule or a simulated cluster is reproducible from its seed anywhere.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

namespace fabricscope {

// SplitMix64 (Steele, Lea, Flood 2014): tiny state, good statistical quality.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n), without modulo bias.
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = Next();
    while (x >= limit) x = Next();
    return x % n;
  }

  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Standard normal (Box-Muller; one of the pair is dropped for simplicity).
  double Normal() {
    const double u1 = 1.0 - Unit();  // (0, 1]: log stays finite
    const double u2 = Unit();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t state_;
};

// Fisher-Yates.
template <typename T>
void Shuffle(std::vector<T>& values, SplitMix& rng) {
  for (size_t i = values.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.Below(i));
    std::swap(values[i - 1], values[j]);
  }
}

}  // namespace fabricscope
