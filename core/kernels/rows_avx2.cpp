// kernels/torch_order.hpp's row routines in 8 AVX2 + FMA lanes. This file alone is compiled for
// those instructions (the rest of the build stays generic, no -march=native), and with
// fp-contract=off, so that the compiler fuses no separate multiply and add into an FMA the scalar
// code does not have: the two give the same bits. SLEEF: Copyright Naoki Shibata and contributors
// 2010 - 2020, Boost Software License 1.0.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/torch_order.hpp"

#if defined(__clang__)  // clang ignores GCC's target pragmas (the fuzz preset builds with clang)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#pragma clang fp contract(off)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/rows_avx2.hpp"

namespace attn {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr std::size_t kLanes = 8;   // AVX2 floats; ATen's Vectorized<float>
constexpr std::size_t kChunk = 16;  // ATen's Welford chunk, in vectors
constexpr float kInvSqrt2Pi = 0.398942280401432677939946059934381868f;  // 1/√(2π)

inline __m256 splat(float v) {
  return _mm256_set1_ps(v);
}
inline __m256 bits(std::uint32_t b) {
  return _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(b)));
}
inline __m256 sign_mask() {
  return bits(0x80000000u);
}
inline __m256 abs8(__m256 x) {
  return _mm256_andnot_ps(sign_mask(), x);
}
inline __m256 neg8(__m256 x) {
  return _mm256_xor_ps(x, sign_mask());
}
// copysign(magnitude, sign)
inline __m256 copysign8(__m256 magnitude, __m256 sign) {
  return _mm256_or_ps(abs8(magnitude), _mm256_and_ps(sign, sign_mask()));
}
// 2^e for integer lanes e in [-126, 127]: (e + 127) << 23.
inline __m256 pow2_8(__m256i e) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
}
// static_cast<int>(std::nearbyint(x)) in the default rounding mode (to nearest, ties to even).
inline __m256i round_to_int8(__m256 x) {
  return _mm256_cvtps_epi32(x);
}

// torch_exp (SLEEF's expf_u10) on 8 lanes.
inline __m256 exp_sleef8(__m256 x) {
  constexpr float kLog2e = 1.442695040888963407359924681001892137426645954152985934135449406931f;
  constexpr float kLn2Upper = 0.693145751953125f, kLn2Lower = 1.428606765330187045e-06f;
  const __m256i q = round_to_int8(_mm256_mul_ps(x, splat(kLog2e)));
  const __m256 qf = _mm256_cvtepi32_ps(q);
  __m256 s = _mm256_fmadd_ps(qf, splat(-kLn2Upper), x);
  s = _mm256_fmadd_ps(qf, splat(-kLn2Lower), s);
  __m256 u = splat(0.000198527617612853646278381f);
  u = _mm256_fmadd_ps(u, s, splat(0.00139304355252534151077271f));
  u = _mm256_fmadd_ps(u, s, splat(0.00833336077630519866943359f));
  u = _mm256_fmadd_ps(u, s, splat(0.0416664853692054748535156f));
  u = _mm256_fmadd_ps(u, s, splat(0.166666671633720397949219f));
  u = _mm256_fmadd_ps(u, s, splat(0.5f));
  u = _mm256_add_ps(splat(1.0f), _mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s));
  const __m256i half = _mm256_srai_epi32(q, 1);
  __m256 r = _mm256_mul_ps(_mm256_mul_ps(u, pow2_8(half)), pow2_8(_mm256_sub_epi32(q, half)));
  r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(x, splat(-104.0f), _CMP_LT_OQ));
  r = _mm256_blendv_ps(r, splat(std::numeric_limits<float>::infinity()),
                       _mm256_cmp_ps(x, splat(100.0f), _CMP_GT_OQ));
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
}

// Lanes (i, i+4), then (i, i+2), then the last pair: vec::reduce_all's tree.
inline float reduce_add8(__m256 v) {
  alignas(32) float l[kLanes];
  _mm256_store_ps(l, v);
  const float a0 = l[0] + l[4], a1 = l[1] + l[5], a2 = l[2] + l[6], a3 = l[3] + l[7];
  return (a0 + a2) + (a1 + a3);
}

struct LaneMoments8 {
  std::int64_t count;
  __m256 mean, m2;
};
inline LaneMoments8 zero_moments8() {
  return {0, _mm256_setzero_ps(), _mm256_setzero_ps()};
}

// AddMomentsVec.
inline void add_moments8(std::int64_t count_add, __m256 mean_add, __m256 m2_add,
                         LaneMoments8& into) {
  const std::int64_t n = into.count + count_add;
  const __m256 c = splat(n == 0 ? 0.0f : static_cast<float>(count_add) / static_cast<float>(n));
  const __m256 before = splat(static_cast<float>(into.count));
  const __m256 delta = _mm256_sub_ps(mean_add, into.mean);
  into.mean = _mm256_add_ps(into.mean, _mm256_mul_ps(c, delta));
  into.m2 = _mm256_add_ps(
      into.m2,
      _mm256_add_ps(m2_add, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(delta, delta), c), before)));
  into.count = n;
}

// torch_row_moments on 8 lanes: Welford per lane over chunks of 16 vectors, chunks merged as a
// cascade, then the tail by scalar Welford, then the lanes merged into it.
RowMoments row_moments_avx2(const float* x, std::size_t n) {
  const std::size_t vectors = n / kLanes, chunks = (vectors + kChunk - 1) / kChunk;
  const std::size_t depth = ceil_log2(chunks);
  LaneMoments8 stack[64];  // depth <= 64: chunks < 2^64; depth >= 1 (ceil_log2)
  stack[0] = zero_moments8();
  for (std::size_t j = 1; j < depth; ++j)
    stack[j] = zero_moments8();
  for (std::size_t i = 0; i < chunks; ++i) {
    const float* chunk = x + i * kChunk * kLanes;
    const std::size_t count = std::min(kChunk, vectors - i * kChunk);
    __m256 mean = _mm256_setzero_ps(), m2 = _mm256_setzero_ps();
    for (std::size_t j = 0; j < count; ++j) {
      const __m256 c = splat(1.0f / static_cast<float>(j + 1));
      const __m256 v = _mm256_loadu_ps(chunk + j * kLanes);
      const __m256 delta = _mm256_sub_ps(v, mean);
      mean = _mm256_add_ps(mean, _mm256_mul_ps(delta, c));
      m2 = _mm256_add_ps(m2, _mm256_mul_ps(delta, _mm256_sub_ps(v, mean)));
    }
    add_moments8(static_cast<std::int64_t>(count), mean, m2, stack[0]);
    std::size_t mask = i + 1;
    for (std::size_t j = 1; j < depth && (mask & 1) == 0; ++j) {
      add_moments8(stack[j - 1].count, stack[j - 1].mean, stack[j - 1].m2, stack[j]);
      stack[j - 1] = zero_moments8();
      mask >>= 1;
    }
  }
  for (std::size_t j = 1; j < depth; ++j)
    add_moments8(stack[j].count, stack[j].mean, stack[j].m2, stack[0]);

  alignas(32) float lane_mean[kLanes], lane_m2[kLanes];
  _mm256_store_ps(lane_mean, stack[0].mean);
  _mm256_store_ps(lane_m2, stack[0].m2);
  return finish_row_moments(x, n, vectors, lane_mean, lane_m2);
}

// exp_onednn of feed_forward.cpp on 8 lanes.
inline __m256 exp_onednn8(__m256 v) {
  const __m256 ln_flt_min = bits(0xc2aeac50), ln_flt_max = bits(0x42b17218);
  const __m256 underflow = _mm256_cmp_ps(v, ln_flt_min, _CMP_LT_OQ);
  // std::fmin(v, max) is max for a NaN v; _mm256_min_ps returns its second operand then.
  v = _mm256_max_ps(_mm256_min_ps(v, ln_flt_max), ln_flt_min);
  const __m256 n = _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(v, bits(0x3fb8aa3b)), splat(0.5f)));
  const __m256 r = _mm256_fmadd_ps(neg8(n), bits(0x3f317218), v);
  __m256 scale = pow2_8(_mm256_cvttps_epi32(_mm256_sub_ps(n, splat(1.0f))));
  scale = _mm256_blendv_ps(scale, _mm256_setzero_ps(), underflow);
  __m256 p = bits(0x3c07cfce);
  p = _mm256_fmadd_ps(p, r, bits(0x3d2b9d0d));
  p = _mm256_fmadd_ps(p, r, bits(0x3e2aad40));
  p = _mm256_fmadd_ps(p, r, bits(0x3efffee3));
  p = _mm256_fmadd_ps(p, r, bits(0x3f7ffffb));
  p = _mm256_fmadd_ps(p, r, splat(1.0f));
  return _mm256_mul_ps(_mm256_mul_ps(p, scale), splat(2.0f));
}

// erf_t and erf_polynomial of torch_order.cpp on 8 lanes.
inline __m256 erf_t8(__m256 x) {
  return _mm256_div_ps(splat(1.0f), _mm256_fmadd_ps(bits(0x3ea7ba05), abs8(x), splat(1.0f)));
}
inline __m256 erf_polynomial8(__m256 t) {
  __m256 r = bits(0x3f87dc22);
  r = _mm256_fmadd_ps(r, t, bits(0xbfba00e3));
  r = _mm256_fmadd_ps(r, t, bits(0x3fb5f0e3));
  r = _mm256_fmadd_ps(r, t, bits(0xbe91a98e));
  return _mm256_fmadd_ps(r, t, bits(0x3e827906));
}

// gelu_erf_onednn on 8 lanes.
inline __m256 gelu_erf8(__m256 s) {
  const __m256 x = _mm256_mul_ps(s, bits(0x3f3504f3));
  const __m256 t = erf_t8(x);
  const __m256 e = _mm256_mul_ps(neg8(exp_onednn8(neg8(_mm256_mul_ps(x, x)))), t);
  const __m256 erf =
      _mm256_mul_ps(copysign8(splat(1.0f), s), _mm256_fmadd_ps(e, erf_polynomial8(t), splat(1.0f)));
  const __m256 half = _mm256_mul_ps(s, splat(0.5f));
  return _mm256_fmadd_ps(erf, half, half);
}

// gelu_erf_slope_onednn on 8 lanes.
inline __m256 gelu_erf_slope8(__m256 s) {
  const __m256 x = _mm256_mul_ps(s, bits(0x3f3504f3));
  const __m256 t = erf_t8(x);
  const __m256 gauss = exp_onednn8(neg8(_mm256_mul_ps(x, x)));
  const __m256 erf = _mm256_mul_ps(
      copysign8(splat(1.0f), s),
      _mm256_fmadd_ps(_mm256_mul_ps(neg8(gauss), t), erf_polynomial8(t), splat(1.0f)));
  const __m256 cdf = _mm256_fmadd_ps(erf, splat(0.5f), splat(0.5f));
  return _mm256_fmadd_ps(s, _mm256_mul_ps(gauss, splat(kInvSqrt2Pi)), cdf);
}

// SLEEF's double-float arithmetic (df.h, FMA flavour) on 8 lanes: as feed_forward.cpp's Float2.
struct F2 {
  __m256 x, y;
};
inline __m256 add8(__m256 a, __m256 b) {
  return _mm256_add_ps(a, b);
}
inline __m256 sub8(__m256 a, __m256 b) {
  return _mm256_sub_ps(a, b);
}
inline __m256 mul8(__m256 a, __m256 b) {
  return _mm256_mul_ps(a, b);
}
inline F2 df_add(F2 a, F2 b) {  // |a| >= |b|
  const __m256 s = add8(a.x, b.x);
  return {s, add8(add8(add8(sub8(a.x, s), b.x), a.y), b.y)};
}
inline F2 df_add2(F2 a, __m256 b) {
  const __m256 s = add8(a.x, b), v = sub8(s, a.x);
  return {s, add8(add8(sub8(a.x, sub8(s, v)), sub8(b, v)), a.y)};
}
inline F2 df_add2(F2 a, F2 b) {
  const __m256 s = add8(a.x, b.x), v = sub8(s, a.x);
  return {s, add8(add8(sub8(a.x, sub8(s, v)), sub8(b.x, v)), add8(a.y, b.y))};
}
inline F2 df_add(__m256 a, F2 b) {
  const __m256 s = add8(a, b.x);
  return {s, add8(add8(sub8(a, s), b.x), b.y)};
}
inline F2 df_mul(F2 a, __m256 b) {
  const __m256 p = mul8(a.x, b);
  return {p, _mm256_fmadd_ps(a.y, b, _mm256_fmsub_ps(a.x, b, p))};
}
inline F2 df_mul(F2 a, F2 b) {
  const __m256 p = mul8(a.x, b.x);
  return {p, _mm256_fmadd_ps(a.x, b.y, _mm256_fmadd_ps(a.y, b.x, _mm256_fmsub_ps(a.x, b.x, p)))};
}
inline F2 df_square(F2 a) {
  const __m256 p = mul8(a.x, a.x);
  return {p, _mm256_fmadd_ps(add8(a.x, a.x), a.y, _mm256_fmsub_ps(a.x, a.x, p))};
}
inline F2 df_reciprocal(F2 d) {
  const __m256 q = _mm256_div_ps(splat(1.0f), d.x);
  return {q, mul8(q, _mm256_fmadd_ps(neg8(d.y), q, _mm256_fmadd_ps(neg8(d.x), q, splat(1.0f))))};
}
inline F2 df_divide(F2 n, F2 d) {
  const __m256 t = _mm256_div_ps(splat(1.0f), d.x), q = mul8(n.x, t);
  const __m256 u = _mm256_fmsub_ps(t, n.x, q);
  const __m256 e = _mm256_fmadd_ps(neg8(d.y), t, _mm256_fmadd_ps(neg8(d.x), t, splat(1.0f)));
  return {q, _mm256_fmadd_ps(q, e, _mm256_fmadd_ps(n.y, t, u))};
}
// d * 2^(e>>1) * 2^(e - (e>>1)), as ldexp2.
inline __m256 ldexp2_8(__m256 d, __m256i e) {
  const __m256i half = _mm256_srai_epi32(e, 1);
  return mul8(mul8(d, pow2_8(half)), pow2_8(_mm256_sub_epi32(e, half)));
}

// tanh_sleef (SLEEF 3.5's tanhf_u10) on 8 lanes. Its exp (expk2f) takes {|x|, 0}, so the
// input's low part is 0 and the "below -104" case never happens.
inline __m256 tanh_sleef8(__m256 x) {
  constexpr float kLog2e = 1.442695040888963407359924681001892137426645954152985934135449406931f;
  constexpr float kLn2Upper = 0.693145751953125f, kLn2Lower = 1.428606765330187045e-06f;
  const __m256 a = abs8(x);
  const F2 d0{a, _mm256_setzero_ps()};
  const __m256i q = round_to_int8(mul8(add8(d0.x, d0.y), splat(kLog2e)));
  const __m256 qf = _mm256_cvtepi32_ps(q);
  F2 s = df_add2(d0, mul8(qf, splat(-kLn2Upper)));
  s = df_add2(s, mul8(qf, splat(-kLn2Lower)));
  __m256 u = splat(0.1980960224e-3f);
  u = _mm256_fmadd_ps(u, s.x, splat(0.1394256484e-2f));
  u = _mm256_fmadd_ps(u, s.x, splat(0.8333456703e-2f));
  u = _mm256_fmadd_ps(u, s.x, splat(0.4166637361e-1f));
  F2 t = df_add2(df_mul(s, u), splat(0.166666659414234244790680580464e+0f));
  t = df_add2(df_mul(s, t), splat(0.5f));
  t = df_add2(s, df_mul(df_square(s), t));
  t = df_add(splat(1.0f), t);
  F2 d{ldexp2_8(t.x, q), ldexp2_8(t.y, q)};
  const F2 e = df_reciprocal(d);
  d = df_divide(df_add(d, F2{neg8(e.x), neg8(e.y)}), df_add(d, e));
  __m256 y = add8(d.x, d.y);
  const __m256 saturated = _mm256_or_ps(_mm256_cmp_ps(a, splat(8.664339742f), _CMP_GT_OQ),
                                        _mm256_cmp_ps(y, y, _CMP_UNORD_Q));
  y = _mm256_blendv_ps(y, splat(1.0f), saturated);
  y = copysign8(y, x);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

inline __m256 gelu_tanh8(__m256 v) {
  constexpr float kBeta = static_cast<float>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
  const __m256 inner =
      mul8(splat(kBeta), _mm256_fmadd_ps(splat(0.044715f), mul8(mul8(v, v), v), v));
  return mul8(mul8(splat(0.5f), v), add8(splat(1.0f), tanh_sleef8(inner)));
}

}  // namespace

void softmax_row_avx2(float* x, std::size_t n, float divisor) {
  if (n < kLanes) {
    torch_softmax_row(x, n, divisor);
    return;
  }
  const std::size_t whole = n - n % kLanes;
  const __m256 div = splat(divisor);
  __m256 vmax = splat(kNegInf), unordered = _mm256_setzero_ps();
  if (divisor == 1.0f) {  // x / 1 = x: read only
    for (std::size_t j = 0; j < whole; j += kLanes) {
      const __m256 v = _mm256_loadu_ps(x + j);
      unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      vmax = _mm256_max_ps(vmax, v);
    }
  } else {
    for (std::size_t j = 0; j < whole; j += kLanes) {
      const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + j), div);
      _mm256_storeu_ps(x + j, v);
      unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      vmax = _mm256_max_ps(vmax, v);
    }
  }
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, vmax);
  float max = kNegInf;
  for (float l : lanes)
    max = std::fmax(max, l);
  bool nan = _mm256_movemask_ps(unordered) != 0;
  for (std::size_t j = whole; j < n; ++j) {
    x[j] = x[j] / divisor;
    nan = nan || std::isnan(x[j]);
    max = std::fmax(max, x[j]);
  }
  if (nan || max == kNegInf) {
    std::fill(x, x + n, nan ? kNaN : 0.0f);
    return;
  }
  const __m256 vm = splat(max);
  __m256 sum = _mm256_setzero_ps();
  for (std::size_t j = 0; j < whole; j += kLanes) {
    const __m256 e = exp_sleef8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm));
    _mm256_storeu_ps(x + j, e);
    // The first vector starts the lanes (0 + e = e exactly: e is never -0).
    sum = _mm256_add_ps(sum, e);
  }
  _mm256_store_ps(lanes, sum);
  for (std::size_t j = whole; j < n; ++j) {
    x[j] = torch_exp(x[j] - max);
    lanes[j - whole] += x[j];
  }
  const float inverse = 1.0f / reduce_add8(_mm256_load_ps(lanes));
  const __m256 vi = splat(inverse);
  for (std::size_t j = 0; j < whole; j += kLanes)
    _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), vi));
  for (std::size_t j = whole; j < n; ++j)
    x[j] *= inverse;
}

// One row's moments, its normalised values (when `normalised` is not null) and its output.
RowMoments layer_norm_row_avx2(const float* x, std::size_t n, const float* weight,
                               const float* bias, float eps, float* normalised, float* out) {
  const RowMoments m = row_moments_avx2(x, n);
  const float rstd = 1.0f / std::sqrt(m.variance + eps);
  const float shift = -rstd * m.mean;
  const __m256 vr = splat(rstd), vs = splat(shift);
  const std::size_t whole = n - n % kLanes;
  for (std::size_t j = 0; j < whole; j += kLanes) {
    const __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), vr, vs);
    if (normalised != nullptr) _mm256_storeu_ps(normalised + j, v);
    _mm256_storeu_ps(out + j,
                     _mm256_fmadd_ps(v, _mm256_loadu_ps(weight + j), _mm256_loadu_ps(bias + j)));
  }
  for (std::size_t j = whole; j < n; ++j) {
    const float v = std::fma(x[j], rstd, shift);
    if (normalised != nullptr) normalised[j] = v;
    out[j] = std::fma(v, weight[j], bias[j]);
  }
  return m;
}

void gelu_erf_backward_avx2(const float* x, const float* dy, float* dx, std::size_t n) {
  const std::size_t whole = n - n % kLanes;
  for (std::size_t i = 0; i < whole; i += kLanes)
    _mm256_storeu_ps(
        dx + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i), gelu_erf_slope8(_mm256_loadu_ps(x + i))));
  for (std::size_t i = whole; i < n; ++i)
    dx[i] = dy[i] * gelu_erf_slope_onednn(x[i]);
}

void gelu_avx2(float* x, std::size_t n, GeluApproximation approximate) {
  if (approximate == GeluApproximation::none) {
    if (n == 1) {
      torch_gelu(x, n, 0, approximate);
      return;
    }
    const std::size_t whole = n - n % kLanes;
    for (std::size_t i = 0; i < whole; i += kLanes)
      _mm256_storeu_ps(x + i, gelu_erf8(_mm256_loadu_ps(x + i)));
    torch_gelu(x, n, whole, approximate);
    return;
  }
  const std::size_t vectorised = n - n % 16;  // a multiple of 8; the rest goes to libm's tanh
  for (std::size_t i = 0; i < vectorised; i += kLanes)
    _mm256_storeu_ps(x + i, gelu_tanh8(_mm256_loadu_ps(x + i)));
  torch_gelu(x, n, vectorised, approximate);
}

}  // namespace attn

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
