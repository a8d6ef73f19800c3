// Lesson 19, the logit lens (nostalgebraist 2020): what a decoder would predict if it stopped after
// each block, read through its own ln_f and unembedding (core/logit_lens.hpp).
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

struct LensLessonOptions {
  const Gpt2* model = nullptr;
  const BpeTokenizer* tokenizer = nullptr;
  std::string name;               // how the settings name the model
  std::vector<std::int64_t> ids;  // the text's tokens (T >= 1)
  std::string text;               // as given, for the settings
  std::size_t top = 5;            // K: the tokens listed per row at `position`
  std::size_t position = 0;       // the position whose top K the lesson lists
};

// The position lens_lesson lists by default: the last one whose next token the text holds (T - 2),
// or 0 for one token.
std::size_t default_lens_position(std::size_t tokens);

// A token as the lens shows it: its text with a space as ␣, a newline as ↵ and a tab as ⇥, cut to
// `width` columns with …; a token that is no whole UTF-8 text shows its vocabulary entry.
std::string lens_token(const BpeTokenizer& tokenizer, std::int64_t id, std::size_t width = 40);

// What the picture and an exported page show: each row x position cell's top K tokens.
struct LensPicture {
  std::string model, text;
  std::vector<std::string> row_labels;   // R: "embeddings", "h.0", ...
  std::vector<std::string> inputs;       // T: the input tokens, the columns
  std::vector<std::string> next;         // T: the token after each (the last: "")
  std::size_t top = 0;                   // K
  std::vector<std::string> top_tokens;   // (R,T,K) row-major
  std::vector<float> top_probabilities;  // (R,T,K)
  std::vector<std::size_t> final_rank;   // (R,T) the final prediction's rank, 1 the top
  std::vector<std::string> final;        // T: the model's own prediction at each position
  std::size_t rows() const { return row_labels.size(); }
  std::size_t tokens() const { return inputs.size(); }
};

struct LensLessonRun {
  LessonRun run;
  LensPicture picture;
};

// What run_lens holds beside the model, for check_budget.
MemoryPlan plan_lens_lesson(const Gpt2Config& config, std::size_t tokens, std::size_t top);

// Lesson 19: every row of the logit lens on a text: the picture (rows x positions, each cell the
// top token on its probability's colour, * where it is the text's next token), at which row the
// final prediction appears, the true next tokens' ranks and probabilities per row, and the top K
// of one position; checks that the last row is the model's output and that each number the prose
// states is what the table shows.
LensLessonRun run_lens(const LensLessonOptions& options);

}  // namespace attn::lessons
