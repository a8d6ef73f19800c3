// Generating text with GPT-2: the prompt once through the model (prefill), then one token at a
// time against the key/value cache, each picked greedily or drawn as Hugging Face's generate()
// draws it (sampling_distribution: temperature, top-k, top-p), until max_new_tokens or the end
// of text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bert.hpp"  // TokenPrediction
#include "fast/gpt2_fast.hpp"
#include "train/seq2seq.hpp"  // DecodeOptions

namespace attn {

struct Gpt2DecodeStep {
  std::int64_t pick = 0;
  float log_prob = 0.0f;             // log softmax(logits)[pick]: the model's, before any filter
  std::vector<TokenPrediction> top;  // the most probable of what the pick was drawn from
  std::size_t candidates = 0;        // tokens with a probability above 0 in it
};

struct Gpt2Decoded {
  std::vector<std::int64_t> tokens;  // generated, without the prompt; the end of text included
  std::vector<Gpt2DecodeStep> steps;
  bool ended = false;            // stopped at the end-of-text token
  double prefill_seconds = 0.0;  // the prompt's pass: the time to the first token
  double step_seconds = 0.0;     // every later token's pass, summed
  std::size_t cache_bytes = 0;   // the cache as allocated (prompt + max_new_tokens)
  std::size_t workspace_bytes = 0;
};

// Throws attn::Error for an empty prompt, more tokens than the model's positions, or options
// check_decode_options refuses.
Gpt2Decoded generate(const PackedGpt2& model, const std::vector<std::int64_t>& prompt,
                     std::size_t max_new_tokens, const DecodeOptions& options,
                     std::int64_t end_of_text, std::size_t top = 5);

}  // namespace attn
