// Grades lesson 03's exercise against PyTorch (data/generator/exercise_softmax.py) and against
// what any softmax must satisfy. Tags: [softmax] the lesson, [points=N] the marks, [.hidden] shown
// after the due date. The student's functions are called only through STUDENT(...), and expected
// values are used only in checks (see course/harness/grading.hpp).
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "grading.hpp"
#include "softmax_exercise.hpp"

using attn::Tensor2;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-6, 1e-5};

void check_case(const std::string& name) {
  const Tensor3 scores = input<3>("softmax/" + name + "_scores");
  const Tensor3 weights = STUDENT(attn::exercise::softmax(scores));
  check_close("softmax(scores " + attn::shape_string_of(scores) + ")", weights,
              expected<3>("softmax/" + name + "_softmax"), kTolerance);
}

}  // namespace

TEST_CASE("softmax matches PyTorch on scores of shape 2x4x6", "[softmax][points=2]") {
  check_case("b2_t4_s6");
}

TEST_CASE("softmax matches PyTorch on odd shapes 3x5x7 1x6x3 and 1x1x1", "[softmax][points=2]") {
  check_case("b3_t5_s7");
  check_case("b1_t6_s3");
  check_case("b1_t1_s1");
}

TEST_CASE("softmax rows sum to one over the last axis", "[softmax][points=1]") {
  const double predicted =
      STUDENT(attn::grading::prediction(&attn::exercise::predicted_top_weight));
  const std::string prediction = "prediction, the largest weight of softmax(1, 2, 3)";
  if (std::isnan(predicted)) WARN(attn::grading::not_predicted(prediction, "predicted_top_weight"));
  const Tensor3 three = STUDENT(attn::exercise::softmax(Tensor3{{{1.0f, 2.0f, 3.0f}}}));
  if (!std::isnan(predicted))
    WARN(attn::grading::prediction_note(prediction, predicted, three(0, 0, 2), 2));
  const Tensor3 scores = input<3>("softmax/b3_t5_s7_scores");
  const Tensor3 weights = STUDENT(attn::exercise::softmax(scores));
  REQUIRE(weights.dimension() == 3);
  REQUIRE(weights.shape(0) == 3);
  REQUIRE(weights.shape(1) == 5);
  REQUIRE(weights.shape(2) == 7);
  for (std::size_t b = 0; b < 3; ++b) {
    for (std::size_t t = 0; t < 5; ++t) {
      double sum = 0.0;
      for (std::size_t s = 0; s < 7; ++s) {
        INFO("weights(" << b << ", " << t << ", " << s << ") = " << weights(b, t, s));
        CHECK(weights(b, t, s) >= 0.0f);
        sum += weights(b, t, s);
      }
      INFO("row (" << b << ", " << t << ", :) sums to " << sum << ", expected 1");
      CHECK(std::fabs(sum - 1.0) < 1e-5);
      // exp is increasing: a larger score gets a larger weight (a constant row does not).
      for (std::size_t s = 0; s < 7; ++s) {
        for (std::size_t u = 0; u < 7; ++u) {
          if (scores(b, t, s) < scores(b, t, u)) {
            INFO("scores(" << b << ", " << t << ", " << s << ") < scores(" << b << ", " << t << ", "
                           << u << ") but weights " << weights(b, t, s)
                           << " >= " << weights(b, t, u));
            CHECK(weights(b, t, s) < weights(b, t, u));
          }
        }
      }
    }
  }
}

TEST_CASE("softmax of large scores does not overflow", "[softmax][points=2]") {
  check_case("large_b2_t3_s5");
}

TEST_CASE("causal_mask matches torch.triu of -inf", "[softmax][points=1]") {
  const Tensor2 five = STUDENT(attn::exercise::causal_mask(5));
  const Tensor2 one = STUDENT(attn::exercise::causal_mask(1));
  check_close("causal_mask(5)", five, expected<2>("softmax/causal_mask_t5"));
  check_close("causal_mask(1)", one, expected<2>("softmax/causal_mask_t1"));
}

TEST_CASE("apply_mask then softmax gives no weight to future tokens", "[softmax][points=2]") {
  const Tensor3 scores = input<3>("softmax/causal_b2_t5_scores");
  const Tensor2 mask = STUDENT(attn::exercise::causal_mask(5));
  const Tensor3 masked = STUDENT(attn::exercise::apply_mask(scores, mask));
  const Tensor3 weights = STUDENT(attn::exercise::softmax(masked));
  check_close("softmax(apply_mask(scores (2,5,5), causal_mask(5)))", weights,
              expected<3>("softmax/causal_b2_t5_softmax"), kTolerance);
}

TEST_CASE("apply_mask refuses a mask of the wrong shape", "[softmax][points=1]") {
  const Tensor3 scores = input<3>("softmax/b2_t4_s6_scores");
  // A mask that fits: (4,6), -inf on the last two keys of rows 0 and 1, broadcast over the batch.
  Tensor2 fitting = xt::zeros<float>({4, 6});
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t s = 4; s < 6; ++s)
      fitting(t, s) = -std::numeric_limits<float>::infinity();
  Tensor3 sum(scores.shape());
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 4; ++t)
      for (std::size_t s = 0; s < 6; ++s)
        sum(b, t, s) = scores(b, t, s) + fitting(t, s);
  const Tensor3 masked = STUDENT(attn::exercise::apply_mask(scores, fitting));
  check_close("apply_mask(scores (2,4,6), mask (4,6))", masked, sum);
  const Tensor2 wrong = input<2>("softmax/causal_mask_t4");  // (4,4) for scores (2,4,6)
  CHECK_THROWS_AS(STUDENT(attn::exercise::apply_mask(scores, wrong)), std::invalid_argument);
  const Tensor2 taller = xt::zeros<float>({5, 6});  // 5 queries for scores of 4
  CHECK_THROWS_AS(STUDENT(attn::exercise::apply_mask(scores, taller)), std::invalid_argument);
}

// BEGIN HIDDEN TESTS
TEST_CASE("softmax matches PyTorch with -inf scores on padded keys",
          "[softmax][points=2][.hidden]") {
  check_case("padded_b3_t4_s6");
}

TEST_CASE("softmax of a fully masked row is zeros", "[softmax][points=1][.hidden]") {
  Tensor3 scores = input<3>("softmax/b2_t4_s6_scores");
  for (std::size_t s = 0; s < 6; ++s)
    scores(1, 2, s) = -std::numeric_limits<float>::infinity();
  const Tensor3 weights = STUDENT(attn::exercise::softmax(scores));
  REQUIRE(weights.shape() == scores.shape());
  for (std::size_t s = 0; s < 6; ++s) {
    INFO("weights(1, 2, " << s << ") = " << weights(1, 2, s) << ", expected 0");
    CHECK(weights(1, 2, s) == 0.0f);
  }
  check_close("softmax(scores with row (1, 2, :) all -inf)", weights,
              expected<3>("softmax/padded_row_b2_t4_s6_softmax"), kTolerance);
}
// END HIDDEN TESTS
