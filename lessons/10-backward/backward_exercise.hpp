// Lesson 10's exercise: two backward passes written by hand, the softmax's and LayerNorm's, as
// core/softmax.hpp and core/layer_norm.hpp have them. You write the bodies in
// backward_exercise.cpp; the tests hold them to torch autograd and to finite differences.
//
// Legend: B batch, T tokens (queries), S keys, D model width.
#pragma once

#include "base/tensor.hpp"

namespace attn::exercise {

// The backward of softmax over the last axis: weights p (B,T,S) = softmax(scores), d_weights
// dL/dp (B,T,S) -> dL/dscores (B,T,S). Per row, through the Jacobian diag(p) - p pᵀ.
Tensor3 softmax_backward(const Tensor3& weights, const Tensor3& d_weights);

struct LayerNormGradients {
  Tensor3 d_x;       // (B,T,D) dL/dx
  Tensor1 d_weight;  // (D) dL/dweight, summed over every token
  Tensor1 d_bias;    // (D) dL/dbias, summed over every token
};

// The backward of nn.LayerNorm(D) over the last axis, y = (x - mean) / sqrt(var + eps) * weight +
// bias with the biased variance: x (B,T,D), weight (D), d_output dL/dy (B,T,D). The bias is not
// needed: it only shifts y.
LayerNormGradients layer_norm_backward(const Tensor3& x, const Tensor1& weight, float eps,
                                       const Tensor3& d_output);

}  // namespace attn::exercise
