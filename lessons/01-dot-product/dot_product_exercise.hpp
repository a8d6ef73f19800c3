// Lesson 01's exercise: the two batched matrix products of attention, and dot-product
// self-attention built from them. The signatures are the core's (core/matmul.hpp,
// core/dot_product.hpp); you write the bodies in dot_product_exercise.cpp.
//
// Legend: B batch, T rows of the left operand (tokens), K the shared inner size, N the result's
// columns, D model width.
#pragma once

#include "base/tensor.hpp"
#include "dot_product.hpp"

namespace attn::exercise {

// (B,T,K) @ (B,N,K)^T -> (B,T,N): out(b, t, n) is the dot product of a(b, t, :) and b(b, n, :).
// Throws std::invalid_argument when the batch or inner sizes differ.
Tensor3 batched_matmul_transposed(const Tensor3& a, const Tensor3& b);

// (B,T,K) @ (B,K,N) -> (B,T,N), like torch.bmm. Throws std::invalid_argument when the batch or
// inner sizes differ.
Tensor3 batched_matmul(const Tensor3& a, const Tensor3& b);

// x (B,T,D): raw_weights = X Xᵀ / divisor (B,T,T), weights = softmax(raw_weights) over the last
// axis (B,T,T), output = weights X (B,T,D).
DotProductSteps dot_product_attention(const Tensor3& x, float divisor = 1.0f);

}  // namespace attn::exercise
