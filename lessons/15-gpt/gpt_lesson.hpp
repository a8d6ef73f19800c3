#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/budget.hpp"
#include "gpt2.hpp"
#include "io/bpe.hpp"
#include "lesson.hpp"

namespace attn::lessons {

// The characters of the lesson's own model, one token each: a newline, a space, punctuation and
// the lower-case letters.
inline constexpr std::string_view kGptCharacters = "\n !',-.?abcdefghijklmnopqrstuvwxyz";

// A character-level GPT in GPT-2's architecture: a GPT-2 folder's model and tokenizer, or the
// lesson's own, drawn from a seed.
struct CharacterGpt {
  Gpt2 model;
  BpeTokenizer tokenizer;  // vocab.json's form: one byte-mapped character per token, no merges
};
// The lesson's own model: init_gpt2 at a small size (D 8, H 2, L 2, F 32, P 32) over
// kGptCharacters, seeded; untrained, so its guesses are random but every step is GPT-2's.
CharacterGpt seeded_character_gpt(std::uint64_t seed);

struct GptLessonOptions {
  const Gpt2* model = nullptr;
  const BpeTokenizer* tokenizer = nullptr;
  std::string name;               // how the settings name the model
  std::vector<std::int64_t> ids;  // the text's tokens (T >= 1)
  std::string text;               // as given
  std::size_t layer = 0;          // the block shown step by step
  std::size_t top = 3;            // the guesses shown at each position
};

// What run_gpt holds beside the model, for check_budget: the forward and its copies (the changed
// text's and the prefixes'), the steps shown.
MemoryPlan plan_gpt_lesson(const Gpt2Config& config, std::size_t tokens);

// Lesson 15: GPT-2's decoder-only model step by step on a text: the embeddings, one block (ln_1,
// the causal mask, scores and weights, the residual, ln_2, the MLP with GELU's tanh form), ln_f,
// the tied LM head, each position's guesses, the loss of all T predictions from one pass and why
// the causal mask makes it honest, and how it differs from lessons 09 and 13.
LessonRun run_gpt(const GptLessonOptions& options);

}  // namespace attn::lessons
