// Lesson 03's exercise: softmax over the last axis, and the causal mask that hides the future.
// The signatures are the core's (core/softmax.hpp); you write the bodies in softmax_exercise.cpp.
//
// Legend: B batch, T queries, S keys.
#pragma once

#include <cstddef>

#include "base/tensor.hpp"

namespace attn::exercise {

// Your prediction, written in softmax_exercise.cpp before you run attn check: the largest weight
// of softmax over the scores (1, 2, 3). NaN, or no such line: not predicted yet.
[[gnu::weak]] extern const double predicted_top_weight;

// exp(x - rowmax) / sum(exp(x - rowmax)) over the last axis of (B,T,S) scores. A -inf score gets
// weight 0; a row whose scores are all -inf comes out all zeros (it attends to nothing).
Tensor3 softmax(const Tensor3& scores);

// (T,T) additive causal mask: 0 on and below the diagonal, -inf above (query i sees keys <= i).
Tensor2 causal_mask(std::size_t tokens);

// scores (B,T,S) + mask (T,S), the mask broadcast over the batch.
Tensor3 apply_mask(const Tensor3& scores, const Tensor2& mask);

}  // namespace attn::exercise
