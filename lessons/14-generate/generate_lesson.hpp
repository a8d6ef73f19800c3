#pragma once

#include <string>

#include "lesson.hpp"
#include "train/seq2seq.hpp"

namespace attn::lessons {

struct GenerateLessonOptions {
  std::string checkpoint_name;  // as the user gave it, for the text
  Transformer model;
  Seq2SeqTask task = Seq2SeqTask::reverse;
  std::vector<std::int64_t> source;  // source ids
  DecodeOptions decode;              // sample, temperature, top_k, top_p, seed, cache
};

// Lesson 14: decoding a trained encoder-decoder step by step, each step's distribution and pick,
// the KV cache on and off (the same distributions, the multiply-adds saved), the cross-attention
// of the answer, and the answer against the task's.
LessonRun run_generate(const GenerateLessonOptions& options);

}  // namespace attn::lessons
