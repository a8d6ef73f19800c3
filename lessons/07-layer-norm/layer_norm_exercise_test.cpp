// Grades lesson 07's exercise against PyTorch's nn.LayerNorm
// (data/generator/exercise_layer_norm.py) and against what any layer normalisation must satisfy.
// Tags: [layer-norm] the lesson, [points=N] the marks, [.hidden] shown after the due date. The
// student's functions are called only through STUDENT(...), and expected values are used only in
// checks (see course/harness/grading.hpp).
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "grading.hpp"
#include "layer_norm_exercise.hpp"

using attn::LayerNorm;
using attn::LayerNormSteps;
using attn::Tensor1;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

// Two passes in float against torch's one-pass Welford: they differ by a few float32 ulps of
// each normalised value.
constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

LayerNorm fixture_norm(const std::string& name) {
  return LayerNorm{input<1>("layer-norm/" + name + "_weight"),
                   input<1>("layer-norm/" + name + "_bias"),
                   input<1>("layer-norm/" + name + "_eps")(0)};
}

// Every step of forward against nn.LayerNorm on the fixture `name`.
void check_case(const std::string& name, attn::testing::Tolerance tolerance = kTolerance) {
  const Tensor3 x = input<3>("layer-norm/" + name + "_x");
  const LayerNorm norm = fixture_norm(name);
  const std::string call = fmt::format("forward(LayerNorm({}, eps={:g}), x {})", norm.weight.size(),
                                       norm.eps, attn::shape_string_of(x));
  const LayerNormSteps steps = STUDENT(attn::exercise::forward(norm, x));
  check_close(call + ".mean", steps.mean, expected<3>("layer-norm/" + name + "_mean"), tolerance);
  check_close(call + ".variance", steps.variance, expected<3>("layer-norm/" + name + "_variance"),
              tolerance);
  check_close(call + ".normalised", steps.normalised,
              expected<3>("layer-norm/" + name + "_normalised"), tolerance);
  check_close(call + ".output", steps.output, expected<3>("layer-norm/" + name + "_output"),
              tolerance);
}

}  // namespace

TEST_CASE("init_layer_norm gives weight ones and bias zeros of width D", "[layer-norm][points=1]") {
  const LayerNorm norm = STUDENT(attn::exercise::init_layer_norm(5));
  check_close("init_layer_norm(5).weight", norm.weight, Tensor1{1.0f, 1.0f, 1.0f, 1.0f, 1.0f});
  check_close("init_layer_norm(5).bias", norm.bias, Tensor1{0.0f, 0.0f, 0.0f, 0.0f, 0.0f});
  INFO("init_layer_norm(5).eps = " << norm.eps << ", expected nn.LayerNorm's default 1e-5");
  CHECK(norm.eps == 1e-5f);
  const LayerNorm bert = STUDENT(attn::exercise::init_layer_norm(1, 1e-12f));
  check_close("init_layer_norm(1, 1e-12).weight", bert.weight, Tensor1{1.0f});
  check_close("init_layer_norm(1, 1e-12).bias", bert.bias, Tensor1{0.0f});
  INFO("init_layer_norm(1, 1e-12).eps = " << bert.eps);
  CHECK(bert.eps == 1e-12f);
}

TEST_CASE("init_layer_norm refuses an eps that is not positive and finite",
          "[layer-norm][points=1]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float infinity = std::numeric_limits<float>::infinity();
  // Any eps above zero fits, however small or large.
  const LayerNorm fits = STUDENT(attn::exercise::init_layer_norm(4, 1e-3f));
  check_close("init_layer_norm(4, 1e-3).weight", fits.weight, Tensor1{1.0f, 1.0f, 1.0f, 1.0f});
  check_close("init_layer_norm(4, 1e-3).bias", fits.bias, Tensor1{0.0f, 0.0f, 0.0f, 0.0f});
  CHECK(fits.eps == 1e-3f);
  CHECK_THROWS_AS(STUDENT(attn::exercise::init_layer_norm(4, 0.0f)), std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::init_layer_norm(4, -1e-5f)), std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::init_layer_norm(4, nan)), std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::init_layer_norm(4, infinity)), std::invalid_argument);
}

TEST_CASE("forward matches nn.LayerNorm at initialisation on x of shape 2x5x8",
          "[layer-norm][points=2]") {
  check_case("b2_t5_d8");
}

TEST_CASE("forward mean and variance are per token and biased", "[layer-norm][points=2]") {
  const double predicted =
      STUDENT(attn::grading::prediction(&attn::exercise::predicted_normalised_first));
  const std::string prediction = "prediction, the first normalised value of the token (1, 2, 3)";
  if (std::isnan(predicted))
    WARN(attn::grading::not_predicted(prediction, "predicted_normalised_first"));
  // Rows of D = 3 whose mean and variance (divided by D, not D - 1) are known exactly.
  const Tensor3 x{{{1.0f, 2.0f, 3.0f}, {-1.0f, 0.0f, 4.0f}},
                  {{0.5f, 0.5f, 2.0f}, {6.0f, -6.0f, 0.0f}}};
  const LayerNorm norm{Tensor1{1.0f, 1.0f, 1.0f}, Tensor1{0.0f, 0.0f, 0.0f}, 1e-5f};
  const LayerNormSteps steps = STUDENT(attn::exercise::forward(norm, x));
  if (!std::isnan(predicted) && steps.normalised.size() > 0)
    WARN(attn::grading::prediction_note(prediction, predicted, steps.normalised.data()[0], 2));
  check_close("forward(LayerNorm(3), x (2,2,3)).mean", steps.mean,
              Tensor3{{{2.0f}, {1.0f}}, {{1.0f}, {0.0f}}}, kTolerance);
  check_close("forward(LayerNorm(3), x (2,2,3)).variance", steps.variance,
              Tensor3{{{2.0f / 3.0f}, {14.0f / 3.0f}}, {{0.5f}, {24.0f}}}, kTolerance);
}

TEST_CASE("forward normalised tokens have mean 0 and variance var over var plus eps",
          "[layer-norm][points=2]") {
  for (const std::string name : {"b2_t5_d8", "tiny_b1_t4_d3", "tiny_b2_t3_d4"}) {
    const Tensor3 x = input<3>("layer-norm/" + name + "_x");
    const LayerNorm norm = fixture_norm(name);
    const LayerNormSteps steps = STUDENT(attn::exercise::forward(norm, x));
    const Tensor3& normalised = steps.normalised;  // (B,T,D)
    REQUIRE(normalised.shape() == x.shape());
    const std::size_t width = x.shape(2);
    for (std::size_t b = 0; b < x.shape(0); ++b) {
      for (std::size_t t = 0; t < x.shape(1); ++t) {
        double x_mean = 0.0, x_variance = 0.0, mean = 0.0, variance = 0.0;
        for (std::size_t d = 0; d < width; ++d) {
          x_mean += x(b, t, d);
          mean += normalised(b, t, d);
        }
        x_mean /= static_cast<double>(width);
        mean /= static_cast<double>(width);
        for (std::size_t d = 0; d < width; ++d) {
          x_variance += (x(b, t, d) - x_mean) * (x(b, t, d) - x_mean);
          variance += (normalised(b, t, d) - mean) * (normalised(b, t, d) - mean);
        }
        x_variance /= static_cast<double>(width);
        variance /= static_cast<double>(width);
        const double shrunk = x_variance / (x_variance + static_cast<double>(norm.eps));
        INFO(name << ": token (" << b << ", " << t << ") of variance " << x_variance << ", eps "
                  << norm.eps << ": normalised mean " << mean << " (expected 0), variance "
                  << variance << " (expected " << shrunk << ")");
        CHECK(std::fabs(mean) < 1e-5);
        CHECK(std::fabs(variance - shrunk) < 1e-4);
      }
    }
  }
}

TEST_CASE("forward matches nn.LayerNorm for D=3 and D=4 tokens of tiny variance",
          "[layer-norm][points=3]") {
  check_case("tiny_b1_t4_d3");
  check_case("tiny_b2_t3_d4");
}

TEST_CASE("forward applies weight and bias per feature", "[layer-norm][points=2]") {
  check_case("affine_b3_t4_d6");
  const Tensor3 x = input<3>("layer-norm/affine_b3_t4_d6_x");
  const LayerNorm norm = fixture_norm("affine_b3_t4_d6");
  const LayerNormSteps steps = STUDENT(attn::exercise::forward(norm, x));
  REQUIRE(steps.normalised.shape() == x.shape());
  Tensor3 affine(x.shape());
  for (std::size_t b = 0; b < 3; ++b) {
    for (std::size_t t = 0; t < 4; ++t) {
      for (std::size_t d = 0; d < 6; ++d)
        affine(b, t, d) = steps.normalised(b, t, d) * norm.weight(d) + norm.bias(d);
    }
  }
  check_close("forward(...).output against normalised * weight + bias", steps.output, affine,
              kTolerance);
}

TEST_CASE("forward matches nn.LayerNorm for one token per sequence", "[layer-norm][points=1]") {
  check_case("b3_t1_d5");
}

TEST_CASE("forward refuses x whose last size is not the norm width", "[layer-norm][points=1]") {
  const Tensor3 x = input<3>("layer-norm/b2_t5_d8_x");
  const LayerNorm fits = fixture_norm("b2_t5_d8");  // width 8, as x
  const LayerNormSteps steps = STUDENT(attn::exercise::forward(fits, x));
  check_close("forward(LayerNorm(8), x (2,5,8)).output", steps.output,
              expected<3>("layer-norm/b2_t5_d8_output"), kTolerance);
  const LayerNorm narrow{Tensor1{1.0f, 1.0f, 1.0f}, Tensor1{0.0f, 0.0f, 0.0f}, 1e-5f};
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(narrow, x)), std::invalid_argument);
  const LayerNorm mismatched{fixture_norm("b2_t5_d8").weight, Tensor1{0.0f, 0.0f, 0.0f}, 1e-5f};
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(mismatched, x)), std::invalid_argument);
}

// BEGIN HIDDEN TESTS
TEST_CASE("forward of a constant token is zeros then the bias", "[layer-norm][points=1][.hidden]") {
  Tensor3 x = input<3>("layer-norm/affine_b3_t4_d6_x");
  for (std::size_t d = 0; d < 6; ++d)
    x(1, 2, d) = 0.75f;
  const LayerNorm norm = fixture_norm("affine_b3_t4_d6");
  const LayerNormSteps steps = STUDENT(attn::exercise::forward(norm, x));
  REQUIRE(steps.normalised.shape() == x.shape());
  REQUIRE(steps.output.shape() == x.shape());
  for (std::size_t d = 0; d < 6; ++d) {
    INFO("token (1, 2) all 0.75: normalised(1, 2, "
         << d << ") = " << steps.normalised(1, 2, d) << " (expected 0), output "
         << steps.output(1, 2, d) << " (expected bias " << norm.bias(d) << ")");
    CHECK(std::fabs(steps.normalised(1, 2, d)) < 1e-6f);
    CHECK(std::fabs(steps.output(1, 2, d) - norm.bias(d)) < 1e-6f);
  }
  // PyTorch's output on the other tokens, the bias on token (1, 2)
  check_close("forward(...).output with token (1, 2) constant", steps.output,
              expected<3>("layer-norm/constant_b3_t4_d6_output"), kTolerance);
}

TEST_CASE("forward matches nn.LayerNorm at BERT eps far from zero with D=96",
          "[layer-norm][points=2][.hidden]") {
  // Tokens 3 + 0.05 * noise: float32 rounds the mean at the size of x, 60 stds from the mean.
  check_case("bert_b2_t3_d96", {2e-4, 1e-4});
}
// END HIDDEN TESTS
