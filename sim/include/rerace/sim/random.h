// rerace/sim/random.h: the one seeded random stream, identical on every platform.
//
// The standard library's distributions differ between implementations, so rerace maps
// random bits to ranges itself. `Prng` is xoshiro256** seeded through splitmix64, and
// `Prng::Below(n)` is an unbiased integer in [0, n) by rejection: the same seed gives the
// same sequence under every compiler, standard library and optimization level.
//
//   Prng rng(42);
//   uint64_t die = rng.Below(6) + 1;
//
// A Prng is a plain value; it is not thread-safe (each strategy owns its own).
#pragma once

#include <cstdint>

namespace rerace::sim {

class Prng {
 public:
  explicit Prng(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& word : s_) word = SplitMix64(x);
  }

  // The next 64 random bits.
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // An unbiased integer in [0, n). REQUIRES: n > 0.
  // Lemire's multiply-and-reject (ACM TOMACS 2019): the high half of r*n, rejecting the few
  // low halves that would bias it. Integer-only, so it is the same everywhere; it divides
  // only in the rare rejection path.
  uint64_t Below(uint64_t n) {
    __extension__ using U128 = unsigned __int128;
    U128 m = static_cast<U128>(Next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<U128>(Next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // An integer in [lo, hi]. REQUIRES: lo <= hi.
  uint64_t Between(uint64_t lo, uint64_t hi) {
    if (hi - lo == UINT64_MAX) return Next();
    return lo + Below(hi - lo + 1);
  }

  // splitmix64: also used to derive independent seeds (run i of a fuzz campaign).
  static uint64_t SplitMix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace rerace::sim
