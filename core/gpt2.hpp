// GPT-2 (Radford et al. 2019) as Hugging Face's GPT2Model and GPT2LMHeadModel compute it, built
// from the book's layers: a GPT-2 block is the book's pre-LN TransformerEncoderLayer with a causal
// mask, GELU's tanh form (gelu_new) and the config's eps. Legend: B batch, T tokens, D n_embd,
// H n_head, hs = D/H head size, F n_inner (4D when null), V vocab_size, P n_positions, L n_layer.
//
//   embeddings  x_0 = wte[ids] + wpe[0..T-1]                                            (B,T,D)
//   block l     a   = x + c_proj(concat_h softmax(Q_h K_hᵀ / √hs + m) V_h),  Q, K, V = c_attn(ln_1(x))
//               x'  = a + mlp.c_proj(gelu_new(mlp.c_fc(ln_2(a))))                       (B,T,D)
//               m: 0 where key ≤ query and the key is not padding; float32's lowest elsewhere
//   final       h = ln_f(x_L)                      transformers' last hidden state     (B,T,D)
//   LM head     logits = h wteᵀ                    lm_head, tied to wte, no bias       (B,T,V)
//
// Conv1D stores its weight (in, out) and computes x W + b: c_attn's (D, 3D) columns are
// [q | k | v], and head h of q is columns h·hs .. (h+1)·hs. In the book's structs that column
// block, transposed, is head h's q Linear (out, in); c_proj is output_linear; mlp.c_fc and
// mlp.c_proj are the feed-forward's linear_1 and linear_2, transposed; ln_1 and ln_2 are
// layer_norm_1 and layer_norm_2. The keys stay transformers' (describe_gpt2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/budget.hpp"
#include "encoder.hpp"
#include "io/pretrained.hpp"
#include "module.hpp"
#include "module_size.hpp"
#include "trace.hpp"

namespace attn {

// config.json of a GPT2Model: GPT2Config's fields, the sizes in the book's names.
struct Gpt2Config {
  EncoderConfig sizes;  // n_embd, n_head, n_inner (4 n_embd when null), n_layer, vocab_size,
                        // n_positions, layer_norm_epsilon, activation_function; dropouts
  std::int64_t bos_token_id = 50256;
  std::int64_t eos_token_id = 50256;
  bool tie_word_embeddings = true;
};
// GPT2Config's defaults (gpt2: 12 x 768, V 50257, P 1024, eps 1e-5, gelu_new).
Gpt2Config default_gpt2_config();
// Throws attn::Error(bad_file) naming config.json, the field and the fix: a model_type other
// than "gpt2", and the options attn does not compute (add_cross_attention,
// scale_attn_by_inverse_layer_idx, scale_attn_weights false) are refused.
Gpt2Config gpt2_config(const PretrainedFolder& folder);

// Which of transformers' classes a checkpoint holds.
enum class Gpt2Heads {
  none,     // GPT2Model: wte, wpe, h.N.*, ln_f
  lm_head,  // GPT2LMHeadModel: transformer.* and lm_head (tied to wte: usually not in the file)
};
// "GPT2Model", "GPT2LMHeadModel".
std::string_view gpt2_class_name(Gpt2Heads heads);
// The class config.json's "architectures" names (GPT2LMHeadModel when it names none: the hub's
// gpt2 folders hold it).
Gpt2Heads gpt2_heads(const PretrainedFolder& folder);

struct Gpt2 {
  Gpt2Config config;
  Gpt2Heads heads = Gpt2Heads::lm_head;
  Embedding wte;                     // (V,D), also the LM head
  Embedding wpe;                     // (P,D)
  std::vector<EncoderLayer> layers;  // h.N: pre-LN, causal, gelu_new, eps from the config
  LayerNorm ln_f;
  Tensor2 lm_head;  // (V,D) when the file holds an lm_head.weight not tied to wte; else empty
};

// transformers' module tree: GPT2Model, or GPT2LMHeadModel around it (class and attribute names
// as modeling_gpt2.py registers them). Its state_dict keys are what load_gpt2 expects.
Module describe_gpt2(const Gpt2Config& config, Gpt2Heads heads);
ModuleSize gpt2_size(const Gpt2Config& config, Gpt2Heads heads);

// Does the key name a weight load_gpt2 reads? False for the buffers a checkpoint may carry
// (h.N.attn.bias, h.N.attn.masked_bias: the causal mask, which attn builds itself), so that a
// reader can skip them without holding them.
bool gpt2_reads(std::string_view key);

// The model from a folder's tensors (read_pretrained_weights), taking them out of `weights` as it
// goes so that at most one tensor is held twice. Keys with or without "transformer."; the mask
// buffers are dropped unread; an lm_head.weight equal to wte is dropped (tied), a different one
// kept when config.tie_word_embeddings is false and refused otherwise. Throws one
// attn::Error(bad_file) naming `source`, every missing, unexpected and wrong-shaped key, and the
// fix.
Gpt2 load_gpt2(const Gpt2Config& config, StateDict&& weights, std::string_view source);

// A folder's tensors checked against the model config.json describes, before any is converted:
// keyed as GPT2Model's state_dict (the "transformer." prefix removed, the mask buffers dropped
// unread), with an lm_head.weight taken out (dropped when it equals wte, kept when
// tie_word_embeddings is false, refused otherwise). The errors of load_gpt2.
struct Gpt2Weights {
  StateDict tensors;
  Gpt2Heads heads = Gpt2Heads::none;  // what the keys say: a prefix or an lm_head is the LM class
  std::optional<Array> lm_head;       // an untied LM head
};
Gpt2Weights check_gpt2_weights(const Gpt2Config& config, StateDict&& weights,
                               std::string_view source);

// The whole model under transformers' keys, as save_pretrained writes GPT2LMHeadModel or
// GPT2Model (no mask buffers, the tied lm_head left out): what load_gpt2 reads back.
StateDict gpt2_state_dict(const Gpt2& model);

// A Gpt2 of `config`'s sizes with the book's initialisation, for tests and benchmarks.
Gpt2 init_gpt2(Rng& rng, const Gpt2Config& config, Gpt2Heads heads = Gpt2Heads::lm_head);
// One block as init_gpt2 draws it: wte, wpe, then the blocks one after another, so that a packer
// can draw (and pack) one block at a time.
EncoderLayer init_gpt2_block(Rng& rng, const Gpt2Config& config);

struct Gpt2Input {
  Ids ids;             // (B,T) input_ids
  Ids attention_mask;  // (B,T) 1 for a token, 0 for padding; empty: all 1
};

struct Gpt2Steps {
  Tensor3 token;     // (B,T,D) wte[ids]
  Tensor3 position;  // (1,T,D) wpe[0..T-1]
  Tensor3 embedded;  // (B,T,D) token + position
  Tensor3 mask;      // (B,T,T) the additive mask: causal, and padding keys
  std::vector<EncoderLayerTape> layers;
  Tensor3 final_norm;  // (B,T,D) ln_f(x_L)
  Tensor3 logits;      // (B,T,V) when asked
  // transformers' hidden_states[l]: 0 the embeddings, l < L the output of block l - 1, and L
  // ln_f of the last block's output (GPT2Model applies ln_f before adding the last one).
  const Tensor3& hidden_states(std::size_t l) const {
    if (l == layers.size()) return final_norm;
    return l == 0 ? embedded : layers[l - 1].output;
  }
};

// Throws attn::Error for an id outside the vocabulary, more tokens than positions, a mask value
// other than 0 and 1, or shapes that differ.
Gpt2Steps forward(const Gpt2& model, const Gpt2Input& input, bool logits = true);

// For a memory budget: what forward() holds on ids (B,T), beside the weights.
MemoryPlan plan_gpt2(const Gpt2Config& config, std::size_t batch, std::size_t tokens,
                     bool logits = true);

// torchinfo's rows of the model on ids (B,T) (forward order as transformers' eager code calls its
// modules).
std::vector<LayerInfo> trace_gpt2(const Gpt2Config& config, Gpt2Heads heads, const Shape& ids);

}  // namespace attn
