// Grades lesson 05's exercise against PyTorch (data/generator/exercise_multi_head.py: the notebooks'
// classes and torch.nn.MultiheadAttention) and against what any multi-head attention must satisfy.
// Tags: [multi-head] the lesson, [points=N] the marks, [.hidden] shown after the due date. The
// student's functions are called only through STUDENT(...), and expected values are used only in
// checks (see course/harness/grading.hpp).
//
// Legend: B batch, T tokens, D model width, H heads, hs head size.
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "grading.hpp"
#include "multi_head_exercise.hpp"

using attn::MultiHeadAttention;
using attn::MultiHeadSteps;
using attn::MultiHeadVariant;
using attn::Tensor3;
using attn::Tensor4;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

// A tensor the test gives the student's code, and one PyTorch computed, of the case `name`.
template <std::size_t N>
xt::xtensor<float, N> given(const std::string& name, const std::string& what) {
  return input<N>("multi-head/" + name + "_" + what);
}
template <std::size_t N>
xt::xtensor<float, N> computed(const std::string& name, const std::string& what) {
  return expected<N>("multi-head/" + name + "_" + what);
}

attn::Linear linear(const std::string& name, const std::string& which, bool bias) {
  return attn::Linear{given<2>(name, which + "_weight"),
                      bias ? given<1>(name, which + "_bias") : attn::Tensor1(), bias};
}

// The fixture's weights in the form's members: W_Q..W_O, toqueries..unifyheads, or heads +
// output_linear.
MultiHeadAttention layer_of(const std::string& name, MultiHeadVariant variant, std::size_t heads) {
  switch (variant) {
    case MultiHeadVariant::fused:
      return attn::FusedMultiHead{heads, linear(name, "W_Q", false), linear(name, "W_K", false),
                                  linear(name, "W_V", false), linear(name, "W_O", false)};
    case MultiHeadVariant::wide:
    case MultiHeadVariant::narrow: {
      const attn::Seed004MultiHead layer{
          heads, linear(name, "tokeys", false), linear(name, "toqueries", false),
          linear(name, "tovalues", false), linear(name, "unifyheads", true)};
      if (variant == MultiHeadVariant::wide) return attn::WideMultiHead{layer};
      return attn::NarrowMultiHead{layer};
    }
    case MultiHeadVariant::book:
      break;
  }
  attn::BookMultiHead layer;
  for (std::size_t h = 0; h < heads; ++h) {
    const std::string head = "head" + std::to_string(h);
    layer.heads.push_back(attn::AttentionHead{linear(name, head + "_q", true),
                                              linear(name, head + "_k", true),
                                              linear(name, head + "_v", true)});
  }
  layer.output_linear = linear(name, "output_linear", true);
  return layer;
}

// The student's forward for the form the layer holds.
MultiHeadSteps forward_of(const MultiHeadAttention& layer, const Tensor3& x, const Tensor3* mask) {
  return std::visit([&](const auto& form) { return attn::exercise::forward(form, x, mask); },
                    layer);
}

// forward(layer, x, mask) against every step PyTorch computed for the case.
MultiHeadSteps check_forward(const std::string& name, MultiHeadVariant variant, std::size_t d_model,
                             std::size_t heads, bool masked = false) {
  const Tensor3 x = given<3>(name, "x");
  const Tensor3 mask = masked ? given<3>(name, "mask") : Tensor3();
  const Tensor3* mask_or_null = masked ? &mask : nullptr;
  const MultiHeadAttention layer = layer_of(name, variant, heads);
  const std::string call =
      fmt::format("forward({} layer D={} H={}, x {}{})", attn::variant_name(variant), d_model,
                  heads, attn::shape_string_of(x), masked ? ", mask" : "");
  const MultiHeadSteps got = STUDENT(forward_of(layer, x, mask_or_null));
  check_close(call + ".queries", got.queries, computed<4>(name, "queries"), kTolerance);
  check_close(call + ".keys", got.keys, computed<4>(name, "keys"), kTolerance);
  check_close(call + ".values", got.values, computed<4>(name, "values"), kTolerance);
  check_close(call + ".scores", got.scores, computed<4>(name, "scores"), kTolerance);
  check_close(call + ".weights", got.weights, computed<4>(name, "weights"), kTolerance);
  check_close(call + ".concatenated", got.concatenated, computed<3>(name, "concatenated"),
              kTolerance);
  check_close(call + ".output", got.output, computed<3>(name, "output"), kTolerance);
  return got;
}

}  // namespace

TEST_CASE("head_size is D for wide and D over H for narrow book and fused",
          "[multi-head][points=1]") {
  const std::size_t wide_12_3 = STUDENT(attn::exercise::head_size(MultiHeadVariant::wide, 12, 3));
  const std::size_t wide_5_3 = STUDENT(attn::exercise::head_size(MultiHeadVariant::wide, 5, 3));
  const std::size_t narrow_12_3 =
      STUDENT(attn::exercise::head_size(MultiHeadVariant::narrow, 12, 3));
  const std::size_t book_10_2 = STUDENT(attn::exercise::head_size(MultiHeadVariant::book, 10, 2));
  const std::size_t fused_6_6 = STUDENT(attn::exercise::head_size(MultiHeadVariant::fused, 6, 6));
  const std::size_t fused_8_1 = STUDENT(attn::exercise::head_size(MultiHeadVariant::fused, 8, 1));
  INFO("head_size(variant, D, H)");
  CHECK(wide_12_3 == 12);
  CHECK(wide_5_3 == 5);
  CHECK(narrow_12_3 == 4);
  CHECK(book_10_2 == 5);
  CHECK(fused_6_6 == 1);
  CHECK(fused_8_1 == 8);
}

TEST_CASE("head_size refuses H that does not divide D and sizes of zero",
          "[multi-head][points=1]") {
  // The same variants with H that divides D, or any H for wide, give a head size.
  const std::size_t narrow_12_3 =
      STUDENT(attn::exercise::head_size(MultiHeadVariant::narrow, 12, 3));
  const std::size_t fused_10_5 = STUDENT(attn::exercise::head_size(MultiHeadVariant::fused, 10, 5));
  const std::size_t book_6_6 = STUDENT(attn::exercise::head_size(MultiHeadVariant::book, 6, 6));
  const std::size_t wide_7_2 = STUDENT(attn::exercise::head_size(MultiHeadVariant::wide, 7, 2));
  CHECK(narrow_12_3 == 4);
  CHECK(fused_10_5 == 2);
  CHECK(book_6_6 == 1);
  CHECK(wide_7_2 == 7);
  INFO("head_size(narrow, 12, 5)");
  CHECK_THROWS_AS(STUDENT(attn::exercise::head_size(MultiHeadVariant::narrow, 12, 5)),
                  std::invalid_argument);
  INFO("head_size(fused, 10, 4)");
  CHECK_THROWS_AS(STUDENT(attn::exercise::head_size(MultiHeadVariant::fused, 10, 4)),
                  std::invalid_argument);
  INFO("head_size(book, 6, 0)");
  CHECK_THROWS_AS(STUDENT(attn::exercise::head_size(MultiHeadVariant::book, 6, 0)),
                  std::invalid_argument);
  INFO("head_size(wide, 0, 2)");
  CHECK_THROWS_AS(STUDENT(attn::exercise::head_size(MultiHeadVariant::wide, 0, 2)),
                  std::invalid_argument);
}

TEST_CASE(
    "split_heads matches torch view and transpose for D=12 into 3 heads and for T=1 D=6 into 2",
    "[multi-head][points=2]") {
  const Tensor3 x = given<3>("split_b2_t5_d12_h3", "x");
  const Tensor3 one_token = given<3>("split_b1_t1_d6_h2", "x");
  const Tensor4 heads = STUDENT(attn::exercise::split_heads(x, 3));
  const Tensor4 one_token_heads = STUDENT(attn::exercise::split_heads(one_token, 2));
  check_close("split_heads(x (2,5,12), 3)", heads, computed<4>("split_b2_t5_d12_h3", "heads"));
  check_close("split_heads(x (1,1,6), 2)", one_token_heads,
              computed<4>("split_b1_t1_d6_h2", "heads"));
}

TEST_CASE("merge_heads matches torch transpose and reshape and undoes split_heads",
          "[multi-head][points=2]") {
  const Tensor4 y = given<4>("merge_b2_h3_t4_hs5", "y");
  const Tensor3 merged = STUDENT(attn::exercise::merge_heads(y));
  check_close("merge_heads(y (2,3,4,5))", merged, computed<3>("merge_b2_h3_t4_hs5", "merged"));
  const Tensor3 x = given<3>("split_b2_t5_d12_h3", "x");
  const Tensor4 heads = STUDENT(attn::exercise::split_heads(x, 3));
  const Tensor3 round_trip = STUDENT(attn::exercise::merge_heads(heads));
  check_close("merge_heads(split_heads(x (2,5,12), 3))", round_trip, x);
}

TEST_CASE("fused forward matches torch.nn.MultiheadAttention with D=12 and H=3 (hs=4)",
          "[multi-head][points=3]") {
  check_forward("fused_b2_t5_d12_h3", MultiHeadVariant::fused, 12, 3);
}

TEST_CASE("narrow and wide forward match PyTorch on odd sizes", "[multi-head][points=2]") {
  check_forward("narrow_b1_t4_d6_h2", MultiHeadVariant::narrow, 6, 2);  // hs = 3
  check_forward("wide_b2_t3_d5_h3", MultiHeadVariant::wide, 5, 3);  // hs = 5: projections (B,T,15)
}

TEST_CASE("book forward matches PyTorch with biased heads (D=10 H=2)", "[multi-head][points=2]") {
  check_forward("book_b2_t4_d10_h2", MultiHeadVariant::book, 10, 2);
}

TEST_CASE("fused forward with a causal and padding mask gives hidden keys zero weight",
          "[multi-head][points=2]") {
  const MultiHeadSteps got =
      check_forward("fused_masked_b2_t5_d8_h2", MultiHeadVariant::fused, 8, 2, true);
  REQUIRE(got.weights.shape() == (std::array<std::size_t, 4>{2, 2, 5, 5}));
  const std::array<std::size_t, 2> lengths{5, 3};
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t t = 0; t < 5; ++t)
        for (std::size_t s = 0; s < 5; ++s) {
          if (s <= t && s < lengths[b]) continue;
          INFO("weights(" << b << ", " << h << ", " << t << ", " << s
                          << ") = " << got.weights(b, h, t, s) << " on a hidden key, expected 0");
          CHECK(got.weights(b, h, t, s) == 0.0f);
        }
}

TEST_CASE("fused forward adds a float mask after the scaling", "[multi-head][points=1]") {
  check_forward("fused_float_mask_b2_t4_d6_h2", MultiHeadVariant::fused, 6, 2, true);
}

TEST_CASE("split_heads and forward refuse a width H does not divide and a mask that does not fit",
          "[multi-head][points=1]") {
  // Shapes that fit give PyTorch's heads and steps: refusing everything is not enough.
  const Tensor3 x = given<3>("split_b2_t5_d12_h3", "x");  // (2,5,12)
  const Tensor4 heads = STUDENT(attn::exercise::split_heads(x, 3));
  check_close("split_heads(x (2,5,12), 3)", heads, computed<4>("split_b2_t5_d12_h3", "heads"));
  check_forward("fused_masked_b2_t5_d8_h2", MultiHeadVariant::fused, 8, 2, true);
  INFO("split_heads(x (2,5,12), 5): 12 is not 5 heads of equal size");
  CHECK_THROWS_AS(STUDENT(attn::exercise::split_heads(x, 5)), std::invalid_argument);
  const Tensor3 masked_x = given<3>("fused_masked_b2_t5_d8_h2", "x");  // (2,5,8)
  const MultiHeadAttention layer = layer_of("fused_masked_b2_t5_d8_h2", MultiHeadVariant::fused, 2);
  const Tensor3 wider = xt::zeros<float>({2, 5, 6});  // 6 keys for 5 tokens
  INFO("forward(fused D=8 H=2, x (2,5,8), mask (2,5,6))");
  CHECK_THROWS_AS(STUDENT(forward_of(layer, masked_x, &wider)), std::invalid_argument);
}

TEST_CASE("fused forward commutes with shuffling the tokens", "[multi-head][points=1]") {
  const std::array<std::size_t, 5> order{4, 2, 0, 3,
                                         1};  // token t of the shuffled x is token order[t]
  const Tensor3 x = given<3>("fused_b2_t5_d12_h3", "x");  // (2,5,12)
  Tensor3 shuffled(x.shape());
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 5; ++t)
      for (std::size_t d = 0; d < 12; ++d)
        shuffled(b, t, d) = x(b, order[t], d);
  const MultiHeadAttention layer = layer_of("fused_b2_t5_d12_h3", MultiHeadVariant::fused, 3);
  const MultiHeadSteps got = STUDENT(forward_of(layer, shuffled, nullptr));
  // PyTorch's output (2,5,12) with its rows, and weights (2,3,5,5) with rows and columns, in that
  // order
  check_close("forward(fused D=12 H=3, x (2,5,12) with tokens in order 4 2 0 3 1).output",
              got.output, computed<3>("fused_b2_t5_d12_h3", "shuffled_output"), kTolerance);
  check_close("forward(fused D=12 H=3, x (2,5,12) with tokens in order 4 2 0 3 1).weights",
              got.weights, computed<4>("fused_b2_t5_d12_h3", "shuffled_weights"), kTolerance);
}

// BEGIN HIDDEN TESTS
TEST_CASE("fused forward matches PyTorch with 4 heads of size 2 at T=1 and T=7",
          "[multi-head][points=2][.hidden]") {
  check_forward("fused_b3_t1_d8_h4", MultiHeadVariant::fused, 8, 4);
  check_forward("fused_b1_t7_d8_h4", MultiHeadVariant::fused, 8, 4);
}

TEST_CASE("book forward matches PyTorch with a padding mask (D=6 H=3)",
          "[multi-head][points=2][.hidden]") {
  check_forward("book_padded_b2_t5_d6_h3", MultiHeadVariant::book, 6, 3, true);
}
// END HIDDEN TESTS
