// Grades lesson 08's exercise against PyTorch (data/generator/exercise_feed_forward.py) and against
// what any GELU and any position-wise block must satisfy. Tags: [feed-forward] the lesson,
// [points=N] the marks, [.hidden] shown after the due date. The student's functions are called only
// through STUDENT(...), and expected values are used only in checks (see
// course/harness/grading.hpp).
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "feed_forward_exercise.hpp"
#include "grading.hpp"

using attn::FeedForward;
using attn::FeedForwardSteps;
using attn::GeluApproximation;
using attn::Tensor1;
using attn::Tensor2;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};      // sums of float products
constexpr attn::testing::Tolerance kGeluTolerance{1e-6, 1e-5};  // one erf or tanh per element

void check_linear(const std::string& name, bool with_bias) {
  const std::string prefix = "feed-forward/linear_" + name;
  const Tensor3 x = input<3>(prefix + "_x");
  const Tensor2 weight = input<2>(prefix + "_weight");
  const Tensor1 bias = with_bias ? input<1>(prefix + "_bias") : Tensor1();
  const Tensor1* bias_or_null = with_bias ? &bias : nullptr;
  const Tensor3 out = STUDENT(attn::exercise::linear(x, weight, bias_or_null));
  check_close("linear(x " + attn::shape_string_of(x) + ", weight " + attn::shape_string_of(weight) +
                  (with_bias ? ", bias)" : ", no bias)"),
              out, expected<3>(prefix + "_out"), kTolerance);
}

void check_gelu(const std::string& name, GeluApproximation approximate) {
  const std::string prefix = "feed-forward/gelu_" + name;
  const std::string form = approximate == GeluApproximation::none ? "none" : "tanh";
  const Tensor3 x = input<3>(prefix + "_x");
  const Tensor3 y = STUDENT(attn::exercise::gelu(x, approximate));
  check_close("gelu(x " + attn::shape_string_of(x) + ", " + form + ")", y,
              expected<3>(prefix + "_" + form), kGeluTolerance);
}

// The book's block with the weights PyTorch drew for `name`.
FeedForward load_block(const std::string& name, GeluApproximation approximate) {
  const std::string prefix = "feed-forward/block_" + name;
  FeedForward block;
  block.variant = attn::FeedForwardVariant::book;
  block.approximate = approximate;
  block.linear_1 = {input<2>(prefix + "_linear_1_weight"), input<1>(prefix + "_linear_1_bias"),
                    true};
  block.linear_2 = {input<2>(prefix + "_linear_2_weight"), input<1>(prefix + "_linear_2_bias"),
                    true};
  return block;
}

void check_block(const std::string& name, GeluApproximation approximate = GeluApproximation::none) {
  const std::string prefix = "feed-forward/block_" + name;
  const Tensor3 x = input<3>(prefix + "_x");
  const FeedForward block = load_block(name, approximate);
  const FeedForwardSteps steps = STUDENT(attn::exercise::forward(block, x));
  const std::string call = "forward(block " + name + ", x " + attn::shape_string_of(x) + ")";
  check_close(call + ".hidden", steps.hidden, expected<3>(prefix + "_hidden"), kTolerance);
  check_close(call + ".activated", steps.activated, expected<3>(prefix + "_activated"), kTolerance);
  check_close(call + ".projected", steps.projected, expected<3>(prefix + "_projected"), kTolerance);
  check_close(call + ".output", steps.output, expected<3>(prefix + "_output"), kTolerance);
}

}  // namespace

TEST_CASE("linear matches torch nn.Linear on x 2x5x6 with weight 4x6", "[feed-forward][points=2]") {
  check_linear("b2_t5_i6_o4", true);
}

TEST_CASE("linear matches torch on one token per batch 3x1x5 to width 9 and without a bias",
          "[feed-forward][points=1]") {
  check_linear("b3_t1_i5_o9", true);
  check_linear("nobias_b1_t3_i7_o5", false);
}

TEST_CASE(
    "linear refuses a weight whose width is not the last axis of x and a bias of another size",
    "[feed-forward][points=1]") {
  const Tensor3 x = input<3>("feed-forward/linear_b2_t5_i6_o4_x");
  const Tensor2 weight = input<2>("feed-forward/linear_b3_t1_i5_o9_weight");  // (9,5) for x (2,5,6)
  check_linear("b2_t5_i6_o4", true);  // the same x with its weight (4,6) fits
  CHECK_THROWS_AS(STUDENT(attn::exercise::linear(x, weight, nullptr)), std::invalid_argument);
  const Tensor2 fitting = input<2>("feed-forward/linear_b2_t5_i6_o4_weight");  // (4,6)
  const Tensor1 longer = input<1>("feed-forward/linear_b3_t1_i5_o9_bias");     // (9) for 4 outputs
  INFO("linear(x (2,5,6), weight (4,6), bias (9))");
  CHECK_THROWS_AS(STUDENT(attn::exercise::linear(x, fitting, &longer)), std::invalid_argument);
}

TEST_CASE("gelu matches torch nn.GELU on a grid from -8 to 8 and on random values",
          "[feed-forward][points=2]") {
  check_gelu("grid_b7_t23_f1", GeluApproximation::none);
  check_gelu("random_b2_t3_f17", GeluApproximation::none);
}

TEST_CASE("gelu with the tanh approximation matches torch nn.GELU(approximate tanh)",
          "[feed-forward][points=1]") {
  check_gelu("grid_b7_t23_f1", GeluApproximation::tanh);
  check_gelu("random_b2_t3_f17", GeluApproximation::tanh);
}

TEST_CASE("gelu is 0 at 0 and x Phi(x) at known points with its minimum near -0.17",
          "[feed-forward][points=1]") {
  // x Φ(x) with Φ the standard normal CDF: Φ(1) = 0.841345, Φ(-1) = 0.158655, Φ(-0.75) = 0.226627.
  const std::vector<float> xs = {0.0f, 1.0f, -1.0f, -0.75f, 10.0f, -10.0f};
  const std::vector<float> known = {0.0f, 0.841345f, -0.158655f, -0.169970f, 10.0f, 0.0f};
  Tensor3 x({1, 1, xs.size()});
  for (std::size_t i = 0; i < xs.size(); ++i)
    x(0, 0, i) = xs[i];
  const Tensor3 y = STUDENT(attn::exercise::gelu(x, GeluApproximation::none));
  REQUIRE(y.shape() == x.shape());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    INFO("gelu(" << xs[i] << ") = " << y(0, 0, i) << ", expected " << known[i]);
    CHECK(std::fabs(y(0, 0, i) - known[i]) < 1e-5f);
  }
}

TEST_CASE("forward matches the PyTorch book FeedForward step by step on 2x5x6 with F 24",
          "[feed-forward][points=3]") {
  check_block("b2_t5_d6_f24");
}

TEST_CASE("forward matches PyTorch on odd sizes 3x4x7 with F 10 and 1x1x5 with F 3",
          "[feed-forward][points=2]") {
  check_block("b3_t4_d7_f10");
  check_block("b1_t1_d5_f3");
}

TEST_CASE("forward is position-wise so each token alone gives its row of the PyTorch output",
          "[feed-forward][points=2]") {
  const FeedForward block = load_block("b3_t4_d7_f10", GeluApproximation::none);
  const Tensor3 x = input<3>("feed-forward/block_b3_t4_d7_f10_x");
  for (std::size_t b = 0; b < x.shape(0); ++b) {
    for (std::size_t t = 0; t < x.shape(1); ++t) {
      Tensor3 token({1, 1, x.shape(2)});
      for (std::size_t d = 0; d < x.shape(2); ++d)
        token(0, 0, d) = x(b, t, d);
      const FeedForwardSteps alone = STUDENT(attn::exercise::forward(block, token));
      // row (b, t) of PyTorch's output on the whole x, (1,1,D)
      const std::string row =
          "feed-forward/block_b3_t4_d7_f10_output_b" + std::to_string(b) + "_t" + std::to_string(t);
      const std::string where = std::to_string(b) + ", " + std::to_string(t);
      check_close("forward(block, token x(" + where + ", :) alone).output", alone.output,
                  expected<3>(row), kTolerance);
    }
  }
}

// BEGIN HIDDEN TESTS
TEST_CASE("forward with the tanh GELU matches PyTorch on 2x3x8 with F 20",
          "[feed-forward][points=2][.hidden]") {
  check_block("tanh_b2_t3_d8_f20", GeluApproximation::tanh);
}

TEST_CASE("forward refuses an input whose width is not D", "[feed-forward][points=1][.hidden]") {
  const FeedForward block = load_block("b2_t5_d6_f24", GeluApproximation::none);
  const Tensor3 wrong = input<3>("feed-forward/block_b3_t4_d7_f10_x");  // (3,4,7) for D = 6
  const Tensor3 fits = input<3>("feed-forward/block_b2_t5_d6_f24_x");   // (2,5,6)
  const FeedForwardSteps steps = STUDENT(attn::exercise::forward(block, fits));
  check_close("forward(block b2_t5_d6_f24, x (2,5,6)).output", steps.output,
              expected<3>("feed-forward/block_b2_t5_d6_f24_output"), kTolerance);
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(block, wrong)), std::invalid_argument);
}
// END HIDDEN TESTS
