#pragma once

#include <cstddef>
#include <string>

#include "io/bpe_train.hpp"
#include "lesson.hpp"

namespace attn::lessons {

struct BpeLessonOptions {
  std::string text =
      "the cat sat on the mat; the cat ate the hat. That's the cat's hat, not the rat's!";
  std::size_t vocab_size = 268;  // the 256 bytes and 12 merges
};

// Lesson 16: a byte-level BPE trained step by step as minbpe's RegexTokenizer(GPT2_SPLIT_PATTERN):
// the bytes, GPT-2's chunks, the pair counts and each merge, the vocabulary and the compression,
// the special token, round trips; --save holds the GPT-2 files. Throws attn::Error about "text"
// for invalid UTF-8 and about "vocab_size" when the text runs out of pairs.
LessonRun run_bpe(const BpeLessonOptions& options);

// attn tokenizer train: `training` of the corpus named `corpus`, reported merge by merge
// (the first and last ones) with the compression, and GPT-2's vocab.json and merges.txt as the
// run's save files.
LessonRun run_tokenizer_train(const std::string& corpus, const BpeTraining& training);

}  // namespace attn::lessons
