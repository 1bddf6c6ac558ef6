// The simulator's hash: ECMP decisions and seeded choices, reproducible from the seed.
#pragma once

#include <cstdint>

namespace fabricscope::sim {

// splitmix64's finalizer: every input bit flips about half the output bits, so a modulo
// of the result spreads connections uniformly over next hops.
inline uint64_t Scramble(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t Mix(uint64_t seed, uint64_t key, uint64_t tag) {
  return Scramble(Scramble(Scramble(seed) ^ key) ^ tag);
}

// A connection's identity, as the 5-tuple (or QP number) a switch hashes.
inline uint64_t ConnectionKey(uint64_t group, uint64_t channel, uint64_t hop, uint64_t qp) {
  return Scramble(Scramble(Scramble(group) ^ channel) ^ hop) ^ (qp * 0x2545f4914f6cdd1dULL);
}

}  // namespace fabricscope::sim
