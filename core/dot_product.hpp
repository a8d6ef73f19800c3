// Self-attention with no parameters (seeds 002 and 004): every token is compared with every
// other by a dot product, the comparisons become weights by a softmax, and each output is the
// weighted average of the inputs.
#pragma once

#include <vector>

#include "base/budget.hpp"
#include "base/tensor.hpp"

namespace attn {

struct DotProductSteps {
  Tensor3 raw_weights;  // (B,T,T) W' = X Xᵀ / divisor
  Tensor3 weights;      // (B,T,T) W = softmax(W') over the last axis
  Tensor3 output;       // (B,T,D) Y = W X
};

// x (B,T,D). The raw weights are divided by `divisor` (1 here; sqrt(D) in the scaling lesson),
// a float division as torch's `scores / sqrt(d)` does.
DotProductSteps dot_product_attention(const Tensor3& x, float divisor = 1.0f);

// The output Y computed in float64 from the float32 x: Y without float32's round-off.
Tensor3d dot_product_attention_float64(const Tensor3& x, float divisor = 1.0f);

// What each holds at its peak, for a memory budget (core/base/budget.hpp): the steps; X and Y in
// float64.
MemoryPlan plan_dot_product_attention(std::size_t batch, std::size_t tokens, std::size_t width);
MemoryPlan plan_dot_product_attention_float64(std::size_t batch, std::size_t tokens,
                                              std::size_t width);

// x with its tokens reordered: out[:, i] = x[:, order[i]].
Tensor3 permute_tokens(const Tensor3& x, const std::vector<std::size_t>& order);

// Mean pooling: the average over the tokens, (B, T, D) -> (B, 1, D), summed in double.
Tensor3 mean_over_tokens(const Tensor3& x);

}  // namespace attn
