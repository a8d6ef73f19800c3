// PyTorch 1.13's CPU kernels in scalar code (kernels/torch_order.hpp). Plain float operations and
// explicit std::fma where the library has a fused multiply-add: that is what matches torch's
// results (measured). SLEEF: Copyright Naoki Shibata and contributors 2010 - 2020, Boost Software
// License 1.0.
#include "kernels/torch_order.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace attn {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float from_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}
std::uint32_t bits_of(float f) {
  return std::bit_cast<std::uint32_t>(f);
}
float power_of_two(int e) {  // 2^e for -126 <= e <= 127
  return from_bits(static_cast<std::uint32_t>(e + 127) << 23);
}
// d * 2^e without overflow in the scale factor.
float ldexp2(float d, int e) {
  return d * power_of_two(e >> 1) * power_of_two(e - (e >> 1));
}

// ---- SLEEF's double-float arithmetic (df.h, FMA flavour): a value is x + y, |y| <= ulp(x) / 2.
// df_add assumes |a| >= |b|; df_add2 takes any magnitudes.

struct Float2 {
  float x, y;
};
Float2 df_add(float a, float b) {
  const float s = a + b;
  return {s, (a - s) + b};
}
Float2 df_add(Float2 a, float b) {
  const float s = a.x + b;
  return {s, ((a.x - s) + b) + a.y};
}
Float2 df_add(float a, Float2 b) {
  const float s = a + b.x;
  return {s, ((a - s) + b.x) + b.y};
}
Float2 df_add(Float2 a, Float2 b) {
  const float s = a.x + b.x;
  return {s, (((a.x - s) + b.x) + a.y) + b.y};
}
Float2 df_add2(float a, float b) {
  const float s = a + b, v = s - a;
  return {s, (a - (s - v)) + (b - v)};
}
Float2 df_add2(Float2 a, float b) {
  const float s = a.x + b, v = s - a.x;
  return {s, ((a.x - (s - v)) + (b - v)) + a.y};
}
Float2 df_add2(Float2 a, Float2 b) {
  const float s = a.x + b.x, v = s - a.x;
  return {s, ((a.x - (s - v)) + (b.x - v)) + (a.y + b.y)};
}
Float2 df_normalize(Float2 t) {
  const float s = t.x + t.y;
  return {s, (t.x - s) + t.y};
}
Float2 df_mul(float a, float b) {
  const float p = a * b;
  return {p, std::fma(a, b, -p)};
}
Float2 df_mul(Float2 a, float b) {
  const float p = a.x * b;
  return {p, std::fma(a.y, b, std::fma(a.x, b, -p))};
}
Float2 df_mul(Float2 a, Float2 b) {
  const float p = a.x * b.x;
  return {p, std::fma(a.x, b.y, std::fma(a.y, b.x, std::fma(a.x, b.x, -p)))};
}
float df_mul_to_float(Float2 a, Float2 b) {
  return std::fma(a.x, b.x, std::fma(a.y, b.x, a.x * b.y));
}
Float2 df_square(Float2 a) {
  const float p = a.x * a.x;
  return {p, std::fma(a.x + a.x, a.y, std::fma(a.x, a.x, -p))};
}
Float2 df_reciprocal(Float2 d) {
  const float q = 1.0f / d.x;
  return {q, q * std::fma(-d.y, q, std::fma(-d.x, q, 1.0f))};
}
Float2 df_divide(Float2 n, Float2 d) {
  const float t = 1.0f / d.x, q = n.x * t;
  const float u = std::fma(t, n.x, -q);
  const float e = std::fma(-d.y, t, std::fma(-d.x, t, 1.0f));
  return {q, std::fma(q, e, std::fma(n.y, t, u))};
}

constexpr float kLog2e = 1.442695040888963407359924681001892137426645954152985934135449406931f;
constexpr float kLn2Upper = 0.693145751953125f, kLn2Lower = 1.428606765330187045e-06f;

// SLEEF 3.5's expk2f: exp of a double-float, as a double-float.
Float2 exp_sleef_df(Float2 d) {
  const int q = static_cast<int>(std::nearbyint((d.x + d.y) * kLog2e));
  Float2 s = df_add2(d, static_cast<float>(q) * -kLn2Upper);
  s = df_add2(s, static_cast<float>(q) * -kLn2Lower);
  float u = 0.1980960224e-3f;
  u = std::fma(u, s.x, 0.1394256484e-2f);
  u = std::fma(u, s.x, 0.8333456703e-2f);
  u = std::fma(u, s.x, 0.4166637361e-1f);
  Float2 t = df_add2(df_mul(s, u), 0.166666659414234244790680580464e+0f);
  t = df_add2(df_mul(s, t), 0.5f);
  t = df_add2(s, df_mul(df_square(s), t));
  t = df_add(1.0f, t);
  if (d.x < -104.0f) return {0.0f, 0.0f};
  return {ldexp2(t.x, q), ldexp2(t.y, q)};
}

// ---- SLEEF 3.5's xsinf_u1/xcosf_u1 (sleefsimdsp.c, AVX2 with FMA), one lane

float negate_if(float x, bool negate) {
  return negate ? from_bits(bits_of(x) ^ 0x80000000u) : x;
}
float with_sign_of(float x, float sign) {
  return from_bits(bits_of(x) ^ (bits_of(sign) & 0x80000000u));
}

constexpr float kOneOverPi = 0.318309886183790671537767526745028724f;
constexpr float kPiA2 = 3.1414794921875f, kPiB2 = 0.00011315941810607910156f,
                kPiC2 = 1.9841872589410058936e-09f;
constexpr float kNarrowLimit = 125.0f;        // SLEEF's TRIGRANGEMAX2f
constexpr float kTableLimit = 8589934592.0f;  // 2^33: past the rows of kInverseTwoPi below

// Sleef_rempitabsp rows 0..7 (|x| < 2^33): 1/(2π) split into 4 floats, its leading bits removed
// as the exponent grows. Read from Debian's libsleef3 3.5.1, the library libtorch_cpu links.
// clang-format off
constexpr float kInverseTwoPi[32] = {
    0x1.45f3p-3f,   0x1.b7272p-25f,  0x1.054a8p-48f,  -0x1.ec5418p-73f,   // |x| < 2^26
    0x1.17cc18p-5f, 0x1.b9391p-28f,  0x1.529fcp-54f,  0x1.3abe9p-77f,     // [2^26, 2^27)
    0x1.17cc18p-5f, 0x1.b9391p-28f,  0x1.529fcp-54f,  0x1.3abe9p-77f,
    0x1.7cc1b8p-9f, -0x1.b1bbe8p-34f, -0x1.6b01e8p-57f, -0x1.1505c2p-79f,
    0x1.7cc1b8p-9f, -0x1.b1bbe8p-34f, -0x1.6b01e8p-57f, -0x1.1505c2p-79f,
    0x1.7cc1b8p-9f, -0x1.b1bbe8p-34f, -0x1.6b01e8p-57f, -0x1.1505c2p-79f,
    0x1.7cc1b8p-9f, -0x1.b1bbe8p-34f, -0x1.6b01e8p-57f, -0x1.1505c2p-79f,
    0x1.f306d8p-11f, 0x1.272208p-33f, 0x1.4a7f08p-56f, 0x1.d5f47ep-80f,   // [2^32, 2^33)
};
// clang-format on

struct Reduced {
  Float2 r;      // x - quadrant · π/2, |r| <= π/4, as a pair
  int quadrant;  // how many π/2 were taken off (mod 4 is what matters)
};

// rempisubf with exact rounding (SSE4/AVX's round): x minus the nearest quarter, and which quarter.
Reduced take_quarters(float x) {
  const float y = std::nearbyint(x * 4.0f);
  return {{x - y * 0.25f, 0.0f}, static_cast<int>(y - std::nearbyint(x) * 4.0f)};
}

// rempif: Payne-Hanek reduction of |x| < 2^33 by 2π in float-float arithmetic.
Reduced reduce_wide(float a) {
  const int ex = static_cast<int>((bits_of(a) >> 23) & 0xff) - 0x7f - 25;  // ilogb(a) - 25
  const std::size_t row = static_cast<std::size_t>(std::max(ex, 0)) * 4;
  Float2 x = df_mul(a, kInverseTwoPi[row]);
  Reduced d = take_quarters(x.x);
  int q = d.quadrant;
  x = df_normalize({d.r.x, x.y});
  x = df_add2(x, df_mul(a, kInverseTwoPi[row + 1]));
  d = take_quarters(x.x);
  q += d.quadrant;
  x = df_normalize({d.r.x, x.y});
  x = df_add2(x, df_mul(Float2{kInverseTwoPi[row + 2], kInverseTwoPi[row + 3]}, a));
  x = df_normalize(x);
  x = df_mul(x, Float2{3.1415927410125732422f * 2, -8.7422776573475857731e-08f * 2});
  if (std::fabs(a) < 0.7f) x = {a, 0.0f};
  return {x, q};
}

// The shared tail: sin(t) for the reduced argument t by a degree-7 odd polynomial, with float-
// float arithmetic for the last two terms.
float sin_polynomial(Float2 t) {
  const Float2 s = df_square(t);
  float u = 2.6083159809786593541503e-06f;
  u = std::fma(u, s.x, -0.0001981069071916863322258f);
  u = std::fma(u, s.x, 0.00833307858556509017944336f);
  const Float2 x = df_add(1.0f, df_mul(df_add(-0.166666597127914428710938f, u * s.x), s));
  return df_mul_to_float(t, x);
}

template <class Function>
void grouped(const float* in, float* out, std::size_t n, Function f) {
  // ATen's vec::map: 8 lanes at a time, the last group padded with zeros (which are narrow).
  for (std::size_t start = 0; start < n; start += 8) {
    const std::size_t end = std::min(n, start + 8);
    bool wide = false;
    for (std::size_t i = start; i < end; ++i)
      wide = wide || !(std::fabs(in[i]) < kNarrowLimit);
    for (std::size_t i = start; i < end; ++i)
      out[i] = f(in[i], wide);
  }
}

// Abramowitz and Stegun 7.1.26 as oneDNN computes it: t = 1 / (1 + p |x|), and the polynomial
// p1 + p2 t + ... + p5 t⁴ that erf(x) = 1 - t poly(t) exp(-x²) takes.
float erf_t(float x) {
  return 1.0f / std::fma(from_bits(0x3ea7ba05), std::fabs(x), 1.0f);
}
float erf_polynomial(float t) {
  float r = from_bits(0x3f87dc22);
  r = std::fma(r, t, from_bits(0xbfba00e3));
  r = std::fma(r, t, from_bits(0x3fb5f0e3));
  r = std::fma(r, t, from_bits(0xbe91a98e));
  return std::fma(r, t, from_bits(0x3e827906));
}

// ---- ATen's sums and moments

constexpr std::size_t kLanes = 8;   // floats in an AVX2 register: ATen's Vectorized<float>
constexpr std::size_t kChunk = 16;  // ATen's kChunkSize: vectors per Welford chunk
using Lanes = std::array<float, kLanes>;

struct LaneMoments {
  std::int64_t count = 0;  // per lane
  Lanes mean{}, m2{};
};

// AddMomentsVec: merge `count_add` values per lane with moments (mean_add, m2_add) into `into`.
void add_moments(std::int64_t count_add, const Lanes& mean_add, const Lanes& m2_add,
                 LaneMoments& into) {
  const std::int64_t n = into.count + count_add;
  const float c = n == 0 ? 0.0f : static_cast<float>(count_add) / static_cast<float>(n);
  const auto before = static_cast<float>(into.count);
  for (std::size_t l = 0; l < kLanes; ++l) {
    const float delta = mean_add[l] - into.mean[l];
    into.mean[l] += c * delta;
    into.m2[l] += m2_add[l] + delta * delta * c * before;
  }
  into.count = n;
}

// AddMoments: the same for one scalar accumulator.
void add_moments(std::int64_t count_add, float mean_add, float m2_add, std::int64_t& count,
                 float& mean, float& m2) {
  const std::int64_t n = count + count_add;
  const float c = n == 0 ? 0.0f : static_cast<float>(count_add) / static_cast<float>(n);
  const float delta = mean_add - mean;
  mean += c * delta;
  m2 += m2_add + delta * delta * c * static_cast<float>(count);
  count = n;
}

// multi_row_sum of SumKernel.cpp: `size` rows of 4 interleaved columns (column k of row i is item
// 4i + k), each item `width` lanes wide, summed in levels of 2^level_power rows.
template <std::size_t width>
std::array<std::array<float, width>, 4> multi_row_sum(const float* x, std::size_t size) {
  using Item = std::array<float, width>;
  auto add = [](Item& a, const Item& b) {
    for (std::size_t l = 0; l < width; ++l)
      a[l] += b[l];
  };
  auto item = [x](std::size_t index) {
    Item v;
    for (std::size_t l = 0; l < width; ++l)
      v[l] = x[index * width + l];
    return v;
  };
  constexpr std::size_t kLevels = 4;
  const std::size_t level_power = std::max<std::size_t>(4, ceil_log2(size) / kLevels);
  const std::size_t level_step = std::size_t{1} << level_power, level_mask = level_step - 1;
  std::array<std::array<Item, 4>, kLevels> acc{};
  std::size_t i = 0;
  while (i + level_step <= size) {
    for (std::size_t j = 0; j < level_step; ++j, ++i)
      for (std::size_t k = 0; k < 4; ++k)
        add(acc[0][k], item(i * 4 + k));
    for (std::size_t j = 1; j < kLevels; ++j) {
      for (std::size_t k = 0; k < 4; ++k) {
        add(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = Item{};
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (std::size_t k = 0; k < 4; ++k)
      add(acc[0][k], item(i * 4 + k));
  for (std::size_t j = 1; j < kLevels; ++j)
    for (std::size_t k = 0; k < 4; ++k)
      add(acc[0][k], acc[j][k]);
  return acc[0];
}

// row_sum of SumKernel.cpp: `size` items of `width` lanes, four partial sums, then the rest.
template <std::size_t width>
std::array<float, width> row_sum(const float* x, std::size_t size) {
  auto partial = multi_row_sum<width>(x, size / 4);
  for (std::size_t i = size / 4 * 4; i < size; ++i)
    for (std::size_t l = 0; l < width; ++l)
      partial[0][l] += x[i * width + l];
  for (std::size_t k = 1; k < 4; ++k)
    for (std::size_t l = 0; l < width; ++l)
      partial[0][l] += partial[k][l];
  return partial[0];
}

// ATen's scalar GELU constants: 1/√2 (float(M_SQRT1_2)), kBeta = M_SQRT2 * M_2_SQRTPI * 0.5
// (√(2/π)) and kKappa, rounded to float.
constexpr float kSqrtHalf = 0.707106781186547524400844362104849039f;
constexpr float kTanhBeta =
    static_cast<float>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
constexpr float kTanhKappa = 0.044715f;
constexpr float kInvSqrt2Pi = 0.398942280401432677939946059934381868f;  // 1/√(2π)

}  // namespace

// ---- One number at a time

// SLEEF 3's xexpf (sleefsimdsp.c) with FMA: x = q ln2 + s, exp(s) by a degree-7 polynomial.
float torch_exp(float x) {
  if (std::isnan(x)) return x;
  if (x < -104.0f) return 0.0f;
  if (x > 100.0f) return std::numeric_limits<float>::infinity();
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

// SLEEF 3.5 xtanhf (u10): (e^2|x| - 1) / (e^2|x| + 1) in double-float, 1 past |x| = 8.66.
float tanh_sleef(float x) {
  const float a = std::fabs(x);
  if (std::isnan(x)) return x;
  if (a > 8.664339742f)
    return std::copysign(1.0f, x);  // where SLEEF selects 1; also keeps q in range
  Float2 d = exp_sleef_df({a, 0.0f});
  const Float2 e = df_reciprocal(d);
  d = df_divide(df_add(d, Float2{-e.x, -e.y}), df_add(d, e));
  float y = d.x + d.y;
  if (std::isnan(y)) y = 1.0f;
  return std::copysign(y, x);
}

float sleef_sin_u10(float d, bool wide) {
  if (!std::isfinite(d)) return kNaN;
  if (!(std::fabs(d) < kTableLimit)) return std::sin(d);
  Float2 s;
  int q;
  if (!wide && std::fabs(d) < kNarrowLimit) {
    const float u = std::nearbyint(d * kOneOverPi);
    q = static_cast<int>(u);
    s = df_add2(std::fma(u, -kPiA2, d), u * -kPiB2);
    s = df_add(s, u * -kPiC2);
  } else {
    const Reduced r = reduce_wide(d);
    q = ((r.quadrant & 3) * 2 + (r.r.x > 0 ? 2 : 1)) >> 2;
    const Float2 half_pi{with_sign_of(3.1415927410125732422f * -0.5f, r.r.x),
                         with_sign_of(-8.7422776573475857731e-08f * -0.5f, r.r.x)};
    s = df_normalize((r.quadrant & 1) == 1 ? df_add2(r.r, half_pi) : r.r);
  }
  const float u = negate_if(sin_polynomial(s), (q & 1) == 1);
  return d == 0.0f && std::signbit(d) ? d : u;
}

float sleef_cos_u10(float d, bool wide) {
  if (!std::isfinite(d)) return kNaN;
  if (!(std::fabs(d) < kTableLimit)) return std::cos(d);
  Float2 s;
  int q;
  if (!wide && std::fabs(d) < kNarrowLimit) {
    const float dq = std::fma(std::nearbyint(std::fma(d, kOneOverPi, -0.5f)), 2.0f, 1.0f);
    q = static_cast<int>(dq);
    s = df_add2(d, dq * (-kPiA2 * 0.5f));
    s = df_add2(s, dq * (-kPiB2 * 0.5f));
    s = df_add2(s, dq * (-kPiC2 * 0.5f));
  } else {
    const Reduced r = reduce_wide(d);
    q = ((r.quadrant & 3) * 2 + (r.r.x > 0 ? 8 : 7)) >> 1;
    const float y = r.r.x > 0 ? 0.0f : -1.0f;
    const Float2 half_pi{with_sign_of(3.1415927410125732422f * -0.5f, y),
                         with_sign_of(-8.7422776573475857731e-08f * -0.5f, y)};
    s = df_normalize((r.quadrant & 1) == 0 ? df_add2(r.r, half_pi) : r.r);
  }
  return negate_if(sin_polynomial(s), (q & 2) == 0);
}

// oneDNN's exp_compute_vector_fwd: clamp to [ln FLT_MIN, ln FLT_MAX], n = floor(x log2 e + 1/2),
// r = x - n ln 2 (one FMA), a degree-5 polynomial, times 2^(n-1) times 2; 0 below ln FLT_MIN.
float exp_onednn(float v) {
  const float ln_flt_min = from_bits(0xc2aeac50), ln_flt_max = from_bits(0x42b17218);
  const bool underflow = v < ln_flt_min;
  v = std::fmax(std::fmin(v, ln_flt_max), ln_flt_min);
  const float n = std::floor(v * from_bits(0x3fb8aa3b) + 0.5f);
  const float r = std::fma(-n, from_bits(0x3f317218), v);
  const float scale =
      underflow ? 0.0f
                : from_bits(static_cast<std::uint32_t>(static_cast<int>(n - 1.0f) + 127) << 23);
  float p = from_bits(0x3c07cfce);
  p = std::fma(p, r, from_bits(0x3d2b9d0d));
  p = std::fma(p, r, from_bits(0x3e2aad40));
  p = std::fma(p, r, from_bits(0x3efffee3));
  p = std::fma(p, r, from_bits(0x3f7ffffb));
  p = std::fma(p, r, 1.0f);
  return p * scale * 2.0f;
}

// oneDNN 2.6 jit_uni_eltwise_injector (AVX2) gelu_erf: erf by Abramowitz and Stegun 7.1.26,
// erf(x) = 1 - t (p1 + p2 t + ... + p5 t⁴) exp(-x²) with t = 1 / (1 + p |x|), then
// GELU = S + S erf with S = s / 2.
float gelu_erf_onednn(float s) {
  const float x = s * from_bits(0x3f3504f3);  // s / √2
  const float t = erf_t(x);
  const float e = -exp_onednn(-(x * x)) * t;
  const float erf = std::copysign(1.0f, s) * std::fma(e, erf_polynomial(t), 1.0f);
  const float half = s * 0.5f;
  return std::fma(erf, half, half);
}

// oneDNN 2.6's gelu_erf backward (eltwise_injector's gelu_erf_compute_vector_bwd), the slope
// d gelu / dx = Φ(x) + x φ(x) with Φ by the erf of gelu_erf_onednn and φ from the same exp:
// exp(-(x/√2)²) / √(2π).
float gelu_erf_slope_onednn(float s) {
  const float x = s * from_bits(0x3f3504f3);
  const float t = erf_t(x);
  const float gauss = exp_onednn(-(x * x));
  const float erf = std::copysign(1.0f, s) * std::fma(-gauss * t, erf_polynomial(t), 1.0f);
  const float cdf = std::fma(erf, 0.5f, 0.5f);
  return std::fma(s, gauss * kInvSqrt2Pi, cdf);
}

float gelu_erf_libm(float x) {
  return x * 0.5f * (1.0f + std::erf(x * kSqrtHalf));
}

// GCC contracts x + κx³ into an FMA in both of ATen's paths.
float gelu_tanh_aten(float x, bool sleef) {
  const float inner = kTanhBeta * std::fma(kTanhKappa, x * x * x, x);
  return 0.5f * x * (1.0f + (sleef ? tanh_sleef(inner) : std::tanh(inner)));
}

// ---- Sums and moments of a row

float torch_row_sum(const float* x, std::size_t n) {
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

float torch_cascade_sum(const float* x, std::size_t n) {
  if (n < kLanes) return row_sum<1>(x, n)[0];  // scalar_inner_sum
  const std::size_t vectors = n / kLanes;      // vectorized_inner_sum
  const Lanes lanes = row_sum<kLanes>(x, vectors);
  float sum = 0.0f;
  for (std::size_t k = vectors * kLanes; k < n; ++k)
    sum += x[k];
  for (float lane : lanes)
    sum += lane;
  return sum;
}

RowMoments torch_row_moments(const float* x, std::size_t n) {
  const std::size_t vectors = n / kLanes, chunks = (vectors + kChunk - 1) / kChunk;
  const std::size_t depth = ceil_log2(chunks);
  std::vector<LaneMoments> stack(depth);
  for (std::size_t i = 0; i < chunks; ++i) {
    const float* chunk = x + i * kChunk * kLanes;
    const std::size_t count = std::min(kChunk, vectors - i * kChunk);
    Lanes mean{}, m2{};
    for (std::size_t j = 0; j < count; ++j) {
      const float c = 1.0f / static_cast<float>(j + 1);
      for (std::size_t l = 0; l < kLanes; ++l) {
        const float v = chunk[j * kLanes + l];
        const float delta = v - mean[l];
        mean[l] += delta * c;
        m2[l] += delta * (v - mean[l]);
      }
    }
    add_moments(static_cast<std::int64_t>(count), mean, m2, stack[0]);
    // Cascade: after chunk i, merge level j-1 into level j for every trailing zero bit of i+1.
    std::size_t mask = i + 1;
    for (std::size_t j = 1; j < depth && (mask & 1) == 0; ++j) {
      add_moments(stack[j - 1].count, stack[j - 1].mean, stack[j - 1].m2, stack[j]);
      stack[j - 1] = LaneMoments{};
      mask >>= 1;
    }
  }
  for (std::size_t j = 1; j < depth; ++j)
    add_moments(stack[j].count, stack[j].mean, stack[j].m2, stack[0]);
  return finish_row_moments(x, n, vectors, stack[0].mean.data(), stack[0].m2.data());
}

RowMoments finish_row_moments(const float* x, std::size_t n, std::size_t vectors,
                              const float* lane_mean, const float* lane_m2) {
  std::int64_t count = 0;
  float mean = 0.0f, m2 = 0.0f;
  for (std::size_t i = vectors * kLanes; i < n; ++i) {
    const float delta = x[i] - mean;
    ++count;
    mean += delta / static_cast<float>(count);
    m2 += delta * (x[i] - mean);
  }
  for (std::size_t l = 0; l < kLanes; ++l)
    add_moments(static_cast<std::int64_t>(vectors), lane_mean[l], lane_m2[l], count, mean, m2);
  return {mean, m2 / static_cast<float>(n)};
}

std::size_t ceil_log2(std::size_t x) {
  if (x <= 2) return 1;
  std::size_t bits = 0;
  for (std::size_t v = x - 1; v != 0; v >>= 1)
    ++bits;
  return bits;
}

// ---- Whole rows, in place

void torch_softmax_row(float* x, std::size_t n, float divisor) {
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
  const float inverse = 1.0f / torch_row_sum(x, n);
  for (std::size_t j = 0; j < n; ++j)
    x[j] *= inverse;
}

RowMoments torch_layer_norm_row(const float* x, std::size_t n, const float* weight,
                                const float* bias, float eps, float* normalised, float* out) {
  const RowMoments m = torch_row_moments(x, n);
  const float rstd = 1.0f / std::sqrt(m.variance + eps);
  const float shift = -rstd * m.mean;
  for (std::size_t j = 0; j < n; ++j) {
    const float v = std::fma(x[j], rstd, shift);
    if (normalised != nullptr) normalised[j] = v;
    out[j] = std::fma(v, weight[j], bias[j]);
  }
  return m;
}

void torch_gelu(float* x, std::size_t n, std::size_t from, GeluApproximation approximate) {
  if (approximate == GeluApproximation::none) {
    if (n == 1) {  // torch's one-element path: libm's erf
      x[0] = gelu_erf_libm(x[0]);
      return;
    }
    for (std::size_t i = from; i < n; ++i)
      x[i] = gelu_erf_onednn(x[i]);
    return;
  }
  const std::size_t vectorised = n - n % 16;  // ATen: 16 at a time with SLEEF, the rest with libm
  for (std::size_t i = from; i < n; ++i)
    x[i] = gelu_tanh_aten(x[i], i < vectorised);
}

void torch_sin(const float* in, float* out, std::size_t n) {
  grouped(in, out, n, sleef_sin_u10);
}
void torch_cos(const float* in, float* out, std::size_t n) {
  grouped(in, out, n, sleef_cos_u10);
}

}  // namespace attn
