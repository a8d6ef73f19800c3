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

// Row by row, so that the rows a thread takes are one sequential stream, the order the hardware
// prefetcher reads fastest (four rows side by side, four streams, read GPT-2 small's weights at
// 0.6 of the rate of one on this project's 2-core machine); four accumulators over 32 floats keep
// the FMAs' latency hidden. x stays in L1.
void matvec_rows_avx2(const float* w, std::size_t cols, const float* x, const float* bias, float* y,
                      std::size_t first, std::size_t last) {
  for (std::size_t r = first; r < last; ++r) {
    const float* row = w + r * cols;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    std::size_t c = 0;
    for (; c + 32 <= cols; c += 32) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 8), _mm256_loadu_ps(x + c + 8), a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 16), _mm256_loadu_ps(x + c + 16), a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 24), _mm256_loadu_ps(x + c + 24), a3);
    }
    for (; c + 8 <= cols; c += 8)
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a0);
    float s = horizontal_sum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; c < cols; ++c)
      s += row[c] * x[c];
    y[r] = s + (bias != nullptr ? bias[r] : 0.0f);
  }
}

float stream_sum_avx2(const float* data, std::size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
         a3 = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(data + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(data + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(data + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(data + i + 24));
  }
  float s = horizontal_sum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; i < n; ++i)
    s += data[i];
  return s;
}

}  // namespace attn

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
