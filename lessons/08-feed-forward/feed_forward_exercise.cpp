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
  // TODO(lesson 08): out(b, t, o) = bias(o) + the sum over i of x(b, t, i) * weight(o, i), with no
  // bias term when bias is null. Throw std::invalid_argument when weight's width is not x's last axis.
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
  // TODO(lesson 08): for every element v, none: 0.5 v (1 + erf(v / sqrt(2))); tanh: 0.5 v (1 +
  // tanh(sqrt(2 / pi) (v + 0.044715 v^3))). std::erf and std::tanh are in <cmath>.
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
  // TODO(lesson 08): hidden = linear_1(x), activated = exercise::gelu(hidden, layer.approximate),
  // projected = linear_2(activated), output = projected, with your exercise::linear for the Linears
  // (attn::gelu is the core's). Throw std::invalid_argument when x's width is not D.
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
