// Lesson 07's exercise. Fill in each function where it says TODO, then run
//
//     attn check layer-norm        (the tests, with what was expected and what came out)
//     attn hint layer-norm         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(2) is its last size, x(b, t, d) an element, and
// Tensor3({B, T, 1}) a new tensor of that shape. LayerNorm and LayerNormSteps are the core's
// structs (core/layer_norm.hpp).
#include "layer_norm_exercise.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace attn::exercise {

// PREDICT before you run attn check: a token of D = 3 numbers (1, 2, 3) goes through forward
// with weight ones, bias zeros and eps 1e-5. What is the first of its normalised values? Write
// your guess in place of the NaN. attn check prints it beside the value your forward computed; a
// prediction earns or costs no points.
const double predicted_normalised_first = -1.0;  // prediction

LayerNorm init_layer_norm(std::size_t d_model, float eps) {
  // TODO(lesson 07): nn.LayerNorm(D, eps) as it starts: weight (D) all ones, bias (D) all zeros,
  // and eps. Throws std::invalid_argument unless eps is positive and finite.
  // PyTorch: nn.LayerNorm(d_model, eps=eps), whose weight is torch.ones(D) and bias torch.zeros(D)
  // BEGIN SOLUTION
  if (!(eps > 0.0f) || !std::isfinite(eps)) {
    throw std::invalid_argument(
        fmt::format("init_layer_norm: eps={} must be positive and finite", eps));
  }
  LayerNorm norm;
  norm.weight = Tensor1::from_shape({d_model});  // (D)
  norm.bias = Tensor1::from_shape({d_model});    // (D)
  for (std::size_t j = 0; j < d_model; ++j) {
    norm.weight(j) = 1.0f;
    norm.bias(j) = 0.0f;
  }
  norm.eps = eps;
  return norm;
  // END SOLUTION
}

LayerNormSteps forward(const LayerNorm& norm, const Tensor3& x) {
  // TODO(lesson 07): nn.LayerNorm on each token's D numbers, every step kept in LayerNormSteps: the
  // token's mean, its biased variance (the mean of the squared distances from the mean),
  // normalised = (x - mean) / sqrt(variance + eps) with eps inside the root, and output =
  // normalised * weight + bias, weight and bias per feature. x (B,T,D) -> mean (B,T,1), variance
  // (B,T,1), normalised (B,T,D), output (B,T,D). Throws std::invalid_argument when weight or bias
  // is not D long. PyTorch: F.layer_norm(x, (D,), weight, bias, eps), whose steps are
  // x.mean(-1, keepdim=True) and x.var(-1, unbiased=False, keepdim=True)
  // BEGIN SOLUTION
  const std::size_t batch = x.shape(0), tokens = x.shape(1), width = x.shape(2);
  if (norm.weight.size() != width || norm.bias.size() != width) {
    throw std::invalid_argument(
        fmt::format("forward: x ({},{},{}) does not fit weight ({}) and bias ({})", batch, tokens,
                    width, norm.weight.size(), norm.bias.size()));
  }
  LayerNormSteps steps{Tensor3({batch, tokens, 1}), Tensor3({batch, tokens, 1}), Tensor3(x.shape()),
                       Tensor3(x.shape())};
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t t = 0; t < tokens; ++t) {
      float mean = 0.0f;
      for (std::size_t d = 0; d < width; ++d)
        mean += x(b, t, d);
      mean /= static_cast<float>(width);
      float variance = 0.0f;
      for (std::size_t d = 0; d < width; ++d)
        variance += (x(b, t, d) - mean) * (x(b, t, d) - mean);
      variance /= static_cast<float>(width);
      steps.mean(b, t, 0) = mean;          // (B,T,1)
      steps.variance(b, t, 0) = variance;  // (B,T,1)
      const float root = std::sqrt(variance + norm.eps);
      for (std::size_t d = 0; d < width; ++d) {
        steps.normalised(b, t, d) = (x(b, t, d) - mean) / root;  // (B,T,D)
        steps.output(b, t, d) =
            steps.normalised(b, t, d) * norm.weight(d) + norm.bias(d);  // (B,T,D)
      }
    }
  }
  return steps;
  // END SOLUTION
}

}  // namespace attn::exercise
