// Grades lesson 01's exercise against PyTorch (data/generator/exercise_dot_product.py) and against
// what any matrix product and any self-attention must satisfy. Tags: [dot-product] the lesson,
// [points=N] the marks, [.hidden] shown after the due date. The student's functions are called
// only through STUDENT(...), and expected values are used only in checks (see
// course/harness/grading.hpp).
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xmanipulation.hpp>

#include "dot_product_exercise.hpp"
#include "grading.hpp"

using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

void check_transposed(const std::string& name) {
  const Tensor3 a = input<3>("dot-product/" + name + "_a");
  const Tensor3 b = input<3>("dot-product/" + name + "_b");
  const Tensor3 out = STUDENT(attn::exercise::batched_matmul_transposed(a, b));
  check_close("batched_matmul_transposed(a " + attn::shape_string_of(a) + ", b " +
                  attn::shape_string_of(b) + ")",
              out, expected<3>("dot-product/" + name + "_out"), kTolerance);
}

void check_matmul(const std::string& name) {
  const Tensor3 a = input<3>("dot-product/" + name + "_a");
  const Tensor3 b = input<3>("dot-product/" + name + "_b");
  const Tensor3 out = STUDENT(attn::exercise::batched_matmul(a, b));
  check_close(
      "batched_matmul(a " + attn::shape_string_of(a) + ", b " + attn::shape_string_of(b) + ")", out,
      expected<3>("dot-product/" + name + "_out"), kTolerance);
}

void check_attention(const std::string& name, float divisor) {
  const Tensor3 x = input<3>("dot-product/" + name + "_x");
  const attn::DotProductSteps steps = STUDENT(attn::exercise::dot_product_attention(x, divisor));
  const std::string call =
      "dot_product_attention(x " + attn::shape_string_of(x) + ", " + std::to_string(divisor) + ")";
  check_close(call + ".raw_weights", steps.raw_weights,
              expected<3>("dot-product/" + name + "_raw_weights"), kTolerance);
  check_close(call + ".weights", steps.weights, expected<3>("dot-product/" + name + "_weights"),
              kTolerance);
  check_close(call + ".output", steps.output, expected<3>("dot-product/" + name + "_output"),
              kTolerance);
}

}  // namespace

TEST_CASE("batched_matmul_transposed matches torch.bmm of a and b transposed",
          "[dot-product][points=2]") {
  check_transposed("transposed_b2_t3_n4_k5");
  check_transposed("transposed_b3_t6_n2_k7");
  check_transposed("transposed_b1_t1_n1_k3");
}

TEST_CASE("batched_matmul matches torch.bmm on odd shapes", "[dot-product][points=2]") {
  check_matmul("matmul_b2_t3_k4_n5");
  check_matmul("matmul_b3_t1_k7_n2");
  check_matmul("matmul_b1_t5_k1_n3");
}

TEST_CASE(
    "batched_matmul_transposed of x with itself is symmetric with squared lengths on the diagonal",
    "[dot-product][points=1]") {
  const Tensor3 x = input<3>("dot-product/b3_t4_d7_x");
  const Tensor3 gram = STUDENT(attn::exercise::batched_matmul_transposed(x, x));
  REQUIRE(gram.dimension() == 3);
  REQUIRE(gram.shape(0) == 3);
  REQUIRE(gram.shape(1) == 4);
  REQUIRE(gram.shape(2) == 4);
  for (std::size_t b = 0; b < 3; ++b) {
    for (std::size_t i = 0; i < 4; ++i) {
      double squared_length = 0.0;
      for (std::size_t d = 0; d < 7; ++d)
        squared_length += static_cast<double>(x(b, i, d)) * x(b, i, d);
      INFO("gram(" << b << ", " << i << ", " << i << ") = " << gram(b, i, i) << ", expected |x("
                   << b << ", " << i << ", :)|^2 = " << squared_length);
      CHECK(std::fabs(gram(b, i, i) - squared_length) <= 1e-5 * (1.0 + squared_length));
      for (std::size_t j = 0; j < 4; ++j) {
        INFO("gram(" << b << ", " << i << ", " << j << ") = " << gram(b, i, j) << " but gram(" << b
                     << ", " << j << ", " << i << ") = " << gram(b, j, i));
        CHECK(std::fabs(gram(b, i, j) - gram(b, j, i)) <= 1e-6 * (1.0 + std::fabs(gram(b, i, j))));
      }
    }
  }
}

TEST_CASE("batched_matmul and batched_matmul_transposed refuse shapes that do not fit",
          "[dot-product][points=1]") {
  const Tensor3 a = input<3>("dot-product/matmul_b2_t3_k4_n5_a");     // (2,3,4)
  const Tensor3 fits = input<3>("dot-product/matmul_b2_t3_k4_n5_b");  // (B,K,N) (2,4,5) for a
  const Tensor3 fits_transposed = xt::transpose(fits, {0, 2, 1});     // (B,N,K) (2,5,4) for a
  const Tensor3 wrong_inner = xt::zeros<float>({2, 5, 6});            // K = 5 or 6, not 4
  const Tensor3 wrong_batch = xt::zeros<float>({3, 4, 4});            // B = 3, not 2
  // Shapes that fit must still give the product: refusing everything is not enough.
  const Tensor3 product = STUDENT(attn::exercise::batched_matmul(a, fits));
  const Tensor3 product_transposed =
      STUDENT(attn::exercise::batched_matmul_transposed(a, fits_transposed));
  check_close("batched_matmul(a (2,3,4), b (2,4,5))", product,
              expected<3>("dot-product/matmul_b2_t3_k4_n5_out"), kTolerance);
  check_close("batched_matmul_transposed(a (2,3,4), b (2,5,4))", product_transposed,
              expected<3>("dot-product/matmul_b2_t3_k4_n5_out"), kTolerance);
  INFO(
      "a (2,3,4) against b (2,5,6), whose inner size is not 4, and b (3,4,4), whose batch is not 2");
  CHECK_THROWS_AS(STUDENT(attn::exercise::batched_matmul(a, wrong_inner)), std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::batched_matmul(a, wrong_batch)), std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::batched_matmul_transposed(a, wrong_inner)),
                  std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::batched_matmul_transposed(a, wrong_batch)),
                  std::invalid_argument);
}

TEST_CASE("dot_product_attention matches PyTorch at every step on B 2 T 5 D 6",
          "[dot-product][points=3]") {
  check_attention("b2_t5_d6", 1.0f);
}

TEST_CASE("dot_product_attention matches PyTorch on odd shapes down to one token",
          "[dot-product][points=2]") {
  check_attention("b3_t4_d7", 1.0f);
  check_attention("b1_t6_d3", 1.0f);
  check_attention("b1_t1_d5", 1.0f);
}

TEST_CASE("dot_product_attention divides the raw weights by sqrt(D) when asked",
          "[dot-product][points=2]") {
  check_attention("sqrt_b2_t5_d12", std::sqrt(12.0f));
}

TEST_CASE(
    "dot_product_attention weights are a softmax of its raw weights and outputs are their averages",
    "[dot-product][points=2]") {
  const Tensor3 x = input<3>("dot-product/sqrt_b2_t5_d12_x");
  const float divisor = std::sqrt(12.0f);
  const attn::DotProductSteps s = STUDENT(attn::exercise::dot_product_attention(x, divisor));
  REQUIRE(s.raw_weights.shape() == s.weights.shape());
  REQUIRE(s.weights.dimension() == 3);
  REQUIRE(s.weights.shape(0) == 2);
  REQUIRE(s.weights.shape(1) == 5);
  REQUIRE(s.weights.shape(2) == 5);
  REQUIRE(s.output.shape() == x.shape());
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t i = 0; i < 5; ++i) {
      double squared_length = 0.0, sum = 0.0;
      for (std::size_t d = 0; d < 12; ++d)
        squared_length += static_cast<double>(x(b, i, d)) * x(b, i, d);
      INFO("raw_weights(" << b << ", " << i << ", " << i << ") = " << s.raw_weights(b, i, i)
                          << ", expected |x_i|^2 / sqrt(12) = " << squared_length / divisor);
      CHECK(std::fabs(s.raw_weights(b, i, i) - squared_length / divisor) <=
            1e-5 * (1.0 + squared_length));
      for (std::size_t j = 0; j < 5; ++j) {
        sum += s.weights(b, i, j);
        // softmax: w_ij / w_i0 = exp(raw_ij - raw_i0)
        const double log_ratio =
            std::log(static_cast<double>(s.weights(b, i, j)) / s.weights(b, i, 0));
        const double raw_gap = static_cast<double>(s.raw_weights(b, i, j)) - s.raw_weights(b, i, 0);
        INFO("ln(weights(" << b << ", " << i << ", " << j << ") / weights(" << b << ", " << i
                           << ", 0)) = " << log_ratio << ", expected raw_weights difference "
                           << raw_gap);
        CHECK(s.weights(b, i, j) > 0.0f);
        CHECK(std::fabs(log_ratio - raw_gap) <= 1e-4);
      }
      INFO("row (" << b << ", " << i << ", :) of weights sums to " << sum << ", expected 1");
      CHECK(std::fabs(sum - 1.0) < 1e-5);
      for (std::size_t d = 0; d < 12; ++d) {
        double average = 0.0;
        for (std::size_t j = 0; j < 5; ++j)
          average += static_cast<double>(s.weights(b, i, j)) * x(b, j, d);
        INFO("output(" << b << ", " << i << ", " << d << ") = " << s.output(b, i, d)
                       << ", expected sum_j weights(b, i, j) x(b, j, d) = " << average);
        CHECK(std::fabs(s.output(b, i, d) - average) <= 1e-5 * (1.0 + std::fabs(average)));
      }
    }
  }
}

TEST_CASE("dot_product_attention of shuffled tokens gives the same outputs shuffled",
          "[dot-product][points=2]") {
  const Tensor3 x = input<3>("dot-product/b3_t4_d7_x");
  const std::vector<std::size_t> order{2, 0, 3, 1};
  const Tensor3 shuffled = attn::permute_tokens(x, order);
  const attn::DotProductSteps shuffled_then_attended =
      STUDENT(attn::exercise::dot_product_attention(shuffled));
  const attn::DotProductSteps attended = STUDENT(attn::exercise::dot_product_attention(x));
  check_close("dot_product_attention(x shuffled to order 2 0 3 1).output",
              shuffled_then_attended.output, expected<3>("dot-product/shuffled_b3_t4_d7_output"),
              kTolerance);
  check_close("dot_product_attention(x shuffled) against dot_product_attention(x).output shuffled",
              shuffled_then_attended.output, attn::permute_tokens(attended.output, order),
              kTolerance);
}

// BEGIN HIDDEN TESTS
TEST_CASE("dot_product_attention matches PyTorch with large raw weights and a divisor below one",
          "[dot-product][points=2][.hidden]") {
  check_attention("large_b2_t4_d9", 0.5f);
}

TEST_CASE("batched_matmul and batched_matmul_transposed give zeros when the inner size is zero",
          "[dot-product][points=1][.hidden]") {
  const Tensor3 a({2, 3, 0});
  const Tensor3 b({2, 0, 4});
  const Tensor3 b_transposed({2, 4, 0});
  const Tensor3 zeros = xt::zeros<float>({2, 3, 4});
  const Tensor3 product = STUDENT(attn::exercise::batched_matmul(a, b));
  const Tensor3 product_transposed =
      STUDENT(attn::exercise::batched_matmul_transposed(a, b_transposed));
  check_close("batched_matmul(a (2,3,0), b (2,0,4))", product, zeros);
  check_close("batched_matmul_transposed(a (2,3,0), b (2,4,0))", product_transposed, zeros);
  // Zeros everywhere pass the above: an inner size of one must give the product.
  check_matmul("matmul_b1_t5_k1_n3");
  check_transposed("transposed_b1_t1_n1_k3");
}
// END HIDDEN TESTS
