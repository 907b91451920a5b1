// A small deterministic random number generator (splitmix64), identical on every platform,
// whose whole state is one uint64 (saved in checkpoints).
// Source: Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014.
#pragma once

#include <cmath>
#include <cstdint>

namespace td {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : state_(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 24 bits of precision.
  float uniform() { return (float)(next_u64() >> 40) * (1.0f / 16777216.0f); }
  /// Uniform integer in [0, n) (n > 0); the tiny modulo bias is irrelevant here.
  uint64_t below(uint64_t n) { return next_u64() % n; }
  /// Standard normal (Box-Muller, one value per call).
  float normal() {
    double u1 = ((next_u64() >> 11) + 1) * (1.0 / 9007199254740993.0);  // (0, 1]
    double u2 = (next_u64() >> 11) * (1.0 / 9007199254740992.0);        // [0, 1)
    return (float)(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  uint64_t state_;
};

}  // namespace td
