// Generation with GPT-2 at the speed of memory, beside the readable model in gpt2.hpp. A new
// token needs every weight once (L blocks and the (V,D) LM head) and two flops per weight: its
// time is the time to read the weights. So each weight is read once per token, in rows, by
// matrix-vector products (kernels/matvec.hpp) shared out on the pool's threads.
//
//   PackedGpt2   the tables, each block as the packed encoder's layer (encoder_fast.hpp: q, k, v
//                stacked into one (3D, D) matrix, every matrix (out, in) row-major, pre-LN at the
//                config's eps, GELU's tanh form) and ln_f; the LM head is wte.
//   Gpt2Cache    each block's keys and values of the tokens so far: (H, capacity, hs) each.
//   prefill      the prompt's T tokens at once: GEMMs (kernels/gemm.hpp) for the projections, each
//                query against the keys up to its own position, filling the cache.
//   step         one token: its row through every block against the cache, then its logits.
//
// Both compute the readable forward's function; the products' sums run in other orders, so tests
// hold the logits within a tolerance of forward()'s (tests/core/gpt2_fast_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fast/encoder_fast.hpp"
#include "gpt2.hpp"

namespace attn {

struct PackedGpt2 {
  std::size_t vocab = 0, positions = 0, d_model = 0, heads = 0, d_ff = 0;
  // The tables as the folder's float32 arrays, moved, never copied: wte (V, D) is also the LM
  // head; wpe (P, D); lm_head (V, D) only when untied (empty otherwise).
  Array wte, wpe, lm_head;
  std::vector<PackedEncoderLayer> blocks;
  std::vector<float> norm_weight, norm_bias;  // (D) ln_f
  float norm_eps = 1e-5f;
};

// Packs a block at a time, releasing the readable model's tensors as it goes, so that at most one
// block is held twice.
PackedGpt2 pack(Gpt2&& model);
// Packs straight from the folder's checked tensors (check_gpt2_weights), each Conv1D weight
// transposed once and released, the tables moved: generation's path, which never builds the
// readable model, so that at most one tensor is held twice.
PackedGpt2 pack(const Gpt2Config& config, Gpt2Weights&& weights);
// The weights init_gpt2(rng, config) draws, packed a block at a time.
PackedGpt2 init_packed_gpt2(Rng& rng, const Gpt2Config& config);
std::size_t packed_bytes(const PackedGpt2& model);  // its weights in bytes

// y (rows) = W x + bias (bias may be null), W (rows, cols) row-major, on the pool's threads: each
// takes a block of rows, so that each weight is read once, by one thread.
void matvec_on_pool(const float* w, std::size_t rows, std::size_t cols, const float* x,
                    const float* bias, float* y, FastKernels kernels = best_fast_kernels());

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
  // The prompt's tokens, after those already in the cache; returns the last one's logits (V).
  // Throws attn::Error for no token, an id outside the vocabulary, or past the capacity.
  const std::vector<float>& prefill(const std::vector<std::int64_t>& ids);
  // One more token; returns its logits (V). Throws attn::Error past the capacity.
  const std::vector<float>& step(std::int64_t id);
  const Gpt2Cache& cache() const { return cache_; }
  std::size_t workspace_bytes() const;

 private:
  void check(const std::vector<std::int64_t>& ids) const;
  void attend(std::size_t block, const float* qkv, std::size_t position, float* context);
  void logits_of(const float* x);
  const PackedGpt2* model_;
  Gpt2Cache cache_;
  std::vector<float> x_, normed_, qkv_, context_, hidden_, out_, scores_, logits_;
};

}  // namespace attn
