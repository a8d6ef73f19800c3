// A seeded generator whose numbers are the same on every machine and compiler: xoshiro256**
// seeded through splitmix64, with the normal distribution written here (std::normal_distribution
// is implementation-defined).
#pragma once

#include <cstdint>

#include "base/tensor.hpp"

namespace attn {

class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Standard normal (Marsaglia's polar method, in double, rounded to float by the callers).
  double normal();

 private:
  std::uint64_t state_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// Tensors of independent N(mean, std^2) draws, filled in row-major order.
Tensor2 randn_matrix(Rng& rng, std::size_t rows, std::size_t cols, float std = 1.0f);
Tensor3 randn(Rng& rng, std::size_t b, std::size_t t, std::size_t d, float std = 1.0f);

}  // namespace attn
