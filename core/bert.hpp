// BERT (Devlin et al. 2019) as Hugging Face's BertModel computes it, built from the book's
// layers: a BERT layer is the book's TransformerEncoderLayer wired post-LN, with every LayerNorm
// at the config's eps (1e-12). Legend: B batch, T tokens, D hidden_size, H heads, hs = D/H head
// size, F intermediate_size, V vocabulary, P positions, Y token types, L layers.
//
//   embeddings  e = LayerNorm(word[ids] + token_type[types] + position[0..T-1])         (B,T,D)
//   layer l     Q, K, V = query(x), key(x), value(x); head h owns columns h·hs .. (h+1)·hs
//               a  = LayerNorm(x + output_dense(concat_h softmax(Q_h K_hᵀ / √hs + m) V_h))
//               x' = LayerNorm(a + output(gelu(intermediate(a))))                        (B,T,D)
//               m: 0 for a key whose attention_mask is 1, float32's lowest for padding (0)
//   pooler      tanh(dense(x_L[:, 0]))                                                    (B,D)
//   MLM head    logits = LayerNorm(gelu(transform(x_L))) Eᵀ + bias, E the word table    (B,T,V)
//   NSP head    cls.seq_relationship, Linear(D, 2) on the pooled output: read, not used
//
// In the book's structs: BertSelfAttention's query/key/value rows h·hs .. (h+1)·hs are book head
// h's q/k/v; attention.output.dense is output_linear and its LayerNorm layer_norm_1;
// intermediate.dense and output.dense are the feed-forward's linear_1 and linear_2, and
// output.LayerNorm is layer_norm_2. The keys stay transformers' (describe_bert).
#pragma once

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

// Which of transformers' classes a checkpoint holds: its keys' prefix and heads.
enum class BertHeads {
  none,         // BertModel: embeddings.*, encoder.*, pooler.* (the pooler may be missing)
  masked_lm,    // BertForMaskedLM: bert.*, cls.predictions.*
  pretraining,  // BertForPreTraining: bert.*, cls.predictions.*, cls.seq_relationship.*
};

// transformers' class of those heads: "BertModel", "BertForMaskedLM", "BertForPreTraining".
std::string_view bert_class_name(BertHeads heads);

struct BertMaskedLMHead {    // cls.predictions (BertLMPredictionHead)
  Linear transform;          // transform.dense, Linear(D, D)
  LayerNorm transform_norm;  // transform.LayerNorm
  Tensor1 bias;              // (V)
  Tensor2 decoder;           // (V,D) when not tied to the word table; empty when tied
};

struct Bert {
  BertConfig config;
  BertHeads heads = BertHeads::none;
  Embeddings embeddings;             // word_embeddings, position_embeddings, LayerNorm
  Embedding token_type_embeddings;   // (Y,D)
  std::vector<EncoderLayer> layers;  // encoder.layer.N, post-LN
  std::optional<Linear> pooler;      // pooler.dense; BertForMaskedLM has none
  std::optional<BertMaskedLMHead> masked_lm;
  std::optional<Linear> next_sentence;  // cls.seq_relationship, read and not used
};

// transformers' module tree: BertModel, or BertForMaskedLM / BertForPreTraining around it (class
// and attribute names as modeling_bert.py registers them). Its state_dict keys are what
// load_bert expects.
Module describe_bert(const BertConfig& config, BertHeads heads, bool pooler = true);
ModuleSize bert_size(const BertConfig& config, BertHeads heads, bool pooler = true);

// The model from a folder's tensors (read_pretrained_weights), taking them out of `weights` as it
// goes so that at most one tensor is held twice. Keys with or without the "bert." prefix, and
// the legacy LayerNorm.gamma / .beta names, are accepted; embeddings.position_ids and a tied
// cls.predictions.decoder.weight are checked and dropped. The heads are whatever the keys hold
// (cls.predictions: masked_lm; with cls.seq_relationship: pretraining). Throws one
// attn::Error(bad_file) naming `source`, every missing, unexpected and wrong-shaped key, and
// the fix.
Bert load_bert(const BertConfig& config, StateDict&& weights, std::string_view source);

// One layer's parameters (or gradients: a layer of the same form) under transformers' keys, each
// with `prefix` ("encoder.layer.3."), in BertLayer's state_dict order: the heads' q, k and v rows
// stacked back into query, key and value.
std::vector<std::pair<std::string, Array>> bert_layer_parameters(const EncoderLayer& layer,
                                                                 const std::string& prefix);

// The whole model under transformers' keys, as its class's state_dict() holds them (the tied decoder
// left out, as save_pretrained leaves it out): what load_bert reads back.
StateDict bert_state_dict(const Bert& model);

// A Bert of `config`'s sizes with the book's initialisation, for tests and benchmarks.
Bert init_bert(Rng& rng, const BertConfig& config, BertHeads heads);

struct BertInput {
  Ids ids;             // (B,T) input_ids
  Ids token_types;     // (B,T) token_type_ids; empty: all 0
  Ids attention_mask;  // (B,T) 1 for a token, 0 for padding; empty: all 1
};

struct BertSteps {
  Tensor3 token_type;          // (B,T,D) token_type_embeddings(types)
  EmbeddingsSteps embeddings;  // token = word rows; sum = word + token type + position
  Tensor3 mask;                // (B,T,T) the additive mask; empty without padding
  std::vector<EncoderLayerTape> layers;
  Tensor2 pooled;       // (B,D) with a pooler
  Tensor3 transformed;  // (B,T,D) the MLM head's LayerNorm(gelu(transform(x_L)))
  Tensor3 logits;       // (B,T,V) with the MLM head
  // transformers' hidden_states[l]: 0 the embeddings' output, l the output of layer l - 1.
  const Tensor3& hidden_states(std::size_t l) const {
    return l == 0 ? embeddings.output : layers[l - 1].output;
  }
};

// Throws attn::Error for an id outside the vocabulary, a token type outside 0..Y-1, a mask value
// other than 0 and 1, a row with no token, more tokens than positions, or shapes that differ.
BertSteps forward(const Bert& model, const BertInput& input, bool logits = true);

// For a memory budget: what forward() holds on ids (B,T), beside the weights.
MemoryPlan plan_bert(const BertConfig& config, BertHeads heads, std::size_t batch,
                     std::size_t tokens, bool logits = true);

// torchinfo's rows of the model on ids (B,T) (forward order as transformers' eager code calls its
// modules).
std::vector<LayerInfo> trace_bert(const BertConfig& config, BertHeads heads, const Shape& ids,
                                  bool pooler = true);

struct TokenPrediction {
  std::int64_t id = 0;
  float probability = 0.0f;  // softmax over the vocabulary
};
// The k most probable ids of one row of logits (V), most probable first (ties: lower id first).
std::vector<TokenPrediction> top_predictions(const float* logits, std::size_t vocab, std::size_t k);

}  // namespace attn
