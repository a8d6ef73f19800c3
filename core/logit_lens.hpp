// The logit lens (nostalgebraist 2020): every layer's residual stream read as if it were the
// last, through the model's own final LayerNorm and unembedding. Legend: L n_layer, R = L + 1 rows
// of the lens, T tokens, D n_embd, V vocab_size.
//
//   x_0 = wte[ids] + wpe[0..T-1]      x_l = the output of block l-1 (transformers' hidden_states[l])
//   lens_l = ln_f(x_l) Uᵀ             U the unembedding: wte (tied) or lm_head.weight     (T,V)
//   log p_l = lens_l - log Σ_v exp(lens_l)                                                  (T,V)
//
// Row L is the model's own logits (transformers' hidden_states[L] is ln_f(x_L) already). A row
// whose top token is the model's final prediction shows at which depth the answer is there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/budget.hpp"
#include "base/tensor.hpp"
#include "gpt2.hpp"

namespace attn {

struct LogitLens {
  Tensor3 logits;          // (R,T,V) lens_l: row 0 the embeddings, row l the output of h.{l-1}
  Tensor2 log_normalizer;  // (R,T)   log Σ_v exp(lens_l[t, v]), in double, rounded once
  std::size_t rows() const { return logits.shape(0); }
  std::size_t tokens() const { return logits.shape(1); }
  std::size_t vocab() const { return logits.shape(2); }
  double log_probability(std::size_t row, std::size_t t, std::int64_t token) const;
  double probability(std::size_t row, std::size_t t, std::int64_t token) const;
};

// The lens of batch entry 0 of a forward's steps (forward(model, input) with batch 1). Throws
// attn::Error(bad_size) for a batch other than 1 or steps of another model's width.
LogitLens logit_lens(const Gpt2& model, const Gpt2Steps& steps);

// log p (R,T,V): logits minus the log normalizer.
Tensor3 lens_log_probs(const LogitLens& lens);

// The `k` most likely tokens of row `row` at position t, most likely first (ties: the smaller id).
std::vector<std::int64_t> lens_top_tokens(const LogitLens& lens, std::size_t row, std::size_t t,
                                          std::size_t k);
// A token's rank in row `row` at position t: 1 for the most likely, in the order lens_top_tokens
// gives.
std::size_t lens_rank(const LogitLens& lens, std::size_t row, std::size_t t, std::int64_t token);
// The first row from which `token` is top-1 in every later row through the last; rows() when it is
// not top-1 in the last row.
std::size_t lens_settles_at(const LogitLens& lens, std::size_t t, std::int64_t token);

// For check_budget: what logit_lens holds beside the forward on T tokens (the rows' inputs and
// their normalised copy, the logits, the normalizers).
MemoryPlan plan_logit_lens(const Gpt2Config& config, std::size_t tokens);

}  // namespace attn
