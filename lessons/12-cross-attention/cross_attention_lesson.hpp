#pragma once

#include <vector>

#include "attention.hpp"
#include "lesson.hpp"

namespace attn::lessons {

struct CrossAttentionLessonOptions {
  LessonOptions common;  // seed, batch, seq (T, the decoder's tokens), d_model
  std::size_t heads = 2;
  std::size_t source_seq = 7;               // S, the encoder's tokens
  std::vector<std::size_t> source_lengths;  // padding: source b has source_lengths[b] real tokens
  MaskFill fill = MaskFill::seed;
};

// Lesson 12: seed 001's MultiHeadAttention as cross-attention, step by step: queries from x
// (B,T,D), keys and values from the memory (B,S,D), the T x S scores, the source's padding
// mask, the weights as heatmaps with both token sets as labels, and the output.
LessonRun run_cross_attention(const CrossAttentionLessonOptions& options);

}  // namespace attn::lessons
