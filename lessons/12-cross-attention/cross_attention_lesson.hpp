#pragma once

#include <vector>

#include "attention.hpp"
#include "lesson.hpp"
#include "train/seq2seq.hpp"
#include "train/trainer.hpp"

namespace attn::lessons {

// --checkpoint: a trained encoder-decoder's cross-attention on a task's own tokens. The decoder
// reads <s> and the task's answer (teacher forcing, as in training); the lesson shows what
// decoder layer `layer`'s cross-attention reads and computes.
struct TrainedCrossAttention {
  std::string checkpoint;  // as given
  Transformer model;
  Seq2SeqTask task = Seq2SeqTask::reverse;
  std::vector<std::int64_t> source;  // source ids
  std::size_t layer = 0;
  TrainConfig config;  // the run that trained it: its held-out sources are measured
};

struct CrossAttentionLessonOptions {
  LessonOptions common;  // seed, batch, seq (T, the decoder's tokens), d_model
  std::size_t heads = 2;
  std::size_t source_seq = 7;               // S, the encoder's tokens
  std::vector<std::size_t> source_lengths;  // padding: source b has source_lengths[b] real tokens
  MaskFill fill = MaskFill::seed;
  std::optional<TrainedCrossAttention> trained;  // replaces the sizes and the random inputs
};

// Lesson 12: seed 001's MultiHeadAttention as cross-attention, step by step: queries from x
// (B,T,D), keys and values from the memory (B,S,D), the T x S scores, the source's padding
// mask, the weights as heatmaps with both token sets as labels, and the output.
LessonRun run_cross_attention(const CrossAttentionLessonOptions& options);

}  // namespace attn::lessons
