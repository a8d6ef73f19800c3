// kernels/matvec.hpp's AVX2 + FMA body. This file alone is compiled for those instructions, chosen
// at run time (kernels/matvec.cpp).
#include <immintrin.h>

#include <cstddef>

#if defined(__clang__)  // clang ignores GCC's target pragmas (the fuzz preset builds with clang)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#include "kernels/matvec.hpp"

namespace attn {

namespace {

inline float horizontal_sum(__m256 v) {
  const __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 sum2 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
  return _mm_cvtss_f32(_mm_add_ss(sum2, _mm_shuffle_ps(sum2, sum2, 1)));
}

}  // namespace

void matvec_rows_avx2(const float* w, std::size_t cols, const float* x, const float* bias, float* y,
                      std::size_t first, std::size_t last) {
  const std::size_t vectorised = cols - cols % 8;
  std::size_t r = first;
  for (; r + 4 <= last; r += 4) {
    const float* w0 = w + r * cols;
    const float* w1 = w0 + cols;
    const float* w2 = w1 + cols;
    const float* w3 = w2 + cols;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    for (std::size_t c = 0; c < vectorised; c += 8) {
      const __m256 xv = _mm256_loadu_ps(x + c);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + c), xv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + c), xv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + c), xv, a3);
    }
    float s[4] = {horizontal_sum(a0), horizontal_sum(a1), horizontal_sum(a2), horizontal_sum(a3)};
    for (std::size_t c = vectorised; c < cols; ++c) {
      s[0] += w0[c] * x[c];
      s[1] += w1[c] * x[c];
      s[2] += w2[c] * x[c];
      s[3] += w3[c] * x[c];
    }
    for (std::size_t i = 0; i < 4; ++i)
      y[r + i] = s[i] + (bias != nullptr ? bias[r + i] : 0.0f);
  }
  for (; r < last; ++r) {
    const float* row = w + r * cols;
    __m256 a = _mm256_setzero_ps();
    for (std::size_t c = 0; c < vectorised; c += 8)
      a = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a);
    float s = horizontal_sum(a);
    for (std::size_t c = vectorised; c < cols; ++c)
      s += row[c] * x[c];
    y[r] = s + (bias != nullptr ? bias[r] : 0.0f);
  }
}

}  // namespace attn

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
