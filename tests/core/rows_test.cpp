// The row kernels (core/kernels/rows.hpp): each is the readable layer's own computation (softmax,
// nn.LayerNorm, GELU and its slope), and its AVX2 lanes give the scalar code's bits.
#include "kernels/rows.hpp"

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "base/random.hpp"
#include "feed_forward.hpp"
#include "kernels/gemm.hpp"
#include "layer_norm.hpp"
#include "same_bits.hpp"
#include "softmax.hpp"

using attn::FastKernels;
using attn::Tensor2;
using attn::Tensor3;
using attn::testing::same_bits;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The AVX2 kernels are compared with the scalar ones wherever the CPU can run them, whatever
// ATTN_FAST_KERNELS says the default is.
bool have_avx2() {
  return attn::cpu_has_avx2();
}

// Random numbers with the awkward ones mixed in.
std::vector<float> awkward(attn::Rng& rng, std::size_t n, float scale) {
  const float special[] = {0.0f,   -0.0f,  kInf,  -kInf, kNaN,  1e-30f,  -1e-30f,
                           1e-45f, 3.0f,   -3.0f, 9.0f,  -9.0f, 88.0f,   -88.0f,
                           1e20f,  -1e20f, 5.5f,  -5.5f, 0.5f,  -104.5f, 100.5f};
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = i % 7 == 3 ? special[(i / 7) % std::size(special)]
                      : scale * static_cast<float>(rng.normal());
  }
  return v;
}

// Forces a library (or frees the choice) and a thread count for one test case.
struct GemmSetting {
  GemmSetting(attn::GemmChoice choice, int threads) {
    attn::set_gemm_choice(choice);
    attn::set_threads(threads);
  }
  ~GemmSetting() {
    const char* word = std::getenv("ATTN_GEMM");
    attn::set_gemm_choice(attn::parse_gemm_choice(word != nullptr ? word : "", "ATTN_GEMM"));
    attn::set_threads(1);
  }
};
}  // namespace

TEST_CASE("the softmax kernel is the reference's softmax of scores / sqrt(hs)", "[rows]") {
  attn::Rng rng(21);
  for (std::size_t n : {1u, 5u, 7u, 8u, 9u, 16u, 17u, 33u, 128u, 131u}) {
    const std::size_t rows = 6;
    std::vector<float> scores = awkward(rng, rows * n, 4.0f);
    for (std::size_t j = 0; j < n; ++j)
      scores[2 * n + j] = -kInf;  // a fully masked row
    for (std::size_t j = 0; j < n; ++j)
      scores[4 * n + j] = 3.0f * static_cast<float>(rng.normal());  // plain
    const float divisor = std::sqrt(5.0f);
    Tensor2 t({rows, n});
    std::copy(scores.begin(), scores.end(), t.begin());
    const Tensor2 expected = attn::softmax(Tensor2(t / divisor));
    std::vector<float> scalar = scores;
    attn::softmax_rows(scalar.data(), rows, n, divisor, FastKernels::scalar);
    std::vector<float> reference(expected.begin(), expected.end());
    for (std::size_t j = 0; j < n; ++j)
      reference[2 * n + j] = 0.0f;  // softmax() also gives zeros
    INFO("n = " << n);
    CHECK(same_bits(scalar, reference));
    if (have_avx2()) {
      std::vector<float> avx2 = scores;
      attn::softmax_rows(avx2.data(), rows, n, divisor, FastKernels::avx2);
      CHECK(same_bits(avx2, scalar));
    }
  }
}

TEST_CASE("the LayerNorm kernel is nn.LayerNorm as the reference computes it", "[rows]") {
  attn::Rng rng(22);
  for (std::size_t n : {1u, 3u, 8u, 12u, 33u, 127u, 128u, 129u, 768u, 2051u, 4100u}) {
    const std::size_t rows = 3;
    attn::LayerNorm norm = attn::init_layer_norm(n);
    for (float& w : norm.weight)
      w = static_cast<float>(rng.normal());
    for (float& b : norm.bias)
      b = static_cast<float>(rng.normal());
    const Tensor3 x =
        attn::randn(rng, 1, rows, n, 3.0f) + 10.0f;  // an offset stresses the variance
    const Tensor3 expected = attn::forward(norm, x).output;
    std::vector<float> scalar(rows * n), avx2(rows * n);
    attn::layer_norm_rows(x.data(), rows, n, norm.weight.data(), norm.bias.data(), norm.eps,
                          scalar.data(), FastKernels::scalar);
    INFO("n = " << n);
    CHECK(same_bits(scalar, {expected.begin(), expected.end()}));
    if (have_avx2()) {
      attn::layer_norm_rows(x.data(), rows, n, norm.weight.data(), norm.bias.data(), norm.eps,
                            avx2.data(), FastKernels::avx2);
      CHECK(same_bits(avx2, scalar));
    }
  }
}

TEST_CASE("the GELU kernels are gelu() of the reference, erf and tanh", "[rows]") {
  attn::Rng rng(23);
  for (auto approximate : {attn::GeluApproximation::none, attn::GeluApproximation::tanh}) {
    for (std::size_t n : {1u, 2u, 9u, 16u, 17u, 48u, 1000u, 4099u}) {
      const std::vector<float> x = awkward(rng, n, 3.0f);
      Tensor3 t({1, 1, n});
      std::copy(x.begin(), x.end(), t.begin());
      const Tensor3 expected = attn::gelu(t, approximate);
      std::vector<float> scalar = x;
      attn::gelu_in_place(scalar.data(), n, approximate, FastKernels::scalar);
      INFO("n = " << n << (approximate == attn::GeluApproximation::none ? " erf" : " tanh"));
      CHECK(same_bits(scalar, {expected.begin(), expected.end()}));
      if (have_avx2()) {
        std::vector<float> avx2 = x;
        attn::gelu_in_place(avx2.data(), n, approximate, FastKernels::avx2);
        CHECK(same_bits(avx2, scalar));
      }
    }
  }
}

TEST_CASE("the GELU backward kernel is Φ(x) + x φ(x), the same bits in AVX2 lanes", "[rows]") {
  attn::Rng rng(24);
  for (std::size_t n : {1u, 7u, 8u, 17u, 1000u}) {
    std::vector<float> x = awkward(rng, n, 3.0f), dy(n);
    for (float& g : dy)
      g = static_cast<float>(rng.normal());
    std::vector<float> scalar(n), avx2(n);
    attn::gelu_erf_backward(x.data(), dy.data(), scalar.data(), n, FastKernels::scalar);
    INFO("n = " << n);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = x[i];
      if (!std::isfinite(v)) continue;
      const double slope =
          0.5 * std::erfc(-v / std::sqrt(2.0)) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
      INFO("x = " << x[i]);
      CHECK(std::abs(scalar[i] - dy[i] * slope) <= 1e-6 * (1.0 + std::abs(dy[i] * slope)));
    }
    if (have_avx2()) {
      attn::gelu_erf_backward(x.data(), dy.data(), avx2.data(), n, FastKernels::avx2);
      CHECK(same_bits(avx2, scalar));
    }
  }
}

TEST_CASE("the LayerNorm kernel that keeps its steps gives the kernel's output and moments",
          "[rows]") {
  attn::Rng rng(25);
  for (std::size_t n : {1u, 12u, 129u, 768u}) {
    const attn::LayerNorm norm = attn::init_layer_norm(n);
    const Tensor3 x = attn::randn(rng, 1, 1, n, 2.0f) - 3.0f;
    std::vector<float> out(n), kept(n), normalised(n);
    attn::layer_norm_rows(x.data(), 1, n, norm.weight.data(), norm.bias.data(), norm.eps,
                          out.data(), FastKernels::scalar);
    const attn::RowMoments expected = attn::torch_row_moments(x.data(), n);
    for (FastKernels k : {FastKernels::scalar, FastKernels::avx2}) {
      if (k == FastKernels::avx2 && !have_avx2()) continue;
      const attn::RowMoments m =
          attn::layer_norm_row(x.data(), n, norm.weight.data(), norm.bias.data(), norm.eps,
                               normalised.data(), kept.data(), k);
      INFO("n = " << n << " " << attn::kernels_name(k));
      CHECK(same_bits(kept, out));
      CHECK(same_bits({m.mean, m.variance}, {expected.mean, expected.variance}));
      CHECK(same_bits(normalised, out));  // weight 1, bias 0
    }
  }
}

TEST_CASE("bias_gelu_rows gives the bits of a bias add and gelu_in_place on the whole tensor",
          "[rows]") {
  // Row widths that are and are not multiples of 16, tails of 0 to 15 elements, one element, and a
  // last block of one element (16385 x 1: blocks of 16384 rows, then one, which the rule joins).
  const std::array<std::array<std::size_t, 2>, 8> shapes = {
      {{1, 1}, {17, 1}, {3, 24}, {5, 7}, {40, 3072}, {1000, 40}, {16385, 1}, {333, 100}}};
  attn::Rng rng(12);
  for (FastKernels kernels : {FastKernels::scalar, attn::best_fast_kernels()})
    for (attn::GeluApproximation approximate :
         {attn::GeluApproximation::none, attn::GeluApproximation::tanh})
      for (const auto& [rows, cols] : shapes)
        for (int threads : {1, 2}) {
          INFO(rows << " x " << cols << " threads " << threads);
          std::vector<float> bias(cols), x(rows * cols);
          for (float& v : bias)
            v = static_cast<float>(rng.normal());
          for (float& v : x)
            v = 3.0f * static_cast<float>(rng.normal());
          std::vector<float> expected = x;
          for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t j = 0; j < cols; ++j)
              expected[r * cols + j] += bias[j];
          attn::gelu_in_place(expected.data(), expected.size(), approximate,
                              kernels);  // one thread
          attn::set_threads(threads);
          attn::bias_gelu_rows(x.data(), rows, cols, bias.data(), approximate, kernels);
          CHECK(std::memcmp(x.data(), expected.data(), x.size() * sizeof(float)) == 0);
          attn::set_threads(1);
        }
}

TEST_CASE("GELU on many threads gives the bits of one thread, a last part of one element included",
          "[rows][gemm]") {
  if (!attn::gemm_library_available(attn::GemmLibrary::onednn)) return;  // no OpenMP pool
  const GemmSetting setting(attn::GemmChoice::onednn, 68);
  // 68 parts of 992 elements leave one for the last: it joins the part before, and its element
  // goes through the same erf as in one thread (a one-element tensor would take libm's erf).
  const std::size_t n = 66465;
  attn::Rng rng(30);
  std::vector<float> x(n);
  for (float& v : x)
    v = 2.0f * static_cast<float>(rng.normal());
  // The last element: a value whose one-element GELU (libm's erf) differs from its GELU inside a
  // longer tensor, so that a part of one element would show.
  for (int i = 1; i < 100000; ++i) {
    const float v = 0.001f * static_cast<float>(i);
    float alone = v, inside[17] = {};
    inside[16] = v;
    attn::gelu_in_place(&alone, 1, attn::GeluApproximation::none, attn::FastKernels::scalar);
    attn::gelu_in_place(inside, 17, attn::GeluApproximation::none, attn::FastKernels::scalar);
    if (alone != inside[16]) {
      x[n - 1] = v;
      break;
    }
  }
  for (attn::GeluApproximation approximate :
       {attn::GeluApproximation::none, attn::GeluApproximation::tanh}) {
    std::vector<float> one = x, many = x;
    attn::set_threads(1);
    attn::gelu_in_place(one.data(), n, approximate, attn::best_fast_kernels());
    attn::set_threads(68);
    attn::gelu_in_place(many.data(), n, approximate, attn::best_fast_kernels());
    CHECK(std::memcmp(one.data(), many.data(), n * sizeof(float)) == 0);
  }
}