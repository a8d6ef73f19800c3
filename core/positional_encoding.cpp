#include "positional_encoding.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "random.hpp"
#include "softmax.hpp"

namespace attn {

// ---- torch's sin and cos: SLEEF 3.5's xsinf_u1/xcosf_u1 (sleefsimdsp.c, AVX2 with FMA), one lane.
// Copyright Naoki Shibata and contributors 2010 - 2020, Boost Software License 1.0.

namespace {

// A float-float pair: the value is x + y with |y| <= ulp(x)/2 (SLEEF's df.h with FMA).
struct Float2 {
  float x, y;
};

Float2 add2(float x, float y) {
  const float s = x + y, v = s - x;
  return {s, (x - (s - v)) + (y - v)};
}
Float2 add2(Float2 x, float y) {
  const float s = x.x + y, v = s - x.x;
  return {s, ((x.x - (s - v)) + (y - v)) + x.y};
}
Float2 add2(Float2 x, Float2 y) {
  const float s = x.x + y.x, v = s - x.x;
  return {s, ((x.x - (s - v)) + (y.x - v)) + (x.y + y.y)};
}
Float2 add_fast(float x, float y) {  // |x| >= |y|
  const float s = x + y;
  return {s, (x - s) + y};
}
Float2 add_fast(Float2 x, float y) {
  const float s = x.x + y;
  return {s, ((x.x - s) + y) + x.y};
}
Float2 add_fast(float x, Float2 y) {
  const float s = x + y.x;
  return {s, ((x - s) + y.x) + y.y};
}
Float2 normalize(Float2 t) {
  const float s = t.x + t.y;
  return {s, (t.x - s) + t.y};
}
Float2 mul(float x, float y) {
  const float p = x * y;
  return {p, std::fma(x, y, -p)};
}
Float2 mul(Float2 x, float y) {
  const float p = x.x * y;
  return {p, std::fma(x.y, y, std::fma(x.x, y, -p))};
}
Float2 mul(Float2 x, Float2 y) {
  const float p = x.x * y.x;
  return {p, std::fma(x.x, y.y, std::fma(x.y, y.x, std::fma(x.x, y.x, -p)))};
}
float mul_to_float(Float2 x, Float2 y) {
  return std::fma(x.x, y.x, std::fma(x.y, y.x, x.x * y.y));
}
Float2 square(Float2 x) {
  const float p = x.x * x.x;
  return {p, std::fma(x.x + x.x, x.y, std::fma(x.x, x.x, -p))};
}

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
float negate_if(float x, bool negate) {
  return negate ? float_of(bits_of(x) ^ 0x80000000u) : x;
}
float with_sign_of(float x, float sign) {
  return float_of(bits_of(x) ^ (bits_of(sign) & 0x80000000u));
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
  Float2 x = mul(a, kInverseTwoPi[row]);
  Reduced d = take_quarters(x.x);
  int q = d.quadrant;
  x = normalize({d.r.x, x.y});
  x = add2(x, mul(a, kInverseTwoPi[row + 1]));
  d = take_quarters(x.x);
  q += d.quadrant;
  x = normalize({d.r.x, x.y});
  x = add2(x, mul(Float2{kInverseTwoPi[row + 2], kInverseTwoPi[row + 3]}, a));
  x = normalize(x);
  x = mul(x, Float2{3.1415927410125732422f * 2, -8.7422776573475857731e-08f * 2});
  if (std::fabs(a) < 0.7f) x = {a, 0.0f};
  return {x, q};
}

// The shared tail: sin(t) for the reduced argument t by a degree-7 odd polynomial, with float-
// float arithmetic for the last two terms.
float sin_polynomial(Float2 t) {
  const Float2 s = square(t);
  float u = 2.6083159809786593541503e-06f;
  u = std::fma(u, s.x, -0.0001981069071916863322258f);
  u = std::fma(u, s.x, 0.00833307858556509017944336f);
  const Float2 x = add_fast(1.0f, mul(add_fast(-0.166666597127914428710938f, u * s.x), s));
  return mul_to_float(t, x);
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

}  // namespace

float sleef_sin_u10(float d, bool wide) {
  if (!std::isfinite(d)) return std::numeric_limits<float>::quiet_NaN();
  if (!(std::fabs(d) < kTableLimit)) return std::sin(d);
  Float2 s;
  int q;
  if (!wide && std::fabs(d) < kNarrowLimit) {
    const float u = std::nearbyint(d * kOneOverPi);
    q = static_cast<int>(u);
    s = add2(std::fma(u, -kPiA2, d), u * -kPiB2);
    s = add_fast(s, u * -kPiC2);
  } else {
    const Reduced r = reduce_wide(d);
    q = ((r.quadrant & 3) * 2 + (r.r.x > 0 ? 2 : 1)) >> 2;
    const Float2 half_pi{with_sign_of(3.1415927410125732422f * -0.5f, r.r.x),
                         with_sign_of(-8.7422776573475857731e-08f * -0.5f, r.r.x)};
    s = normalize((r.quadrant & 1) == 1 ? add2(r.r, half_pi) : r.r);
  }
  const float u = negate_if(sin_polynomial(s), (q & 1) == 1);
  return d == 0.0f && std::signbit(d) ? d : u;
}

float sleef_cos_u10(float d, bool wide) {
  if (!std::isfinite(d)) return std::numeric_limits<float>::quiet_NaN();
  if (!(std::fabs(d) < kTableLimit)) return std::cos(d);
  Float2 s;
  int q;
  if (!wide && std::fabs(d) < kNarrowLimit) {
    const float dq = std::fma(std::nearbyint(std::fma(d, kOneOverPi, -0.5f)), 2.0f, 1.0f);
    q = static_cast<int>(dq);
    s = add2(d, dq * (-kPiA2 * 0.5f));
    s = add2(s, dq * (-kPiB2 * 0.5f));
    s = add2(s, dq * (-kPiC2 * 0.5f));
  } else {
    const Reduced r = reduce_wide(d);
    q = ((r.quadrant & 3) * 2 + (r.r.x > 0 ? 8 : 7)) >> 1;
    const float y = r.r.x > 0 ? 0.0f : -1.0f;
    const Float2 half_pi{with_sign_of(3.1415927410125732422f * -0.5f, y),
                         with_sign_of(-8.7422776573475857731e-08f * -0.5f, y)};
    s = normalize((r.quadrant & 1) == 0 ? add2(r.r, half_pi) : r.r);
  }
  return negate_if(sin_polynomial(s), (q & 2) == 0);
}

void torch_sin(const float* in, float* out, std::size_t n) {
  grouped(in, out, n, sleef_sin_u10);
}
void torch_cos(const float* in, float* out, std::size_t n) {
  grouped(in, out, n, sleef_cos_u10);
}

// ---- The tables

SinusoidalTable sinusoidal_table(std::size_t positions, std::size_t width) {
  if (positions == 0 || width == 0) {
    throw Error("sinusoidal_table",
                fmt::format("positions={} and width={} must both be at least 1", positions, width));
  }
  const std::size_t frequencies = (width + 1) / 2;
  SinusoidalTable t;
  // torch.arange(0, D, 2).float() * (-math.log(10000.0) / D): the double is rounded to float first.
  const float step = static_cast<float>(-std::log(10000.0) / static_cast<double>(width));
  t.div_term = Tensor1::from_shape({frequencies});
  for (std::size_t i = 0; i < frequencies; ++i)
    t.div_term(i) = torch_exp(static_cast<float>(2 * i) * step);  // (F)
  t.angles = Tensor2({positions, frequencies});
  for (std::size_t p = 0; p < positions; ++p)
    for (std::size_t i = 0; i < frequencies; ++i)
      t.angles(p, i) = static_cast<float>(p) * t.div_term(i);  // (P,1)*(F)
  Tensor2 sines(t.angles.shape()), cosines(t.angles.shape());  // (P,F) each
  torch_sin(t.angles.data(), sines.data(), t.angles.size());
  torch_cos(t.angles.data(), cosines.data(), t.angles.size());
  t.pe = Tensor2({positions, width});
  for (std::size_t p = 0; p < positions; ++p)
    for (std::size_t j = 0; j < width; ++j)
      t.pe(p, j) = j % 2 == 0 ? sines(p, j / 2) : cosines(p, j / 2);  // (P,D)
  return t;
}

MemoryPlan plan_sinusoidal_table(std::size_t positions, std::size_t width) {
  return {{"the table", {positions, width}, "P D"},
          {"the angles, their sines and cosines", {3, positions, (width + 1) / 2}, " P D"}};
}

PositionEmbedding init_position_embedding(Rng& rng, std::size_t positions, std::size_t width) {
  return PositionEmbedding{randn_matrix(rng, positions, width)};  // (P,D)
}

Module describe_position_embedding(std::size_t positions, std::size_t width, std::string name) {
  return Module{"Embedding", std::move(name), {{"weight", {positions, width}, true}}, {}};
}

void visit_parameters(PositionEmbedding& embedding, const ParameterVisitor& visit) {
  visit("weight", embedding.weight.data(), shape_of(embedding.weight));
}

Module describe_sinusoidal_encoding() {
  return Module{"PositionalEncoding", "", {}, {leaf_module("Dropout", "dropout")}};
}

std::vector<LayerInfo> trace_sinusoidal_encoding(const Shape& shape) {
  const Module m = describe_sinusoidal_encoding();
  Trace trace;
  trace.call(m, shape, shape);  // x + pe[:, :T]: the buffer is not a call
  trace.enter();
  trace.call(child(m, "dropout"), shape, shape);
  trace.leave();
  return trace.layers();
}

std::vector<LayerInfo> trace_position_embedding(std::size_t positions, std::size_t width,
                                                const Shape& shape) {
  Trace trace;
  Shape output = shape;
  output.push_back(width);
  trace.call(describe_position_embedding(positions, width), shape, output);
  return trace.layers();
}

Tensor2 first_positions(const Tensor2& table, std::size_t tokens) {
  if (tokens > table.shape(0)) {
    throw Error("first_positions", fmt::format("{} tokens but the table {} has only {} positions",
                                               tokens, shape_string_of(table), table.shape(0)));
  }
  Tensor2 out({tokens, table.shape(1)});  // (T,D)
  std::copy(table.data(), table.data() + out.size(), out.data());
  return out;
}

Tensor3 add_positions(const Tensor3& x, const Tensor2& pe) {
  if (pe.shape(0) != x.shape(1) || pe.shape(1) != x.shape(2)) {
    throw Error("add_positions",
                fmt::format("x {} and pe {} do not fit: expected pe (T, D) = ({}, {})",
                            shape_string_of(x), shape_string_of(pe), x.shape(1), x.shape(2)));
  }
  Tensor3 out = x;  // (B,T,D)
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t t = 0; t < x.shape(1); ++t)
      for (std::size_t d = 0; d < x.shape(2); ++d)
        out(b, t, d) += pe(t, d);
  return out;
}

}  // namespace attn
