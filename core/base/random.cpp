#include "base/random.hpp"

#include <cmath>

namespace attn {

namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

template <class T>
void fill_normal(Rng& rng, T& tensor, float std) {
  for (float& v : tensor)
    v = static_cast<float>(rng.normal() * std);
}
}  // namespace

Rng::Rng(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& s : state_)
    s = splitmix64(x);
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const std::uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Rng::uniform() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u, v, s;
  do {
    u = 2.0 * uniform() - 1.0;
    v = 2.0 * uniform() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  // sqrt is exact under IEEE; log is the only libm call, and its last-ulp differences between
  // libms vanish when the result is rounded to float.
  const double factor = std::sqrt(-2.0 * std::log(s) / s);
  spare_ = v * factor;
  has_spare_ = true;
  return u * factor;
}

Tensor2 randn_matrix(Rng& rng, std::size_t rows, std::size_t cols, float std) {
  Tensor2 out({rows, cols});
  fill_normal(rng, out, std);
  return out;
}

Tensor3 randn(Rng& rng, std::size_t b, std::size_t t, std::size_t d, float std) {
  Tensor3 out({b, t, d});
  fill_normal(rng, out, std);
  return out;
}

}  // namespace attn
