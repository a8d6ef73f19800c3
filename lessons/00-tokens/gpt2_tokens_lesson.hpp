#pragma once

#include <string>

#include "io/bpe.hpp"
#include "lesson.hpp"

namespace attn::lessons {

// Lesson 00 on GPT-2's tokenizer (--pretrained with a GPT-2 folder): the text cut by GPT-2's
// pattern, each piece's bytes as byte-to-unicode characters, the merges applied by rank step by
// step, and the final ids.
LessonRun run_gpt2_tokens(const std::string& name, const BpeTokenizer& tokenizer,
                          const std::string& text);

}  // namespace attn::lessons
