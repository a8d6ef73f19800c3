// Softmax over the last axis: scores to weights. Legend: n numbers in a row (the last axis).
//
//   softmax(x)_j = exp(x_j - max_k x_k) / Σ_k exp(x_k - max_k x_k)
//
// Subtracting the row's max changes nothing mathematically and keeps exp from overflowing.
// Masked scores are -inf and get weight 0. A fully masked row (every score -inf) has no softmax:
// PyTorch returns NaN for it. Here such a row comes out all zeros (it attends to nothing), and
// count_fully_masked_rows() lets callers say so; it is never a silent NaN.
#pragma once

#include <cstddef>

#include "base/tensor.hpp"

namespace attn {

// The definition above in double, rounded once: the reference softmax() is held to.
Tensor3 softmax_reference(const Tensor3& scores);

// softmax over the last axis, bit for bit as torch.softmax(x, dim=-1) computes it on an AVX2 CPU
// (kernels/rows.hpp: SLEEF's exp, the sum in 8 lanes then a tree, times the reciprocal of the sum).
Tensor2 softmax(const Tensor2& scores);
Tensor3 softmax(const Tensor3& scores);
Tensor4 softmax(const Tensor4& scores);

// The backward of softmax over the last axis, from its output p and the gradient dP:
// dS = p ⊙ (dP - Σ_j p_j dP_j) per row, the Jacobian diag(p) - p pᵀ applied to dP. Masked
// entries (p = 0) and fully masked rows get 0. The row sums are taken in double.
Tensor3 softmax_backward(const Tensor3& weights, const Tensor3& d_weights);

// exp(x) / sum(exp(x)) without subtracting the max: overflows to inf (and inf/inf = nan) for
// float32 scores above about 88.7. Taught, never used.
Tensor3 softmax_naive(const Tensor3& scores);

// Rows (along the last axis) whose entries are all -inf.
std::size_t count_fully_masked_rows(const Tensor3& scores);

// (T,T) additive causal mask: 0 on and below the diagonal, -inf above (query i sees keys <= i).
Tensor2 causal_mask(std::size_t tokens);
// scores (B,T,S) + mask (T,S) broadcast over the batch.
Tensor3 apply_mask(const Tensor3& scores, const Tensor2& mask);

}  // namespace attn
