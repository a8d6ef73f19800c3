// Lesson 14's exercise: the two pieces of generation that are not a layer. One sampling step, from
// the logits to the token drawn, filtered in Hugging Face's order; and one step of attention with a
// KV cache, which must give what recomputing the whole prefix gives. You write the bodies in
// generate_exercise.cpp.
//
// Legend: V vocabulary, B batch, t tokens already decoded, D model width, H heads, hs head size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/tensor.hpp"
#include "multi_head.hpp"

namespace attn::exercise {

// How a token is drawn: temperature > 0; top_k 0 for every token; top_p in (0, 1], 1 for every
// token.
struct SamplingSettings {
  float temperature = 1.0f;
  std::size_t top_k = 0;
  float top_p = 1.0f;
};

struct SampledToken {
  Tensor1 probabilities;   // (V) what the token is drawn from: 0 for every token filtered out
  std::int64_t token = 0;  // the token drawn
};

// One sampling step on logits (V), in Hugging Face's order: temperature, then top-k, then top-p on
// what top-k kept (renormalised), keeping the smallest set of most likely tokens whose probability
// is at least p. The ids in `special` (padding, <s>) are never drawn. The draw is by inverse CDF
// from `uniform` in [0, 1): the first token, in id order, with probability above 0 whose
// cumulative probability exceeds `uniform`. Throws std::invalid_argument for a temperature <= 0,
// a top_p outside (0, 1], a uniform outside [0, 1), or when every token is special.
SampledToken sample_next(const Tensor1& logits, const std::vector<std::int64_t>& special,
                         const SamplingSettings& settings, float uniform);

struct CachedAttention {
  Tensor4 keys;     // (B,H,t+1,hs) the cache with the new token's key appended
  Tensor4 values;   // (B,H,t+1,hs) likewise
  Tensor4 weights;  // (B,H,1,t+1) the new token's attention weights
  Tensor3 output;   // (B,1,D) the new token's output
};

// One decoding step of seed 001's self-attention (FusedMultiHead) with a KV cache: x_new (B,1,D)
// is the new token's input, cached_keys and cached_values (B,H,t,hs) the keys and values of the t
// tokens before it (t may be 0). Equal to the last row of the attention on all t + 1 tokens under
// the causal mask. Throws std::invalid_argument when x_new is not (B,1,D) or the cache is not
// (B,H,t,hs).
CachedAttention attend_with_cache(const FusedMultiHead& layer, const Tensor4& cached_keys,
                                  const Tensor4& cached_values, const Tensor3& x_new);

}  // namespace attn::exercise
