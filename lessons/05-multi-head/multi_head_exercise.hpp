// Lesson 05's exercise: multi-head attention. One projection per role is cut into H heads, each
// head attends on its own, and the heads' outputs are joined and projected back to width D. The
// signatures are the core's (core/multi_head.hpp); split_heads and merge_heads are its inner steps,
// here in the (B,H,T,hs) layout of MultiHeadSteps. You write the bodies in multi_head_exercise.cpp.
//
// Legend: B batch, T tokens, D model width, H heads, hs head size.
#pragma once

#include <cstddef>

#include "base/tensor.hpp"
#include "multi_head.hpp"

namespace attn::exercise {

// hs for a variant: D for wide, D / H for narrow, book and fused. Throws std::invalid_argument when
// D or H is 0, or when H does not divide D (narrow, book, fused).
std::size_t head_size(MultiHeadVariant variant, std::size_t d_model, std::size_t heads);

// (B,T,H*hs) -> (B,H,T,hs), torch's x.view(B,T,H,hs).transpose(1,2): head h gets the columns
// h*hs .. h*hs + hs - 1.
Tensor4 split_heads(const Tensor3& x, std::size_t heads);

// (B,H,T,hs) -> (B,T,H*hs), torch's y.transpose(1,2).reshape(B,T,H*hs): the heads side by side.
Tensor3 merge_heads(const Tensor4& y);

// What every form shares once Q, K, V (B,H,T,hs) are in `steps`: per head Q Kᵀ / sqrt(hs) + mask,
// softmax, @ V, the heads merged and projected by `output`. Fills steps.scores, weights,
// concatenated and output. mask (B,T,T) additive or null, the same for every head.
void attend(MultiHeadSteps& steps, const Tensor3* mask, const Linear& output);

// x (B,T,D), mask (B,T,T) additive or null, for each form: Q, K, V from the form's projections,
// then attend(). Seed 004's class covers narrow and wide, the same code at two sizes.
MultiHeadSteps forward(const Seed004MultiHead& layer, const Tensor3& x, const Tensor3* mask);
MultiHeadSteps forward(const BookMultiHead& layer, const Tensor3& x, const Tensor3* mask);
MultiHeadSteps forward(const FusedMultiHead& layer, const Tensor3& x, const Tensor3* mask);

}  // namespace attn::exercise
