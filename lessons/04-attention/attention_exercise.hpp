// Lesson 04's exercise: one attention head, from Q, K and V to the weighted values, with the mask
// that hides future and padding keys. The signatures are the core's (core/attention.hpp); you
// write the bodies in attention_exercise.cpp.
//
// Legend: B batch, T queries, S keys, D model width, hs head size (queries and keys), hv value size.
#pragma once

#include <cstddef>
#include <vector>

#include "attention.hpp"
#include "base/tensor.hpp"

namespace attn::exercise {

// softmax(Q Kᵀ / sqrt(hs) + mask) V for queries (B,T,hs), keys (B,S,hs) and values (B,S,hv), mask
// (B,T,S) additive or null. Fills every member of AttentionSteps; the output is (B,T,hv).
AttentionSteps scaled_dot_product_attention(const Tensor3& queries, const Tensor3& keys,
                                            const Tensor3& values, const Tensor3* mask);

// (B,T,T) additive mask: -inf above the diagonal when `causal`, and -inf on the keys at or past
// lengths[b] (padding) when `lengths` is not empty; 0 everywhere else.
Tensor3 attention_mask(std::size_t batch, std::size_t tokens, bool causal,
                       const std::vector<std::size_t>& lengths);

// One AttentionHead on x (B,T,D): Q, K, V = x Wᵀ + b with head.q, head.k, head.v (weights (hs,D),
// biases (hs)), then scaled_dot_product_attention on them.
AttentionSteps forward(const AttentionHead& head, const Tensor3& x, const Tensor3* mask);

}  // namespace attn::exercise
