// Training a GPT (GPT-2's architecture at any size) fast, beside the readable model of gpt2.hpp.
// The same function as forward(Gpt2) and the book's backward, computed as llm.c's train_gpt2.c
// lays it out: every parameter in one flat buffer, every activation of a batch in another, each
// projection one GEMM over all B·T rows (kernels/gemm.hpp), and the elementwise loops (LayerNorm,
// GELU, the residual sums, attention per (b, h), softmax with cross-entropy, AdamW) shared out on
// the pool's threads. Legend: B batch, T tokens, D n_embd, H heads, hs = D/H, F = 4D, V vocab,
// P positions, L layers.
//
//   x_0  = wte[ids] + wpe[0..T-1]
//   a    = x + c_proj(causal_attention(c_attn(ln_1(x))))        per block
//   x'   = a + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(a))))
//   loss = mean over the B·T positions of -log softmax(ln_f(x_L) wteᵀ)[target]
//
// The weights keep PyTorch's nn.Linear layout (out, in) here; Hugging Face's Conv1D stores (in, out)
// and gpt_state_dict / gpt_from_state_dict transpose on the way out and in. AdamW follows nanoGPT:
// weight decay on the matrices and tables only, gradients clipped to a global norm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/budget.hpp"
#include "base/random.hpp"
#include "gpt2.hpp"
#include "state_dict.hpp"

namespace attn {

// One tensor of the flat buffer: its Hugging Face key (GPT2LMHeadModel's, "transformer.h.0.ln_1
// .weight"), where it starts, its shape as stored here, whether Hugging Face stores it transposed
// (a Conv1D weight), and whether AdamW decays it.
struct GptTensor {
  std::string key;
  std::size_t offset = 0;
  std::size_t rows = 0, cols = 0;  // cols 0: a vector of `rows`
  bool transposed = false;
  bool decayed = false;
  std::size_t count() const { return cols == 0 ? rows : rows * cols; }
};

struct GptModel {
  Gpt2Config config;
  // Attention only (Elhage et al. 2021's toy models): ln_2 and the MLP are skipped in forward and
  // backward and never updated; the MLP's tensors are zero, so that GPT-2's forward, which runs
  // them, adds gelu(0) = 0 and computes the same logits.
  bool attention_only = false;
  std::vector<GptTensor> tensors;  // wte, wpe, each block's, ln_f: GPT2Model's order
  std::vector<float> params;
  // The named tensor's first number (the names of tensors above, without "transformer.").
  float* at(std::size_t tensor) { return params.data() + tensors[tensor].offset; }
  const float* at(std::size_t tensor) const { return params.data() + tensors[tensor].offset; }
};

// The layout for a config (the numbers left zero). Throws attn::Error for a size of 0 or heads
// that do not divide n_embd.
GptModel gpt_layout(const Gpt2Config& config);
// GPT-2's initialisation, as nanoGPT draws it: every matrix and table from N(0, 0.02), the two
// projections into the residual stream (attn.c_proj, mlp.c_proj) from N(0, 0.02/√(2L)), biases 0,
// LayerNorms 1 and 0. Seeded. Attention only: the same draws, then the MLPs' tensors zeroed.
GptModel init_gpt(const Gpt2Config& config, std::uint64_t seed, bool attention_only = false);
// Whether the tensor is one an attention-only model leaves out (ln_2 and the MLP of a block).
bool mlp_tensor(const GptTensor& tensor);
// The model under GPT2LMHeadModel's keys ("transformer." prefix, Conv1D weights (in, out), the tied
// lm_head left out): what save_pretrained writes and load_gpt2 / PyTorch read.
StateDict gpt_state_dict(const GptModel& model);
// The model from a folder's tensors checked by check_gpt2_weights (GPT2Model's keys, no prefix).
// Throws attn::Error(bad_file) naming `source` for an untied lm_head (training ties it).
GptModel gpt_from_weights(const Gpt2Config& config, Gpt2Weights&& weights, std::string_view source);

// What the engine holds for batch B of T tokens beside the parameters, for check_budget: the
// activations of every block, the logits and their gradient, the parameters' gradient and AdamW's
// two moments.
MemoryPlan plan_gpt_training(const Gpt2Config& config, std::size_t batch, std::size_t tokens);

// AdamW as nanoGPT configures it: betas (0.9, beta2), eps 1e-8, weight decay on the decayed
// tensors only, after clipping the gradient to `clip` global norm (0: no clipping).
struct GptOptimizer {
  float beta1 = 0.9f, beta2 = 0.99f, eps = 1e-8f, weight_decay = 0.1f, clip = 1.0f;
  std::int64_t steps = 0;
  std::vector<float> m, v;  // as the params, zero until the first step
};

class GptEngine {
 public:
  // Buffers for batches of up to `batch` sequences of up to `tokens` tokens (at most P).
  GptEngine(const GptModel& model, std::size_t batch, std::size_t tokens);
  // ids and targets (B,T) row-major, B ≤ batch, T ≤ tokens; the mean cross-entropy of the B·T
  // predictions. Throws attn::Error for an id or target outside the vocabulary.
  float forward(const GptModel& model, const std::int32_t* ids, const std::int32_t* targets,
                std::size_t batch, std::size_t tokens);
  // After forward(): the gradient of its mean loss, into gradient() (overwritten).
  void backward(const GptModel& model, const std::int32_t* ids, const std::int32_t* targets);
  // The gradient's global L2 norm, clipping, and one AdamW step at `lr` (the gradient of the last
  // backward). Returns the norm before clipping.
  float update(GptModel& model, GptOptimizer& optimizer, float lr);
  const std::vector<float>& gradient() const { return grads_; }
  // After forward(): the logits of sequence b at position t (V numbers).
  const float* logits(std::size_t b, std::size_t t) const;
  // After forward(): block `layer`'s attention weights (B,H,T,T) of the batch, row-major.
  const float* attention(std::size_t layer) const;

 private:
  std::size_t max_batch_, max_tokens_, batch_ = 0, tokens_ = 0, vocab_ = 0, layers_ = 0;
  std::size_t attention_stride_ = 0;  // between blocks' weights in acts_
  std::vector<float> acts_, grad_acts_, grads_;
  const float* logits_ = nullptr;     // in acts_
  const float* attention_ = nullptr;  // block 0's weights, in acts_
};

}  // namespace attn
