#pragma once

#include <string>
#include <vector>

#include "fast/gpt2_fast.hpp"
#include "gpt2.hpp"
#include "io/bpe.hpp"
#include "lesson.hpp"
#include "train/seq2seq.hpp"

namespace attn::lessons {

struct Gpt2GenerateOptions {
  std::string name;  // the folder as given
  const BpeTokenizer* tokenizer = nullptr;
  std::vector<std::int64_t> prompt;
  std::size_t max_new_tokens = 20;
  DecodeOptions decode;   // sample, temperature, top_k, top_p, seed
  bool forward = false;   // the prompt's forward steps too (hidden states, attentions, logits)
  bool sampling = false;  // the sampling demonstration after it (show_sampling)
};

struct Gpt2GenerateRun {
  LessonRun run;
  double prefill_seconds = 0.0;  // the prompt's pass: the time to the first token
  double step_seconds = 0.0;     // the later tokens' passes
  std::size_t new_tokens = 0;
};

// What the forward steps hold beside the model, for a memory budget.
MemoryPlan plan_gpt2_generate(const Gpt2Config& config, std::size_t prompt,
                              std::size_t max_new_tokens, bool forward);

// GPT-2 generating from a prompt with the key/value cache (lesson 14's loop on a decoder-only
// model): the prompt's tokens, each step's candidates and pick, the text, the cache. With
// options.forward, the readable model's forward of the prompt first; the model is then packed
// for generation as it is consumed.
Gpt2GenerateRun run_gpt2_generate(Gpt2&& model, const Gpt2GenerateOptions& options);
// The same on a model packed for generation (no forward steps).
Gpt2GenerateRun run_gpt2_generate(const Gpt2Config& config, Gpt2Heads heads,
                                  const PackedGpt2& model, const Gpt2GenerateOptions& options);

}  // namespace attn::lessons
