// Lesson 08's exercise. Fill in each function where it says TODO, then run
//
//     attn check feed-forward        (the tests, with what was expected and what came out)
//     attn hint feed-forward         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(0) is its first size, x(b, t, d) an element, and
// Tensor3({B, T, D}) a new tensor of that shape. A Linear holds weight (out,in), bias (out) and
// has_bias; FeedForwardSteps and FeedForward are in core/feed_forward.hpp.
#include "feed_forward_exercise.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace attn::exercise {

Tensor3 linear(const Tensor3& x, const Tensor2& weight, const Tensor1* bias) {
  // TODO(lesson 08): nn.Linear on every token: x Wᵀ + b, with no bias term when bias is null.
  // x (B,T,in), weight (out,in), bias (out) or null -> (B,T,out). Throws std::invalid_argument
  // when weight's second size is not x's last size, or bias is not `out` long.
  // PyTorch: F.linear(x, weight, bias), that is x @ weight.T + bias
  // BEGIN SOLUTION
  const std::size_t batch = x.shape(0), tokens = x.shape(1), in = x.shape(2), out = weight.shape(0);
  if (weight.shape(1) != in || (bias != nullptr && bias->shape(0) != out)) {
    throw std::invalid_argument(fmt::format("linear: x {} does not fit weight {} and bias {}",
                                            shape_string_of(x), shape_string_of(weight),
                                            bias ? shape_string_of(*bias) : "none"));
  }
  Tensor3 result({batch, tokens, out});  // (B,T,in) @ (in,out) -> (B,T,out)
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t t = 0; t < tokens; ++t) {
      for (std::size_t o = 0; o < out; ++o) {
        float sum = bias != nullptr ? (*bias)(o) : 0.0f;
        for (std::size_t i = 0; i < in; ++i)
          sum += x(b, t, i) * weight(o, i);
        result(b, t, o) = sum;
      }
    }
  }
  return result;
  // END SOLUTION
}

Tensor3 gelu(const Tensor3& x, GeluApproximation approximate) {
  // TODO(lesson 08): nn.GELU on every element: for none the exact 0.5 v (1 + erf(v / sqrt(2))),
  // for tanh the approximation 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3))). The result has
  // x's shape, (B,T,F) in the block. PyTorch: F.gelu(x, approximate='none' or 'tanh')
  // BEGIN SOLUTION
  const float sqrt_half = 0.70710678118654752f, sqrt_two_over_pi = 0.79788456080286536f;
  Tensor3 activated(x.shape());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = x.data()[i];
    const float bend = approximate == GeluApproximation::none
                           ? std::erf(v * sqrt_half)
                           : std::tanh(sqrt_two_over_pi * (v + 0.044715f * v * v * v));
    activated.data()[i] = 0.5f * v * (1.0f + bend);
  }
  return activated;
  // END SOLUTION
}

FeedForwardSteps forward(const FeedForward& layer, const Tensor3& x) {
  // TODO(lesson 08): the book's FeedForward on x, every step kept in FeedForwardSteps: linear_1
  // widens each token to F, the GELU (layer.approximate) bends it, linear_2 narrows it back to D,
  // and dropout is the identity at inference. A Linear whose has_bias is false adds no bias.
  // x (B,T,D) -> hidden (B,T,F), activated (B,T,F), projected (B,T,D), output (B,T,D). Throws
  // std::invalid_argument when x is not D wide (linear_1's input width). A bare gelu(...) here is
  // ambiguous with the core's attn::gelu (same signature): yours is exercise::gelu.
  // PyTorch: self.dropout(self.linear_2(self.gelu(self.linear_1(x))))
  // BEGIN SOLUTION
  const Linear& first = layer.linear_1;
  const Linear& second = layer.linear_2;
  if (x.shape(2) != first.weight.shape(1)) {
    throw std::invalid_argument(
        fmt::format("feed_forward: x {} does not fit a block of width D = {}", shape_string_of(x),
                    first.weight.shape(1)));
  }
  const Tensor1* first_bias = first.has_bias ? &first.bias : nullptr;
  const Tensor1* second_bias = second.has_bias ? &second.bias : nullptr;
  FeedForwardSteps steps;
  steps.hidden = exercise::linear(x, first.weight, first_bias);       // (B,T,D) -> (B,T,F)
  steps.activated = exercise::gelu(steps.hidden, layer.approximate);  // (B,T,F)
  steps.projected =
      exercise::linear(steps.activated, second.weight, second_bias);  // (B,T,F) -> (B,T,D)
  steps.output = steps.projected;  // (B,T,D) dropout: the identity at inference
  return steps;
  // END SOLUTION
}

}  // namespace attn::exercise
