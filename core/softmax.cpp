#include "softmax.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "encoder_fast.hpp"

namespace attn {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float power_of_two(int e) {  // 2^e for -126 <= e <= 127
  const std::uint32_t bits = static_cast<std::uint32_t>(e + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// ATen's vec::reduce_all(+) over a row of float on AVX2: 8 lane sums, then lanes (i, i+4), then
// (i, i+2), then the last pair. Rows shorter than 8 are summed left to right.
float torch_row_sum(const float* x, std::size_t n) {
  if (n < 8) {
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j)
      sum += x[j];
    return sum;
  }
  float lanes[8];
  for (std::size_t l = 0; l < 8; ++l)
    lanes[l] = x[l];
  std::size_t d = 8;
  for (; d + 8 <= n; d += 8)
    for (std::size_t l = 0; l < 8; ++l)
      lanes[l] += x[d + l];
  for (std::size_t l = 0; d + l < n; ++l)
    lanes[l] += x[d + l];
  const float a0 = lanes[0] + lanes[4], a1 = lanes[1] + lanes[5], a2 = lanes[2] + lanes[6],
              a3 = lanes[3] + lanes[7];
  return (a0 + a2) + (a1 + a3);
}

// One row: out[j] = exp(in[j] - max) * (1 / sum), the order of operations of ATen's
// _vec_softmax_lastdim.
void softmax_row(const float* in, float* out, std::size_t n) {
  float max = kNegInf;
  for (std::size_t j = 0; j < n; ++j) {
    if (std::isnan(in[j])) {  // NaN propagates to the whole row, as in torch
      for (std::size_t k = 0; k < n; ++k)
        out[k] = std::numeric_limits<float>::quiet_NaN();
      return;
    }
    max = std::fmax(max, in[j]);
  }
  if (max == kNegInf) {  // fully masked (or empty): attend to nothing
    for (std::size_t j = 0; j < n; ++j)
      out[j] = 0.0f;
    return;
  }
  for (std::size_t j = 0; j < n; ++j)
    out[j] = torch_exp(in[j] - max);
  const float inverse = 1.0f / torch_row_sum(out, n);
  for (std::size_t j = 0; j < n; ++j)
    out[j] *= inverse;
}

template <class T>
T softmax_last_axis(const T& scores) {
  const std::size_t n = scores.shape(scores.dimension() - 1);
  if (n == 0) return T(scores.shape());
  if (best_fast_kernels() == FastKernels::avx2) {  // the same bits, 8 lanes at a time
    T out = scores;
    fast_softmax_rows(FastKernels::avx2, out.data(), out.size() / n, n, 1.0f);
    return out;
  }
  T out(scores.shape());
  for (std::size_t r = 0; r < scores.size() / n; ++r)
    softmax_row(scores.data() + r * n, out.data() + r * n, n);
  return out;
}
}  // namespace

// SLEEF 3's xexpf (sleefsimdsp.c) with FMA: x = q ln2 + s, exp(s) by a degree-7 polynomial.
float torch_exp(float x) {
  if (std::isnan(x)) return x;
  if (x < -104.0f) return 0.0f;
  if (x > 100.0f) return std::numeric_limits<float>::infinity();
  constexpr float kLog2e = 1.442695040888963407359924681001892137426645954152985934135449406931f;
  constexpr float kLn2Upper = 0.693145751953125f, kLn2Lower = 1.428606765330187045e-06f;
  const int q = static_cast<int>(std::nearbyint(x * kLog2e));
  float s = std::fma(static_cast<float>(q), -kLn2Upper, x);
  s = std::fma(static_cast<float>(q), -kLn2Lower, s);
  float u = 0.000198527617612853646278381f;
  u = std::fma(u, s, 0.00139304355252534151077271f);
  u = std::fma(u, s, 0.00833336077630519866943359f);
  u = std::fma(u, s, 0.0416664853692054748535156f);
  u = std::fma(u, s, 0.166666671633720397949219f);
  u = std::fma(u, s, 0.5f);
  u = 1.0f + std::fma(s * s, u, s);
  return u * power_of_two(q >> 1) * power_of_two(q - (q >> 1));  // u * 2^q without overflow
}

Tensor2 softmax(const Tensor2& scores) {
  return softmax_last_axis(scores);
}
Tensor3 softmax(const Tensor3& scores) {
  return softmax_last_axis(scores);
}
Tensor4 softmax(const Tensor4& scores) {
  return softmax_last_axis(scores);
}

Tensor3 softmax_naive(const Tensor3& scores) {
  Tensor3 out(scores.shape());
  const std::size_t n = scores.shape(2);
  for (std::size_t r = 0; n != 0 && r < scores.size() / n; ++r) {
    const float* in = scores.data() + r * n;
    float* o = out.data() + r * n;
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j)
      sum += (o[j] = torch_exp(in[j]));
    for (std::size_t j = 0; j < n; ++j)
      o[j] /= sum;
  }
  return out;
}

std::size_t count_fully_masked_rows(const Tensor3& scores) {
  const std::size_t n = scores.shape(2);
  if (n == 0) return 0;
  std::size_t count = 0;
  for (std::size_t r = 0; r < scores.size() / n; ++r) {
    bool masked = true;
    for (std::size_t j = 0; j < n && masked; ++j)
      masked = scores.data()[r * n + j] == kNegInf;
    count += masked;
  }
  return count;
}

Tensor2 causal_mask(std::size_t tokens) {
  Tensor2 mask = xt::zeros<float>({tokens, tokens});
  for (std::size_t i = 0; i < tokens; ++i)
    for (std::size_t j = i + 1; j < tokens; ++j)
      mask(i, j) = kNegInf;
  return mask;
}

Tensor3 apply_mask(const Tensor3& scores, const Tensor2& mask) {
  if (mask.shape(0) != scores.shape(1) || mask.shape(1) != scores.shape(2)) {
    throw Error("apply_mask", fmt::format("mask {} does not fit scores {}: expected ({}, {})",
                                          shape_string_of(mask), shape_string_of(scores),
                                          scores.shape(1), scores.shape(2)));
  }
  Tensor3 out = scores;
  for (std::size_t b = 0; b < scores.shape(0); ++b)
    for (std::size_t i = 0; i < scores.shape(1); ++i)
      for (std::size_t j = 0; j < scores.shape(2); ++j)
        out(b, i, j) += mask(i, j);
  return out;
}

Tensor3 softmax_backward(const Tensor3& weights, const Tensor3& d_weights) {
  if (weights.shape() != d_weights.shape()) {
    throw Error("softmax_backward",
                fmt::format("weights {} and their gradient {} differ in shape",
                            shape_string_of(weights), shape_string_of(d_weights)));
  }
  const std::size_t n = weights.shape(2), rows = weights.size() / std::max<std::size_t>(n, 1);
  Tensor3 d_scores(weights.shape());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* p = weights.data() + r * n;
    const float* dp = d_weights.data() + r * n;
    double dot = 0.0;
    for (std::size_t j = 0; j < n; ++j)
      dot += static_cast<double>(p[j]) * dp[j];
    for (std::size_t j = 0; j < n; ++j)
      d_scores.data()[r * n + j] = static_cast<float>(p[j] * (dp[j] - dot));
  }
  return d_scores;
}

}  // namespace attn
