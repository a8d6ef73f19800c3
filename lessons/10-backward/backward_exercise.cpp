// Lesson 10's exercise. Fill in each function where it says TODO, then run
//
//     attn check backward        (the tests, with what was expected and what came out)
//     attn hint backward         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(2) is its last size, x(b, t, d) an element, and
// Tensor3(x.shape()) a new tensor of x's shape; Tensor1::from_shape({D}) is a vector of D numbers.
#include "backward_exercise.hpp"

#include <cmath>
#include <vector>

namespace attn::exercise {

Tensor3 softmax_backward(const Tensor3& weights, const Tensor3& d_weights) {
  // TODO(lesson 10): the gradient of the loss with respect to the scores, from the softmax's
  // output and the gradient with respect to that output. A row of weights depends on every score
  // of its row and on nothing else. weights, d_weights (B,T,S) -> d_scores (B,T,S). The checks:
  // each row of d_scores sums to 0 (adding a constant to a row of scores changes no weight), a
  // masked key (weight 0) gets 0, and the tests compare with torch autograd and with finite
  // differences. PyTorch: torch.autograd.grad(torch.softmax(s, -1), s, g)
  // BEGIN SOLUTION
  Tensor3 d_scores(weights.shape());
  const std::size_t rows = weights.shape(0) * weights.shape(1), n = weights.shape(2);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* p = weights.data() + r * n;
    const float* g = d_weights.data() + r * n;
    double dot = 0.0;  // Σ_k p_k g_k
    for (std::size_t k = 0; k < n; ++k)
      dot += static_cast<double>(p[k]) * g[k];
    for (std::size_t j = 0; j < n; ++j)
      d_scores.data()[r * n + j] = static_cast<float>(p[j] * (g[j] - dot));
  }
  return d_scores;
  // END SOLUTION
}

LayerNormGradients layer_norm_backward(const Tensor3& x, const Tensor1& weight, float eps,
                                       const Tensor3& d_output) {
  // TODO(lesson 10): nn.LayerNorm's backward (biased variance, eps inside the root): the
  // gradients of the loss with respect to x, weight and bias, from the gradient with respect to
  // the output. A token's mean and variance depend on all D of its numbers, so each element of dx
  // gathers from the whole token. x, d_output (B,T,D), weight (D) -> d_x (B,T,D), d_weight and
  // d_bias (D), summed over every token. The checks: each token's dx sums to 0 (shifting a whole
  // token changes nothing once its mean is taken out), and the tests compare with torch autograd
  // and with finite differences.
  // PyTorch: x.grad, norm.weight.grad and norm.bias.grad after norm(x).backward(dy)
  // BEGIN SOLUTION
  const std::size_t width = x.shape(2), rows = x.shape(0) * x.shape(1);
  LayerNormGradients grads{Tensor3(x.shape()), Tensor1::from_shape({width}),
                           Tensor1::from_shape({width})};
  std::vector<double> d_weight(width, 0.0), d_bias(width, 0.0), normalised(width), g(width);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * width;
    const float* dy = d_output.data() + r * width;
    double mean = 0.0, variance = 0.0;
    for (std::size_t j = 0; j < width; ++j)
      mean += in[j];
    mean /= static_cast<double>(width);
    for (std::size_t j = 0; j < width; ++j)
      variance += (in[j] - mean) * (in[j] - mean);
    variance /= static_cast<double>(width);
    const double rstd = 1.0 / std::sqrt(variance + static_cast<double>(eps));
    double g_mean = 0.0, gx_mean = 0.0;
    for (std::size_t j = 0; j < width; ++j) {
      normalised[j] = (in[j] - mean) * rstd;
      g[j] = static_cast<double>(dy[j]) * weight(j);
      g_mean += g[j];
      gx_mean += g[j] * normalised[j];
      d_weight[j] += static_cast<double>(dy[j]) * normalised[j];
      d_bias[j] += dy[j];
    }
    g_mean /= static_cast<double>(width);
    gx_mean /= static_cast<double>(width);
    for (std::size_t j = 0; j < width; ++j)
      grads.d_x.data()[r * width + j] =
          static_cast<float>(rstd * (g[j] - g_mean - normalised[j] * gx_mean));
  }
  for (std::size_t j = 0; j < width; ++j) {
    grads.d_weight(j) = static_cast<float>(d_weight[j]);
    grads.d_bias(j) = static_cast<float>(d_bias[j]);
  }
  return grads;
  // END SOLUTION
}

}  // namespace attn::exercise
