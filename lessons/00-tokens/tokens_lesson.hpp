#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/tokenizer.hpp"
#include "lesson.hpp"

namespace attn::lessons {

struct TokensLessonOptions {
  std::uint64_t seed = 0;
  std::string text = "time flies like an arrow";
  std::optional<Vocabulary> vocab;  // --vocab, already read; else the lesson vocabulary
  std::string vocab_name;           // its path, for the settings
  std::size_t d_model = 6;          // ignored with --weights: D comes from the table
  bool add_special_tokens = false;
  TokenizerOptions tokenizer;        // --pretrained: the folder's lower-casing
  bool scale_by_sqrt_d = false;      // seed 001's InputEmbedding: times sqrt(D)
  std::optional<StateDict> weights;  // --weights: nn.Embedding's state_dict, key weight (V, D)
  std::string weights_name;
};

// Lesson 00: text -> BERT's tokenizer -> ids -> nn.Embedding -> (1, T, D). The run lists the
// WordPiece tokens and their ids as "tokens" and "ids".
LessonRun run_tokens(const TokensLessonOptions& options);

}  // namespace attn::lessons
