// Lesson 12's exercise: cross-attention, the decoder's queries reading the encoder's output, and
// the source's padding mask that keeps it from reading padding. The layer is seed 001's
// MultiHeadAttention (core/multi_head.hpp, FusedMultiHead); you write the bodies in
// cross_attention_exercise.cpp.
//
// Legend: B batch, T decoder tokens (queries), S source tokens (keys), D model width, H heads,
// hs head size.
#pragma once

#include <cstdint>

#include "base/tensor.hpp"
#include "embedding.hpp"
#include "multi_head.hpp"

namespace attn::exercise {

// The source's padding mask from its ids (B,S): keep (B,S), 1 on a real token and 0 where the
// id is `pad`: the seed's src_mask (B,1,1,S) without its two axes of size 1.
Tensor2 source_mask(const Ids& source, std::int64_t pad);

// Seed 001's MultiHeadAttention.forward(x, memory, memory, mask): queries from x (B,T,D), keys and
// values from memory (B,S,D), keep (B,S) the source mask above. Fills every field of
// MultiHeadSteps: queries (B,H,T,hs), keys and values (B,H,S,hs), scores (B,H,T,S) with a padded
// key's score replaced by -1e9 (the seed's masked_fill), weights (B,H,T,S), concatenated
// (B,T,H*hs) and output (B,T,D). Throws std::invalid_argument when x or memory is not D wide,
// their batches differ, or keep is not (B,S).
MultiHeadSteps cross_attention(const FusedMultiHead& layer, const Tensor3& x, const Tensor3& memory,
                               const Tensor2& keep);

}  // namespace attn::exercise
