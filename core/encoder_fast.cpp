// The fast encoder layer. The elementwise kernels come twice: portable scalar code that calls the
// reference's own kernels (softmax.hpp, layer_norm.hpp, feed_forward.hpp), and an AVX2 + FMA
// section compiled for those instructions only (the rest of the build stays generic, no
// -march=native), chosen at run time. Both follow torch 1.13's order of operations step for step;
// the AVX2 section is compiled with fp-contract=off so that GCC does not fuse a separate multiply
// and add into an FMA the scalar code does not have: the two give the same bits.
#include "encoder_fast.hpp"

#include <immintrin.h>
#if defined(_OPENMP)
#include <omp.h>
// The loop that follows runs on the pool's `threads` threads (a variable of that name in scope),
// or on this thread alone when there is one. Without OpenMP (a build without oneDNN) it is a plain
// loop.
#define ATTN_PARALLEL_FOR \
  _Pragma("omp parallel for num_threads(threads) if (threads > 1) schedule(static)")
#else
#define ATTN_PARALLEL_FOR
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "error.hpp"
#include "gemm.hpp"
#include "matmul.hpp"
#include "softmax.hpp"

namespace attn {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr std::size_t kLanes = 8;   // AVX2 floats; ATen's Vectorized<float>
constexpr std::size_t kChunk = 16;  // ATen's Welford chunk, in vectors
constexpr float kSqrtHalf = 0.707106781186547524400844362104849039f;  // as feed_forward.cpp
constexpr float kInvSqrt2Pi = 0.398942280401432677939946059934381868f;
// Below this many elements an elementwise pass stays on one thread.
constexpr std::size_t kParallelElements = std::size_t{1} << 16;

// ---- scalar kernels: the reference's, on raw rows --------------------------------------------

// ATen's vec::reduce_all(+) over a row (the order of softmax.cpp's torch_row_sum).
float row_sum_scalar(const float* x, std::size_t n) {
  if (n < kLanes) {
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j)
      sum += x[j];
    return sum;
  }
  float lanes[kLanes];
  for (std::size_t l = 0; l < kLanes; ++l)
    lanes[l] = x[l];
  std::size_t d = kLanes;
  for (; d + kLanes <= n; d += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l)
      lanes[l] += x[d + l];
  for (std::size_t l = 0; d + l < n; ++l)
    lanes[l] += x[d + l];
  const float a0 = lanes[0] + lanes[4], a1 = lanes[1] + lanes[5], a2 = lanes[2] + lanes[6],
              a3 = lanes[3] + lanes[7];
  return (a0 + a2) + (a1 + a3);
}

// softmax(x / divisor) of one row in place, as scaled_dot_product_attention then softmax() do.
void softmax_row_scalar(float* x, std::size_t n, float divisor) {
  float max = kNegInf;
  bool nan = false;
  for (std::size_t j = 0; j < n; ++j) {
    x[j] = x[j] / divisor;
    nan = nan || std::isnan(x[j]);
    max = std::fmax(max, x[j]);
  }
  if (nan || max == kNegInf) {  // NaN spreads to the row; a fully masked row attends to nothing
    std::fill(x, x + n, nan ? kNaN : 0.0f);
    return;
  }
  for (std::size_t j = 0; j < n; ++j)
    x[j] = torch_exp(x[j] - max);
  const float inverse = 1.0f / row_sum_scalar(x, n);
  for (std::size_t j = 0; j < n; ++j)
    x[j] *= inverse;
}

// y = (x rstd - rstd mean) weight + bias with two FMAs (layer_norm.cpp's forward).
void layer_norm_apply_scalar(const float* x, std::size_t n, float rstd, float shift,
                             const float* weight, const float* bias, float* out) {
  for (std::size_t j = 0; j < n; ++j)
    out[j] = std::fma(std::fma(x[j], rstd, shift), weight[j], bias[j]);
}

void layer_norm_row_scalar(const float* x, std::size_t n, const float* weight, const float* bias,
                           float eps, float* out) {
  const RowMoments m = torch_row_moments(x, n);
  const float rstd = 1.0f / std::sqrt(m.variance + eps);
  layer_norm_apply_scalar(x, n, rstd, -rstd * m.mean, weight, bias, out);
}

float gelu_tanh_scalar(float v, bool sleef) {
  constexpr float kBeta = static_cast<float>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
  const float inner = kBeta * std::fma(0.044715f, v * v * v, v);
  return 0.5f * v * (1.0f + (sleef ? tanh_sleef(inner) : std::tanh(inner)));
}

// gelu() of feed_forward.cpp on n elements in place, from element `from` on.
void gelu_scalar(float* x, std::size_t n, std::size_t from, GeluApproximation approximate) {
  if (approximate == GeluApproximation::none) {
    if (n == 1) {  // torch's one-element path: libm's erf
      x[0] = x[0] * 0.5f * (1.0f + std::erf(x[0] * kSqrtHalf));
      return;
    }
    for (std::size_t i = from; i < n; ++i)
      x[i] = gelu_erf_onednn(x[i]);
    return;
  }
  const std::size_t vectorised = n - n % 16;  // ATen: 16 at a time with SLEEF, the rest with libm
  for (std::size_t i = from; i < n; ++i)
    x[i] = gelu_tanh_scalar(x[i], i < vectorised);
}

// layer_norm.cpp's scalar AddMoments, for merging the 8 lanes.
void add_moments(std::int64_t count_add, float mean_add, float m2_add, std::int64_t& count,
                 float& mean, float& m2) {
  const std::int64_t n = count + count_add;
  const float c = n == 0 ? 0.0f : static_cast<float>(count_add) / static_cast<float>(n);
  const float delta = mean_add - mean;
  mean += c * delta;
  m2 += m2_add + delta * delta * c * static_cast<float>(count);
  count = n;
}

std::size_t ceil_log2(std::size_t x) {  // ATen's CeilLog2: 1 for x <= 2
  if (x <= 2) return 1;
  std::size_t bits = 0;
  for (std::size_t v = x - 1; v != 0; v >>= 1)
    ++bits;
  return bits;
}

}  // namespace

// ---- AVX2 + FMA kernels -----------------------------------------------------------------------
#if defined(__clang__)  // clang ignores GCC's target pragmas (the fuzz preset builds with clang)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#pragma clang fp contract(off)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("fp-contract=off")
#endif

namespace {

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

void softmax_row_avx2(float* x, std::size_t n, float divisor) {
  if (n < kLanes) {
    softmax_row_scalar(x, n, divisor);
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
  LaneMoments8 stack[64];  // depth <= 64: chunks < 2^64
  for (std::size_t j = 0; j < depth; ++j)
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

  std::int64_t count = 0;
  float mean = 0.0f, m2 = 0.0f;
  for (std::size_t i = vectors * kLanes; i < n; ++i) {
    const float delta = x[i] - mean;
    ++count;
    mean += delta / static_cast<float>(count);
    m2 += delta * (x[i] - mean);
  }
  alignas(32) float lane_mean[kLanes], lane_m2[kLanes];
  _mm256_store_ps(lane_mean, stack[0].mean);
  _mm256_store_ps(lane_m2, stack[0].m2);
  for (std::size_t l = 0; l < kLanes; ++l)
    add_moments(static_cast<std::int64_t>(vectors), lane_mean[l], lane_m2[l], count, mean, m2);
  return {mean, m2 / static_cast<float>(n)};
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

// gelu_erf_onednn on 8 lanes.
inline __m256 gelu_erf8(__m256 s) {
  const __m256 x = _mm256_mul_ps(s, bits(0x3f3504f3));
  const __m256 t =
      _mm256_div_ps(splat(1.0f), _mm256_fmadd_ps(bits(0x3ea7ba05), abs8(x), splat(1.0f)));
  const __m256 e = _mm256_mul_ps(neg8(exp_onednn8(neg8(_mm256_mul_ps(x, x)))), t);
  __m256 r = bits(0x3f87dc22);
  r = _mm256_fmadd_ps(r, t, bits(0xbfba00e3));
  r = _mm256_fmadd_ps(r, t, bits(0x3fb5f0e3));
  r = _mm256_fmadd_ps(r, t, bits(0xbe91a98e));
  r = _mm256_fmadd_ps(r, t, bits(0x3e827906));
  const __m256 erf = _mm256_mul_ps(copysign8(splat(1.0f), s), _mm256_fmadd_ps(e, r, splat(1.0f)));
  const __m256 half = _mm256_mul_ps(s, splat(0.5f));
  return _mm256_fmadd_ps(erf, half, half);
}

// gelu_erf_slope_onednn on 8 lanes.
inline __m256 gelu_erf_slope8(__m256 s) {
  const __m256 x = _mm256_mul_ps(s, bits(0x3f3504f3));
  const __m256 t =
      _mm256_div_ps(splat(1.0f), _mm256_fmadd_ps(bits(0x3ea7ba05), abs8(x), splat(1.0f)));
  const __m256 gauss = exp_onednn8(neg8(_mm256_mul_ps(x, x)));
  __m256 r = bits(0x3f87dc22);
  r = _mm256_fmadd_ps(r, t, bits(0xbfba00e3));
  r = _mm256_fmadd_ps(r, t, bits(0x3fb5f0e3));
  r = _mm256_fmadd_ps(r, t, bits(0xbe91a98e));
  r = _mm256_fmadd_ps(r, t, bits(0x3e827906));
  const __m256 erf = _mm256_mul_ps(copysign8(splat(1.0f), s),
                                   _mm256_fmadd_ps(_mm256_mul_ps(neg8(gauss), t), r, splat(1.0f)));
  const __m256 cdf = _mm256_fmadd_ps(erf, splat(0.5f), splat(0.5f));
  return _mm256_fmadd_ps(s, _mm256_mul_ps(gauss, splat(kInvSqrt2Pi)), cdf);
}

void gelu_erf_backward_avx2(const float* x, const float* dy, float* dx, std::size_t n) {
  const std::size_t whole = n - n % kLanes;
  for (std::size_t i = 0; i < whole; i += kLanes)
    _mm256_storeu_ps(
        dx + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i), gelu_erf_slope8(_mm256_loadu_ps(x + i))));
  for (std::size_t i = whole; i < n; ++i)
    dx[i] = dy[i] * gelu_erf_slope_onednn(x[i]);
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

void gelu_avx2(float* x, std::size_t n, GeluApproximation approximate) {
  if (approximate == GeluApproximation::none) {
    if (n == 1) {
      gelu_scalar(x, n, 0, approximate);
      return;
    }
    const std::size_t whole = n - n % kLanes;
    for (std::size_t i = 0; i < whole; i += kLanes)
      _mm256_storeu_ps(x + i, gelu_erf8(_mm256_loadu_ps(x + i)));
    gelu_scalar(x, n, whole, approximate);
    return;
  }
  const std::size_t vectorised = n - n % 16;  // a multiple of 8; the rest goes to libm's tanh
  for (std::size_t i = 0; i < vectorised; i += kLanes)
    _mm256_storeu_ps(x + i, gelu_tanh8(_mm256_loadu_ps(x + i)));
  gelu_scalar(x, n, vectorised, approximate);
}

}  // namespace

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

void fast_softmax_rows(FastKernels kernels, float* x, std::size_t rows, std::size_t n,
                       float divisor) {
  for (std::size_t r = 0; r < rows; ++r) {
    if (kernels == FastKernels::avx2) {
      softmax_row_avx2(x + r * n, n, divisor);
    } else {
      softmax_row_scalar(x + r * n, n, divisor);
    }
  }
}

void fast_layer_norm_rows(FastKernels kernels, const float* x, std::size_t rows, std::size_t n,
                          const float* weight, const float* bias, float eps, float* out) {
  [[maybe_unused]] const int threads = rows * n >= kParallelElements ? own_loop_threads() : 1;
  ATTN_PARALLEL_FOR
  for (std::size_t r = 0; r < rows; ++r) {
    if (kernels == FastKernels::avx2) {
      layer_norm_row_avx2(x + r * n, n, weight, bias, eps, nullptr, out + r * n);
    } else {
      layer_norm_row_scalar(x + r * n, n, weight, bias, eps, out + r * n);
    }
  }
}

RowMoments fast_layer_norm_row_kept(FastKernels kernels, const float* x, std::size_t n,
                                    const float* weight, const float* bias, float eps,
                                    float* normalised, float* out) {
  if (kernels == FastKernels::avx2)
    return layer_norm_row_avx2(x, n, weight, bias, eps, normalised, out);
  const RowMoments m = torch_row_moments(x, n);
  const float rstd = 1.0f / std::sqrt(m.variance + eps);
  const float shift = -rstd * m.mean;
  for (std::size_t j = 0; j < n; ++j) {
    normalised[j] = std::fma(x[j], rstd, shift);
    out[j] = std::fma(normalised[j], weight[j], bias[j]);
  }
  return m;
}

void fast_gelu_erf_backward(FastKernels kernels, const float* x, const float* dy, float* dx,
                            std::size_t n) {
  if (kernels == FastKernels::avx2) {
    gelu_erf_backward_avx2(x, dy, dx, n);
    return;
  }
  for (std::size_t i = 0; i < n; ++i)
    dx[i] = dy[i] * gelu_erf_slope_onednn(x[i]);
}

namespace {
void gelu_part(FastKernels kernels, float* x, std::size_t n, GeluApproximation approximate) {
  if (kernels == FastKernels::avx2) {
    gelu_avx2(x, n, approximate);
  } else {
    gelu_scalar(x, n, 0, approximate);
  }
}
}  // namespace

void fast_gelu(FastKernels kernels, float* x, std::size_t n, GeluApproximation approximate) {
  [[maybe_unused]] const int threads = n >= kParallelElements ? own_loop_threads() : 1;
  if (threads <= 1) {
    gelu_part(kernels, x, n, approximate);
    return;
  }
  // Parts of a multiple of 16 elements, the last taking the rest: each part's tail rule (the
  // elements past its last multiple of 16) then falls on the whole tensor's tail, as torch's.
  // A part of one element would take torch's one-element path (libm's erf), which only a whole
  // tensor of one element takes: it joins the part before it.
  const std::size_t chunk = (n / static_cast<std::size_t>(threads) + 15) / 16 * 16;
  std::size_t parts = (n + chunk - 1) / chunk;
  if (parts > 1 && n - (parts - 1) * chunk == 1) --parts;
  ATTN_PARALLEL_FOR
  for (std::size_t part = 0; part < parts; ++part) {
    const std::size_t from = part * chunk;
    const std::size_t to = part + 1 == parts ? n : from + chunk;
    gelu_part(kernels, x + from, to - from, approximate);
  }
}

void fast_bias_gelu_rows(FastKernels kernels, float* x, std::size_t rows, std::size_t cols,
                         const float* bias, GeluApproximation approximate) {
  const std::size_t n = rows * cols;
  if (n == 0) return;
  // Blocks of whole rows whose element count is a multiple of 16, the last taking the rest: each
  // block's tail rule then falls on the whole tensor's tail. About 64 KiB each (at least the fewest
  // rows that make a multiple of 16), so that the GELU reads what the bias add just wrote from
  // cache.
  constexpr std::size_t kBlockElements = std::size_t{1} << 14;
  const std::size_t step = 16 / std::gcd(cols, std::size_t{16});  // rows per multiple of 16
  const std::size_t block_rows = std::max<std::size_t>(1, kBlockElements / (cols * step)) * step;
  std::size_t blocks = (rows + block_rows - 1) / block_rows;
  // A part of one element would take torch's one-element path (libm's erf), which only a whole
  // tensor of one element takes: a last block of one element joins the block before it.
  if (blocks > 1 && (rows - (blocks - 1) * block_rows) * cols == 1) --blocks;
  [[maybe_unused]] const int threads = n >= kParallelElements ? own_loop_threads() : 1;
  ATTN_PARALLEL_FOR
  for (std::size_t block = 0; block < blocks; ++block) {
    const std::size_t first = block * block_rows;
    const std::size_t last = block + 1 == blocks ? rows : first + block_rows;
    for (std::size_t r = first; r < last; ++r)
      for (std::size_t j = 0; j < cols; ++j)
        x[r * cols + j] += bias[j];
    gelu_part(kernels, x + first * cols, (last - first) * cols, approximate);
  }
}

namespace {

#if defined(_OPENMP)
int thread_index() {
  return omp_get_thread_num();
}
#else
int thread_index() {
  return 0;
}
#endif

// out = a + b elementwise (the residual connections; plain float adds, as torch's).
void add(const float* a, const float* b, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

// C (rows, cols) = x (rows, in) Wᵀ + bias, as linear(): the bias preloaded, then beta = 1.
void linear_into(const float* x, std::size_t rows, std::size_t in, const std::vector<float>& weight,
                 const std::vector<float>& bias, float* out) {
  const std::size_t cols = bias.size();
  [[maybe_unused]] const int threads = rows * cols >= kParallelElements ? own_loop_threads() : 1;
  ATTN_PARALLEL_FOR
  for (std::size_t r = 0; r < rows; ++r)
    std::copy(bias.begin(), bias.end(), out + r * cols);
  sgemm(false, true, rows, cols, in, 1.0f, x, in, weight.data(), in, 1.0f, out, cols);
}

// out (rows, cols) = GELU(x Wᵀ + bias): the GEMM alone (beta = 0), then the bias and GELU in one
// pass (fast_bias_gelu_rows), where the unfused way writes the bias before the GEMM and reads the
// whole output again for GELU.
void linear_gelu_into(FastKernels kernels, const float* x, std::size_t rows, std::size_t in,
                      const std::vector<float>& weight, const std::vector<float>& bias,
                      GeluApproximation approximate, float* out) {
  const std::size_t cols = bias.size();
  sgemm(false, true, rows, cols, in, 1.0f, x, in, weight.data(), in, 0.0f, out, cols);
  fast_bias_gelu_rows(kernels, out, rows, cols, bias.data(), approximate);
}

// out (rows, cols) = residual + (x Wᵀ + bias): the sublayer's last Linear and the residual add in
// one GEMM. One pass preloads residual + bias into the output, and the GEMM adds x Wᵀ to it
// (beta = 1), where the unfused way writes the bias, runs the GEMM, then reads both sums again to
// add them. The sum rounds in another order than the reference's (the tests hold it within
// their tolerances). `out` may be `residual`'s storage, not x's.
void linear_residual_into(const float* x, std::size_t rows, std::size_t in,
                          const std::vector<float>& weight, const std::vector<float>& bias,
                          const float* residual, float* out) {
  const std::size_t cols = bias.size();
  [[maybe_unused]] const int threads = rows * cols >= kParallelElements ? own_loop_threads() : 1;
  ATTN_PARALLEL_FOR
  for (std::size_t r = 0; r < rows; ++r)
    add(residual + r * cols, bias.data(), out + r * cols, cols);
  sgemm(false, true, rows, cols, in, 1.0f, x, in, weight.data(), in, 1.0f, out, cols);
}

// The reference divides the scores by sqrt(hs) in float. When sqrt(hs) is a power of two (hs = 64
// gives 8) that division is exact, and so is multiplying by its inverse inside the Q Kᵀ GEMM
// (alpha): the same bits (short of results below FLT_MIN), one pass over the scores fewer.
// Otherwise the softmax divides.
struct ScoreScaling {
  float alpha, divisor;
};
ScoreScaling score_scaling(std::size_t head_size) {
  const float root = std::sqrt(static_cast<float>(head_size));
  int exponent = 0;
  if (std::frexp(root, &exponent) == 0.5f) return {1.0f / root, 1.0f};
  return {1.0f, root};
}

std::vector<float> flat(const Tensor2& t) {
  return {t.begin(), t.end()};
}
std::vector<float> flat(const Tensor1& t) {
  return {t.begin(), t.end()};
}

void check_linear(const Linear& l, std::size_t out, std::size_t in, const char* name) {
  if (l.weight.shape(0) != out || l.weight.shape(1) != in || !l.has_bias || l.bias.size() != out) {
    throw Error("pack",
                fmt::format("{} has weight {} and {} bias: expected ({}, {}) with a bias of {}",
                            name, shape_string_of(l.weight),
                            l.has_bias ? shape_string_of(l.bias) : "no", out, in, out));
  }
}

}  // namespace

FastKernels best_fast_kernels() {
  static const bool avx2 = [] {
    const char* forced = std::getenv("ATTN_FAST_KERNELS");
    if (forced != nullptr && std::string_view(forced) == "scalar") return false;
    return cpu_has_avx2();
  }();
  return avx2 ? FastKernels::avx2 : FastKernels::scalar;
}

std::string_view kernels_name(FastKernels kernels) {
  return kernels == FastKernels::avx2 ? "avx2+fma" : "scalar";
}

PackedEncoderLayer pack(const EncoderLayer& layer) {
  const BookMultiHead& m = layer.attention;
  const FeedForward& ff = layer.feed_forward;
  if (ff.variant != FeedForwardVariant::book) {
    throw Error("pack",
                fmt::format("the fast path runs the book's layer: feed-forward is {}, not book",
                            variant_name(ff.variant)));
  }
  const std::size_t d = m.output_linear.weight.shape(0), heads = m.heads.size();
  if (d == 0 || heads == 0 || d % heads != 0) {
    throw Error("pack", fmt::format("d_model={} with {} heads: expected H heads of D/H", d, heads));
  }
  const std::size_t hs = d / heads, f = ff.linear_1.weight.shape(0);
  PackedEncoderLayer p;
  p.placement = layer.placement;
  p.d_model = d;
  p.heads = heads;
  p.head_size = hs;
  p.d_ff = f;
  p.qkv_weight.resize(3 * d * d);
  p.qkv_bias.resize(3 * d);
  for (std::size_t h = 0; h < heads; ++h) {
    const AttentionHead& head = m.heads[h];
    const Linear* parts[3] = {&head.q, &head.k, &head.v};
    for (std::size_t part = 0; part < 3; ++part) {
      check_linear(*parts[part], hs, d, "an attention head's q, k or v");
      // Rows part*D + h*hs .. +hs: output columns of the (T, 3D) buffer.
      const std::size_t row = part * d + h * hs;
      std::copy(parts[part]->weight.begin(), parts[part]->weight.end(),
                p.qkv_weight.begin() + row * d);
      std::copy(parts[part]->bias.begin(), parts[part]->bias.end(), p.qkv_bias.begin() + row);
    }
  }
  check_linear(m.output_linear, d, d, "output_linear");
  check_linear(ff.linear_1, f, d, "linear_1");
  check_linear(ff.linear_2, d, f, "linear_2");
  for (const LayerNorm* norm : {&layer.layer_norm_1, &layer.layer_norm_2}) {
    if (norm->weight.size() != d || norm->bias.size() != d) {
      throw Error("pack",
                  fmt::format("a LayerNorm has weight {} and bias {}: expected ({})",
                              shape_string_of(norm->weight), shape_string_of(norm->bias), d));
    }
    check_eps(norm->eps, "pack");
  }
  p.out_weight = flat(m.output_linear.weight);
  p.out_bias = flat(m.output_linear.bias);
  p.norm_1_weight = flat(layer.layer_norm_1.weight);
  p.norm_1_bias = flat(layer.layer_norm_1.bias);
  p.norm_1_eps = layer.layer_norm_1.eps;
  p.norm_2_weight = flat(layer.layer_norm_2.weight);
  p.norm_2_bias = flat(layer.layer_norm_2.bias);
  p.norm_2_eps = layer.layer_norm_2.eps;
  p.ff_1_weight = flat(ff.linear_1.weight);
  p.ff_1_bias = flat(ff.linear_1.bias);
  p.ff_2_weight = flat(ff.linear_2.weight);
  p.ff_2_bias = flat(ff.linear_2.bias);
  p.approximate = ff.approximate;
  return p;
}

namespace {
// One head of one sequence (`pair` = sequence x H + head): Q_h K_hᵀ, softmax, P V_h, on this
// thread's scores buffer.
void attention_head(const PackedEncoderLayer& layer, Workspace& w, const float* qkv,
                    std::size_t pair, std::size_t t, ScoreScaling scaling, FastKernels k) {
  const std::size_t d = layer.d_model, hs = layer.head_size;
  const std::size_t b = pair / layer.heads, h = pair % layer.heads;
  const float* sequence = qkv + b * t * 3 * d;
  float* context = w.context.data() + b * t * d;
  float* scores = w.scores.data() + static_cast<std::size_t>(thread_index()) * t * t;
  const float* q = sequence + h * hs;
  const float* keys = sequence + d + h * hs;
  const float* values = sequence + 2 * d + h * hs;
  // Q_h K_hᵀ: (T,hs) @ (hs,T) -> (T,T), both read in place from the fused buffer.
  sgemm(false, true, t, t, hs, scaling.alpha, q, 3 * d, keys, 3 * d, 0.0f, scores, t);
  fast_softmax_rows(k, scores, t, t, scaling.divisor);
  // P V_h: (T,T) @ (T,hs) -> the head's columns of the concatenation.
  sgemm(false, false, t, hs, t, 1.0f, scores, t, values, 3 * d, 0.0f, context + h * hs, d);
}
}  // namespace

Workspace make_workspace(const PackedEncoderLayer& layer, std::size_t tokens, FastKernels kernels) {
  return make_workspace(layer, 1, tokens, kernels);
}

Workspace make_workspace(const PackedEncoderLayer& layer, std::size_t batch, std::size_t tokens,
                         FastKernels kernels) {
  if (kernels == FastKernels::avx2 && !cpu_has_avx2()) {
    throw Error("make_workspace", "this CPU has no AVX2 and FMA: use the scalar kernels");
  }
  Workspace w;
  w.capacity = batch * tokens;
  w.sequence = tokens;
  w.kernels = kernels;
  const std::size_t d = layer.d_model, rows = batch * tokens;
  w.qkv.resize(rows * 3 * d);
  // One scores buffer per thread that may run the heads.
  w.scores.resize(static_cast<std::size_t>(std::max(1, own_loop_threads())) * tokens * tokens);
  w.context.resize(rows * d);
  w.residual.resize(rows * d);
  w.normed.resize(rows * d);
  w.hidden.resize(rows * layer.d_ff);
  return w;
}

std::size_t workspace_bytes(const Workspace& w) {
  return sizeof(float) * (w.qkv.size() + w.scores.size() + w.context.size() + w.residual.size() +
                          w.normed.size() + w.hidden.size());
}

void forward_fast(const PackedEncoderLayer& layer, const float* x, std::size_t tokens, Workspace& w,
                  float* out) {
  forward_fast(layer, x, 1, tokens, w, out);
}

void forward_fast(const PackedEncoderLayer& layer, const float* x, std::size_t batch,
                  std::size_t tokens, Workspace& w, float* out) {
  if (tokens == 0 || batch == 0 || tokens > w.sequence || batch > w.capacity / tokens) {
    throw Error(
        "forward_fast",
        fmt::format("{} tokens for a workspace of {}: make_workspace(layer, tokens) first",
                    batch == 1 ? fmt::format("{}", tokens) : fmt::format("{} x {}", batch, tokens),
                    w.capacity));
  }
  const std::size_t t = tokens, d = layer.d_model, f = layer.d_ff, hs = layer.head_size;
  const std::size_t rows = batch * t;
  if (w.qkv.size() < rows * 3 * d || w.context.size() < rows * d || w.residual.size() < rows * d ||
      w.normed.size() < rows * d || w.hidden.size() < rows * f || w.scores.size() < t * t) {
    throw Error("forward_fast", fmt::format("the workspace was made for a narrower layer than D = "
                                            "{}, F = {}: make_workspace(layer, batch, tokens) "
                                            "for this layer",
                                            d, f));
  }
  const FastKernels k = w.kernels;
  const bool pre = layer.placement == NormPlacement::pre;

  // Attention on `in` (pre: LN1(x); post: x), into w.context.
  const float* in = x;
  if (pre) {
    fast_layer_norm_rows(k, x, rows, d, layer.norm_1_weight.data(), layer.norm_1_bias.data(),
                         layer.norm_1_eps, w.normed.data());
    in = w.normed.data();
  }
  float* qkv = w.qkv.data();
  linear_into(in, rows, d, layer.qkv_weight, layer.qkv_bias, qkv);  // (BT,D) @ (D,3D) -> (BT,3D)
  const ScoreScaling scaling = score_scaling(hs);
  // One (T,T) scores buffer per thread; the heads of every sequence are shared out among them.
  const std::size_t pairs = batch * layer.heads;
  [[maybe_unused]] const int threads = static_cast<int>(
      std::min({static_cast<std::size_t>(own_loop_threads()), w.scores.size() / (t * t), pairs}));
  // An exception must not leave the parallel loop (OpenMP would end the program): the first is
  // kept, the remaining heads are skipped, and it is thrown after the loop.
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  ATTN_PARALLEL_FOR
  for (std::size_t pair = 0; pair < pairs; ++pair) {
    if (failed.load(std::memory_order_relaxed)) continue;
    try {
      attention_head(layer, w, qkv, pair, t, scaling, k);
    } catch (...) {
      if (!failed.exchange(true)) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  // residual_1: pre x + attention; post LN1(x + attention). The output projection adds straight
  // onto x (linear_residual_into).
  float* residual = w.residual.data();
  if (pre) {
    linear_residual_into(w.context.data(), rows, d, layer.out_weight, layer.out_bias, x, residual);
    fast_layer_norm_rows(k, residual, rows, d, layer.norm_2_weight.data(), layer.norm_2_bias.data(),
                         layer.norm_2_eps, w.normed.data());
    in = w.normed.data();
  } else {
    linear_residual_into(w.context.data(), rows, d, layer.out_weight, layer.out_bias, x,
                         w.normed.data());
    fast_layer_norm_rows(k, w.normed.data(), rows, d, layer.norm_1_weight.data(),
                         layer.norm_1_bias.data(), layer.norm_1_eps, residual);
    in = residual;
  }
  // Feed-forward on `in` (pre: LN2(residual_1); post: residual_1), its last Linear adding onto
  // residual_1.
  linear_gelu_into(k, in, rows, d, layer.ff_1_weight, layer.ff_1_bias, layer.approximate,
                   w.hidden.data());  // (BT,D) -> (BT,F)
  if (pre) {
    linear_residual_into(w.hidden.data(), rows, f, layer.ff_2_weight, layer.ff_2_bias, residual,
                         out);  // (BT,F) -> (BT,D)
  } else {
    linear_residual_into(w.hidden.data(), rows, f, layer.ff_2_weight, layer.ff_2_bias, residual,
                         w.normed.data());
    fast_layer_norm_rows(k, w.normed.data(), rows, d, layer.norm_2_weight.data(),
                         layer.norm_2_bias.data(), layer.norm_2_eps, out);
  }
}

Tensor2 forward_fast(const PackedEncoderLayer& layer, const Tensor2& x, Workspace& workspace) {
  if (x.shape(1) != layer.d_model) {
    throw Error("forward_fast",
                fmt::format("x {} does not fit a layer of width D = {}: expected (T, {})",
                            shape_string_of(x), layer.d_model, layer.d_model));
  }
  const std::size_t tokens = x.shape(0);
  if (tokens > workspace.capacity || tokens > workspace.sequence)
    workspace = make_workspace(layer, tokens, workspace.kernels);
  Tensor2 out({tokens, layer.d_model});
  forward_fast(layer, x.data(), tokens, workspace, out.data());
  return out;
}

namespace {
void pack_embeddings(const Embeddings& e, PackedEncoder& p) {
  const Tensor2& tokens = e.token_embeddings.weight;
  const Tensor2& positions = e.position_embeddings.weight;
  const std::size_t d = tokens.shape(1);
  if (positions.shape(1) != d || e.layer_norm.weight.size() != d || e.layer_norm.bias.size() != d) {
    throw Error("pack", fmt::format("embeddings of {} and {} with a LayerNorm of {}: expected one "
                                    "width",
                                    shape_string_of(tokens), shape_string_of(positions),
                                    shape_string_of(e.layer_norm.weight)));
  }
  check_eps(e.layer_norm.eps, "pack");
  p.vocab = tokens.shape(0);
  p.positions = positions.shape(0);
  p.d_model = d;
  p.token_embeddings = flat(tokens);
  p.position_embeddings = flat(positions);
  p.norm_weight = flat(e.layer_norm.weight);
  p.norm_bias = flat(e.layer_norm.bias);
  p.norm_eps = e.layer_norm.eps;
}

void check_layer_width(const PackedEncoder& p, const PackedEncoderLayer& layer) {
  if (layer.d_model != p.d_model) {
    throw Error("pack",
                fmt::format("a layer of width {} after embeddings of width {}: expected one "
                            "width",
                            layer.d_model, p.d_model));
  }
}
}  // namespace

PackedEncoder pack(const Encoder& encoder) {
  if (!encoder.with_embeddings) {
    throw Error("pack", "the fast encoder starts from ids: expected an encoder with embeddings");
  }
  PackedEncoder p;
  pack_embeddings(encoder.embeddings, p);
  for (const EncoderLayer& layer : encoder.layers) {
    p.layers.push_back(pack(layer));
    check_layer_width(p, p.layers.back());
  }
  return p;
}

PackedEncoder init_packed_encoder(Rng& rng, const EncoderConfig& config, NormPlacement placement) {
  PackedEncoder p;
  pack_embeddings(init_embeddings(rng, config), p);
  for (std::size_t i = 0; i < config.num_hidden_layers; ++i) {
    p.layers.push_back(pack(init_encoder_layer(rng, config, placement)));
    check_layer_width(p, p.layers.back());
  }
  return p;
}

std::size_t packed_bytes(const PackedEncoder& e) {
  std::size_t floats = e.token_embeddings.size() + e.position_embeddings.size() +
                       e.norm_weight.size() + e.norm_bias.size();
  for (const PackedEncoderLayer& l : e.layers) {
    floats += l.qkv_weight.size() + l.qkv_bias.size() + l.out_weight.size() + l.out_bias.size() +
              l.norm_1_weight.size() + l.norm_1_bias.size() + l.norm_2_weight.size() +
              l.norm_2_bias.size() + l.ff_1_weight.size() + l.ff_1_bias.size() +
              l.ff_2_weight.size() + l.ff_2_bias.size();
  }
  return floats * sizeof(float);
}

EncoderWorkspace make_workspace(const PackedEncoder& encoder, std::size_t batch, std::size_t tokens,
                                FastKernels kernels) {
  EncoderWorkspace w;
  const PackedEncoderLayer* widest = nullptr;  // the widest feed-forward sets the size
  for (const PackedEncoderLayer& l : encoder.layers)
    if (widest == nullptr || l.d_ff > widest->d_ff) widest = &l;
  if (widest != nullptr) w.layer = make_workspace(*widest, batch, tokens, kernels);
  if (encoder.layers.empty()) {
    w.layer.capacity = batch * tokens;
    w.layer.sequence = tokens;
    w.layer.kernels = kernels;
  }
  w.stream.resize(batch * tokens * encoder.d_model);
  return w;
}

void forward_fast(const PackedEncoder& encoder, const std::int64_t* ids, std::size_t batch,
                  std::size_t tokens, EncoderWorkspace& w, float* out) {
  const std::size_t d = encoder.d_model, rows = batch * tokens;
  if (tokens > encoder.positions) {
    throw Error("forward_fast",
                fmt::format("{} tokens but only {} positions (max_position_embeddings): use at "
                            "most {} tokens",
                            tokens, encoder.positions, encoder.positions));
  }
  if (tokens == 0 || batch == 0 || tokens > w.layer.sequence || rows > w.layer.capacity ||
      w.stream.size() < rows * d) {
    throw Error("forward_fast",
                fmt::format("{} x {} tokens for a workspace of {}: make_workspace(encoder, batch, "
                            "tokens) first",
                            batch, tokens, w.layer.capacity));
  }
  float* stream = w.stream.data();
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int64_t id = ids[r];
    if (id < 0 || static_cast<std::uint64_t>(id) >= encoder.vocab) {
      throw Error("forward_fast", fmt::format("id {} at position {} is outside the vocabulary of "
                                              "{}: expected 0 to {}",
                                              id, r, encoder.vocab, encoder.vocab - 1));
    }
    const float* token = encoder.token_embeddings.data() + static_cast<std::size_t>(id) * d;
    const float* position = encoder.position_embeddings.data() + (r % tokens) * d;
    add(token, position, stream + r * d, d);
  }
  float* embedded = encoder.layers.empty() ? out : stream;
  fast_layer_norm_rows(w.layer.kernels, stream, rows, d, encoder.norm_weight.data(),
                       encoder.norm_bias.data(), encoder.norm_eps, embedded);
  for (std::size_t i = 0; i < encoder.layers.size(); ++i) {
    forward_fast(encoder.layers[i], stream, batch, tokens, w.layer,
                 i + 1 == encoder.layers.size() ? out : stream);
  }
}

std::vector<GemmCall> gemm_calls(const PackedEncoderLayer& layer, std::size_t tokens,
                                 std::size_t batch) {
  const std::size_t t = tokens, d = layer.d_model, f = layer.d_ff, hs = layer.head_size,
                    h = layer.heads, rows = batch * tokens;
  return {
      {"qkv", false, true, rows, 3 * d, d, d, d, 3 * d, 1.0f, 1.0f, 1},
      {"scores", false, true, t, t, hs, 3 * d, 3 * d, t, score_scaling(hs).alpha, 0.0f, h * batch},
      {"context", false, false, t, hs, t, t, 3 * d, d, 1.0f, 0.0f, h * batch},
      {"output", false, true, rows, d, d, d, d, d, 1.0f, 1.0f, 1},
      {"ff_1", false, true, rows, f, d, d, d, f, 1.0f, 0.0f, 1},
      {"ff_2", false, true, rows, d, f, f, f, d, 1.0f, 1.0f, 1},
  };
}

}  // namespace attn
