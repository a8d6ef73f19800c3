// Lesson 13's exercise: the target's mask, and one of seed 001's DecoderBlocks step by step, as
// lesson 13's model has it: three residual connections, pre-LN as the seed writes
// ResidualConnection (x + sublayer(norm(x))). The block's struct is the core's
// (core/transformer.hpp); you write the bodies in decoder_exercise.cpp.
//
// Legend: B batch, T target tokens, S source tokens, D model width, H heads.
#pragma once

#include <cstdint>

#include "base/tensor.hpp"
#include "embedding.hpp"
#include "transformer.hpp"

namespace attn::exercise {

// The target's mask from its ids (B,T): keep (B,T,T), 1 where query i may look at key j and 0
// where it may not: the seed's target mask without its head axis.
Tensor3 target_mask(const Ids& target, std::int64_t pad);

// Every step of one block, (B,T,D) each.
struct DecoderBlockSteps {
  Tensor3 norm_1;           // residual_connection.0's norm of x
  Tensor3 self_attention;   // masked self-attention on norm_1
  Tensor3 residual_1;       // the stream after the first residual connection
  Tensor3 norm_2;           // residual_connection.1's norm of residual_1
  Tensor3 cross_attention;  // queries from norm_2, keys and values from the memory
  Tensor3 residual_2;
  Tensor3 norm_3;        // residual_connection.2's norm of residual_2
  Tensor3 feed_forward;  // on norm_3
  Tensor3 output;        // the stream after the third residual connection
};

// x (B,T,D) the target's stream, memory (B,S,D) the encoder's output, target_keep (B,T,T) as
// target_mask gives it, source_keep (B,S) 1 on real source tokens (lesson 12's source_mask).
// A masked score is replaced by -1e9, as the seed's masked_fill(mask == 0, -1e9). Throws
// std::invalid_argument when the block is not pre-LN, or when the masks do not fit x and memory.
DecoderBlockSteps forward(const DecoderBlock& block, const Tensor3& x, const Tensor3& memory,
                          const Tensor3& target_keep, const Tensor2& source_keep);

}  // namespace attn::exercise
