#pragma once

#include "attention.hpp"
#include "lesson.hpp"

namespace attn::lessons {

struct DecoderLessonOptions {
  LessonOptions common;  // seed, batch, seq (T, the target's tokens), d_model
  std::size_t heads = 2, d_ff = 16, source_seq = 6, vocab = 10;
  std::vector<std::size_t> lengths;  // the targets' real tokens (padding), per sequence
};

// Lesson 13: seed 001's DecoderBlock step by step (the causal mask and teacher forcing, masked
// self-attention, cross-attention, feed-forward), the projection and log_softmax, and seed 001's
// remaining bugs beside their fixes.
LessonRun run_decoder(const DecoderLessonOptions& options);

}  // namespace attn::lessons
