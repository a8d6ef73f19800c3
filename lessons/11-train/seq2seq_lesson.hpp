#pragma once

#include <functional>

#include "lesson.hpp"
#include "train/seq2seq.hpp"

namespace attn::lessons {

struct Seq2SeqLessonOptions {
  Seq2SeqTrainConfig config;
  std::function<void(const Seq2SeqStep&)> on_step;  // sees every step (the CLI's progress line)
};

struct Seq2SeqLessonResult {
  LessonRun run;
  Transformer model;  // the trained model, for --save-checkpoint
  Seq2SeqEvaluation held_out;
};

// Lesson 11 with `--model transformer`: seed 001's encoder-decoder trained on a
// sequence-to-sequence task (core/seq2seq.hpp): the data framed for teacher forcing, the loss at
// initialisation against ln V, the curves, the held-out exact match by greedy decoding, and a
// held-out source decoded with its cross-attention.
Seq2SeqLessonResult run_seq2seq_train(const Seq2SeqLessonOptions& options);

// The last decoder layer's cross-attention while `decoded` was written: one heatmap per head,
// rows the written tokens, columns the source's; `title` heads the group.
Heatmaps cross_attention_maps(const Transformer& model, Seq2SeqTask task,
                              const std::vector<std::int64_t>& source,
                              const std::vector<std::int64_t>& decoded, const std::string& title);

}  // namespace attn::lessons
