// Lesson 08's exercise: the book's feed-forward block, Linear -> GELU -> Linear, one token at a
// time. The signatures are the core's (core/matmul.hpp, core/feed_forward.hpp); you write the
// bodies in feed_forward_exercise.cpp.
//
// Legend: B batch, T tokens, D model width, F feed-forward width.
#pragma once

#include "base/tensor.hpp"
#include "feed_forward.hpp"

namespace attn::exercise {

// nn.Linear: x (B,T,in) @ weight(out,in)^T + bias(out) -> (B,T,out); bias may be null (no bias).
Tensor3 linear(const Tensor3& x, const Tensor2& weight, const Tensor1* bias);

// nn.GELU elementwise, same shape as x: 0.5 x (1 + erf(x / sqrt 2)), or with tanh the
// approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor3 gelu(const Tensor3& x, GeluApproximation approximate);

// The book's block on x (B,T,D): hidden = linear_1(x) (B,T,F), activated = GELU(hidden),
// projected = linear_2(activated) (B,T,D), output = projected (dropout is off at inference).
FeedForwardSteps forward(const FeedForward& layer, const Tensor3& x);

}  // namespace attn::exercise
