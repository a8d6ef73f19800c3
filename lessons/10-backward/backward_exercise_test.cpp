// Grades lesson 10's exercise against torch autograd (data/generator/exercise_backward.py) and
// against finite differences of the forward computed here in double precision. Tags: [backward]
// the lesson, [points=N] the marks, [.hidden] shown after the due date.
#include <cmath>
#include <string>

#include "backward_exercise.hpp"
#include "grading.hpp"

using attn::Tensor1;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

// Gradients are sums of products in float32; autograd sums in its own order.
constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};
// A central difference in double with h = 1e-4 is good to about 1e-7 here; the student's float32
// gradient to about 1e-6.
constexpr attn::testing::Tolerance kFiniteDifference{2e-5, 1e-3};

void check_softmax(const std::string& name) {
  const Tensor3 weights = input<3>("backward/softmax_" + name + "_weights");
  const Tensor3 d_weights = input<3>("backward/softmax_" + name + "_d_weights");
  const Tensor3 got = STUDENT(attn::exercise::softmax_backward(weights, d_weights));
  check_close("softmax_backward(weights " + attn::shape_string_of(weights) + ", d_weights)", got,
              expected<3>("backward/softmax_" + name + "_d_scores"), kTolerance);
}

void check_layer_norm(const std::string& name, float eps) {
  const std::string at = "backward/layer_norm_" + name + "_";
  const Tensor3 x = input<3>(at + "x");
  const Tensor1 weight = input<1>(at + "weight");
  const Tensor3 d_output = input<3>(at + "d_output");
  const attn::exercise::LayerNormGradients got =
      STUDENT(attn::exercise::layer_norm_backward(x, weight, eps, d_output));
  const std::string call = "layer_norm_backward(x " + attn::shape_string_of(x) + ")";
  check_close(call + ".d_x", got.d_x, expected<3>(at + "d_x"), kTolerance);
  check_close(call + ".d_weight", got.d_weight, expected<1>(at + "d_weight"), kTolerance);
  check_close(call + ".d_bias", got.d_bias, expected<1>(at + "d_bias"), kTolerance);
}

// Scores of shape (2,3,5) that are no fixture: sines of their index, spread over [-2, 2].
Tensor3 made_up(std::size_t b, std::size_t t, std::size_t s, double scale, double shift) {
  Tensor3 x({b, t, s});
  for (std::size_t i = 0; i < x.size(); ++i)
    x.data()[i] = static_cast<float>(scale * std::sin(1.3 * static_cast<double>(i) + 0.4) + shift);
  return x;
}

// L = Σ g ⊙ softmax(s) over one row, in double.
double softmax_loss(const Tensor3& s, const Tensor3& g, std::size_t row) {
  const std::size_t n = s.shape(2);
  const float* z = s.data() + row * n;
  double largest = z[0], sum = 0.0, loss = 0.0;
  for (std::size_t j = 1; j < n; ++j)
    largest = std::max(largest, static_cast<double>(z[j]));
  for (std::size_t j = 0; j < n; ++j)
    sum += std::exp(z[j] - largest);
  for (std::size_t j = 0; j < n; ++j)
    loss += g.data()[row * n + j] * std::exp(z[j] - largest) / sum;
  return loss;
}

// L = Σ g ⊙ layer_norm(x) over one token (bias 0), in double.
double layer_norm_loss(const Tensor3& x, const Tensor1& weight, float eps, const Tensor3& g,
                       std::size_t row) {
  const std::size_t n = x.shape(2);
  const float* v = x.data() + row * n;
  double mean = 0.0, variance = 0.0, loss = 0.0;
  for (std::size_t j = 0; j < n; ++j)
    mean += v[j] / static_cast<double>(n);
  for (std::size_t j = 0; j < n; ++j)
    variance += (v[j] - mean) * (v[j] - mean) / static_cast<double>(n);
  for (std::size_t j = 0; j < n; ++j)
    loss += g.data()[row * n + j] * (v[j] - mean) / std::sqrt(variance + eps) * weight(j);
  return loss;
}

// (L(x + h) - L(x - h)) / 2h for every element of x, L one row's loss.
template <class Loss>
Tensor3 finite_differences(Tensor3 x, Loss loss) {
  Tensor3 d(x.shape());
  const std::size_t n = x.shape(2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float keep = x.data()[i];
    const double h = 1e-2;
    x.data()[i] = static_cast<float>(keep + h);
    const float up = x.data()[i];
    const double l_up = loss(x, i / n);
    x.data()[i] = static_cast<float>(keep - h);
    const float down = x.data()[i];
    const double l_down = loss(x, i / n);
    x.data()[i] = keep;
    d.data()[i] = static_cast<float>((l_up - l_down) / (static_cast<double>(up) - down));
  }
  return d;
}

}  // namespace

TEST_CASE("softmax_backward matches autograd on weights of shape 2x3x5", "[backward][points=2]") {
  check_softmax("b2_t3_s5");
}

TEST_CASE("softmax_backward matches autograd with masked keys and with one query",
          "[backward][points=2]") {
  check_softmax("b1_t4_s4");  // causal: the masked keys have weight 0 and get no gradient
  check_softmax("b3_t1_s7");
}

TEST_CASE("softmax_backward equals finite differences of softmax", "[backward][points=2]") {
  const Tensor3 scores = made_up(2, 3, 5, 2.0, 0.0);
  const Tensor3 g = made_up(2, 3, 5, 1.0, 0.3);
  Tensor3 weights(scores.shape());  // softmax in double, rounded once
  for (std::size_t r = 0; r < 6; ++r) {
    double largest = scores.data()[r * 5], sum = 0.0;
    for (std::size_t j = 1; j < 5; ++j)
      largest = std::max(largest, static_cast<double>(scores.data()[r * 5 + j]));
    for (std::size_t j = 0; j < 5; ++j)
      sum += std::exp(scores.data()[r * 5 + j] - largest);
    for (std::size_t j = 0; j < 5; ++j)
      weights.data()[r * 5 + j] =
          static_cast<float>(std::exp(scores.data()[r * 5 + j] - largest) / sum);
  }
  const Tensor3 got = STUDENT(attn::exercise::softmax_backward(weights, g));
  const Tensor3 numeric = finite_differences(
      scores, [&](const Tensor3& s, std::size_t row) { return softmax_loss(s, g, row); });
  check_close("softmax_backward(weights (2,3,5), g) against (L(s + h) - L(s - h)) / 2h", got,
              numeric, kFiniteDifference);
}

TEST_CASE("layer_norm_backward matches autograd on x of shape 2x3x8", "[backward][points=3]") {
  check_layer_norm("b2_t3_d8", 1e-5f);
}

TEST_CASE("layer_norm_backward matches autograd for D=12 and for D=3 with a large eps",
          "[backward][points=2]") {
  check_layer_norm("b1_t5_d12", 1e-5f);
  check_layer_norm("b2_t2_d3_eps", 1e-2f);
}

TEST_CASE("layer_norm_backward equals finite differences of LayerNorm", "[backward][points=2]") {
  const Tensor3 x = made_up(2, 2, 6, 3.0, 1.0);
  const Tensor3 g = made_up(2, 2, 6, 1.0, -0.2);
  Tensor1 weight = Tensor1::from_shape({6});
  for (std::size_t j = 0; j < 6; ++j)
    weight(j) = 0.5f + 0.25f * static_cast<float>(j);
  const float eps = 1e-5f;
  const attn::exercise::LayerNormGradients got =
      STUDENT(attn::exercise::layer_norm_backward(x, weight, eps, g));
  const Tensor3 numeric = finite_differences(x, [&](const Tensor3& v, std::size_t row) {
    return layer_norm_loss(v, weight, eps, g, row);
  });
  check_close("layer_norm_backward(x (2,2,6)).d_x against (L(x + h) - L(x - h)) / 2h", got.d_x,
              numeric, kFiniteDifference);
}

// BEGIN HIDDEN TESTS
TEST_CASE("softmax_backward rows sum to zero: a shift of every score changes nothing",
          "[backward][points=1][.hidden]") {
  const Tensor3 weights = input<3>("backward/softmax_b2_t3_s5_weights");
  const Tensor3 d_weights = input<3>("backward/softmax_b2_t3_s5_d_weights");
  const Tensor3 got = STUDENT(attn::exercise::softmax_backward(weights, d_weights));
  for (std::size_t r = 0; r < 6; ++r) {
    double sum = 0.0;
    for (std::size_t j = 0; j < 5; ++j)
      sum += got.data()[r * 5 + j];
    INFO("row " << r << " of dL/dscores sums to " << sum << ", expected 0");
    CHECK(std::fabs(sum) < 1e-5);
  }
  // Zeros sum to zero too: the rows must also be autograd's.
  check_close("softmax_backward(weights (2,3,5), d_weights)", got,
              expected<3>("backward/softmax_b2_t3_s5_d_scores"), kTolerance);
}

TEST_CASE("layer_norm_backward: each token's dx sums to zero", "[backward][points=1][.hidden]") {
  const Tensor3 x = input<3>("backward/layer_norm_b2_t3_d8_x");
  const Tensor1 weight = input<1>("backward/layer_norm_b2_t3_d8_weight");
  const Tensor3 d_output = input<3>("backward/layer_norm_b2_t3_d8_d_output");
  const attn::exercise::LayerNormGradients got =
      STUDENT(attn::exercise::layer_norm_backward(x, weight, 1e-5f, d_output));
  for (std::size_t r = 0; r < 6; ++r) {
    double sum = 0.0;
    for (std::size_t j = 0; j < 8; ++j)
      sum += got.d_x.data()[r * 8 + j];
    INFO("token " << r << "'s dx sums to " << sum << ", expected 0 (x - mean ignores a shift)");
    CHECK(std::fabs(sum) < 1e-4);
  }
  // Zeros sum to zero too: dx must also be autograd's.
  check_close("layer_norm_backward(x (2,3,8)).d_x", got.d_x,
              expected<3>("backward/layer_norm_b2_t3_d8_d_x"), kTolerance);
}
// END HIDDEN TESTS
