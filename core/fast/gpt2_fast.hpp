// Generation with GPT-2 at the speed of memory, beside the readable model in gpt2.hpp. A new
// token needs every weight once (L blocks and the (V,D) LM head) and little arithmetic on each:
// its time is the time to read the weights, so the weights are read once per token, as
// contiguous rows, by matrix-vector products shared out on the threads.
//
//   PackedGpt2   the embeddings, each block's weights (q, k, v stacked into one (3D, D) matrix,
//                every matrix (out, in) row-major) and ln_f; the LM head is wte.
//   Gpt2Cache    each block's keys and values of the tokens so far: (H, capacity, hs) each.
//   prefill      the prompt's T tokens at once (GEMMs, causal attention), filling the cache.
//   step         one token: its row through every block against the cache, then the logits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpt2.hpp"

namespace attn {

struct PackedGpt2Block {
  std::vector<float> norm_1_weight, norm_1_bias;  // (D) ln_1
  std::vector<float> qkv_weight, qkv_bias;        // (3D, D), (3D): rows [q | k | v]
  std::vector<float> out_weight, out_bias;        // (D, D), (D) attn.c_proj
  std::vector<float> norm_2_weight, norm_2_bias;  // (D) ln_2
  std::vector<float> fc_weight, fc_bias;          // (F, D), (F) mlp.c_fc
  std::vector<float> proj_weight, proj_bias;      // (D, F), (D) mlp.c_proj
};

struct PackedGpt2 {
  std::size_t vocab = 0, positions = 0, d_model = 0, heads = 0, d_ff = 0;
  float eps = 1e-5f;
  std::vector<float> wte;  // (V, D), the LM head too
  std::vector<float> wpe;  // (P, D)
  std::vector<PackedGpt2Block> blocks;
  std::vector<float> norm_weight, norm_bias;  // (D) ln_f
  std::vector<float> lm_head;                 // (V, D) when untied; empty: wte
};

// Packs a block at a time, releasing the readable model's tensors as it goes, so that at most one
// block is held twice.
PackedGpt2 pack(Gpt2&& model);
// The weights init_gpt2(rng, config) draws, packed a block at a time.
PackedGpt2 init_packed_gpt2(Rng& rng, const Gpt2Config& config);
std::size_t packed_bytes(const PackedGpt2& model);  // its weights in bytes

struct Gpt2Cache {
  std::size_t capacity = 0;                      // tokens
  std::size_t length = 0;                        // tokens in it
  std::vector<std::vector<float>> keys, values;  // per block: (H, capacity, hs)
};
std::size_t cache_bytes(const Gpt2Cache& cache);

// A generation's state: the cache and every buffer a step needs, allocated once for up to
// `capacity` tokens (prompt and generated; at most the model's positions).
class Gpt2Generator {
 public:
  Gpt2Generator(const PackedGpt2& model, std::size_t capacity);
  // The prompt's tokens; returns the last one's logits (V). Throws attn::Error for an empty
  // prompt, an id outside the vocabulary, or more tokens than the capacity.
  const std::vector<float>& prefill(const std::vector<std::int64_t>& ids);
  // One more token; returns its logits (V). Throws attn::Error past the capacity.
  const std::vector<float>& step(std::int64_t id);
  const Gpt2Cache& cache() const { return cache_; }
  std::size_t workspace_bytes() const;

 private:
  const PackedGpt2* model_;
  Gpt2Cache cache_;
  std::vector<float> x_, normed_, qkv_, context_, hidden_, scores_, logits_;
  std::vector<float> prefill_buffer_;
};

}  // namespace attn
