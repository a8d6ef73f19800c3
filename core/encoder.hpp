// The book's encoder (seed 000 and "NLP with Transformers" ch. 3): Embeddings, then a stack of
// TransformerEncoderLayer. Legend: B batch, T tokens, D model width, H heads, F feed-forward
// width, V vocabulary, P positions.
//
//   TransformerEncoderLayer{layer_norm_1, layer_norm_2, attention, feed_forward}
//     pre-LN (the book):              x = x + attention(LN1(x)); x = x + feed_forward(LN2(x))
//     post-LN (the paper, BERT):      x = LN1(x + attention(x)); x = LN2(x + feed_forward(x))
//   Embeddings{token_embeddings, position_embeddings, layer_norm (eps 1e-12), dropout}
//   TransformerEncoder{embeddings, layers}
// The layers' LayerNorms use PyTorch's default eps 1e-5, as the book's code does; dropout is the
// identity at inference.
#pragma once

#include <string>
#include <vector>

#include "base/budget.hpp"
#include "embedding.hpp"
#include "feed_forward.hpp"
#include "io/config.hpp"
#include "layer_norm.hpp"
#include "module_size.hpp"
#include "multi_head.hpp"
#include "trace.hpp"

namespace attn {

inline constexpr float kEmbeddingsLayerNormEps = 1e-12f;  // the book's Embeddings.layer_norm

struct EncoderLayer {
  NormPlacement placement = NormPlacement::pre;
  LayerNorm layer_norm_1, layer_norm_2;
  BookMultiHead attention;   // heads.N.{q,k,v}, output_linear
  FeedForward feed_forward;  // the book variant: linear_1, gelu, linear_2, dropout
};

struct EncoderLayerSteps {
  Tensor3 input;         // (B,T,D)
  Tensor3 norm_1;        // pre: LN1(x)             post: LN1(x + attention)
  Tensor3 attention;     // (B,T,D) the attention sublayer's output
  Tensor3 residual_1;    // pre: x + attention       post: = norm_1
  Tensor3 norm_2;        // pre: LN2(residual_1)     post: LN2(residual_1 + feed_forward)
  Tensor3 feed_forward;  // (B,T,D) the feed-forward sublayer's output
  Tensor3 output;        // pre: residual_1 + feed_forward   post: = norm_2
  Tensor4 weights;       // (B,H,T,T) the attention's weights, for showing them
};

EncoderLayer init_encoder_layer(Rng& rng, const EncoderConfig& config, NormPlacement placement);
Module describe_encoder_layer(const EncoderConfig& config, std::string name = "");
// describe_encoder_layer's size, from one head (see multi_head_size).
ModuleSize encoder_layer_size(const EncoderConfig& config, std::string name = "");
void visit_parameters(EncoderLayer& layer, const std::string& prefix,
                      const ParameterVisitor& visit);
inline void visit_parameters(EncoderLayer& layer, const ParameterVisitor& visit) {
  visit_parameters(layer, "", visit);
}
EncoderLayerSteps forward(const EncoderLayer& layer, const Tensor3& x);

// What backward needs of one layer's forward: each sublayer's own steps, a tree that mirrors the
// weights, and the residual sums (post-LN normalises x + attention, which EncoderLayerSteps does
// not keep).
struct EncoderLayerTape {
  Tensor3 input;  // (B,T,D)
  LayerNormSteps norm_1, norm_2;
  MultiHeadSteps attention;
  FeedForwardSteps feed_forward;
  Tensor3 sum_1;   // x + attention(·): pre-LN's stream after attention, post-LN's LN1 input
  Tensor3 sum_2;   // stream + feed_forward(·): pre-LN's output, post-LN's LN2 input
  Tensor3 output;  // (B,T,D), equal to forward()'s
};
// The same forward as above, keeping the tape; `mask` (B,T,T) additive or null. With `dropout`,
// train mode: the feed-forward's nn.Dropout draws its mask from it (kept in the tape).
EncoderLayerTape forward_tape(const EncoderLayer& layer, const Tensor3& x,
                              const Tensor3* mask = nullptr, Rng* dropout = nullptr);
// Returns dX and adds every parameter's gradient into `grad` (a layer of the same sizes).
Tensor3 backward(const EncoderLayer& layer, const EncoderLayerTape& tape, const Tensor3& d_output,
                 EncoderLayer& grad);
// EncoderLayerTape's tensors on x (B,T,D), for a memory budget.
MemoryPlan plan_encoder_layer_tape(const EncoderConfig& config, std::size_t batch,
                                   std::size_t tokens);
// Every layer's tape (num_hidden_layers of them) and the attention's temporaries while one runs:
// what a forward through the whole stack that keeps its tapes holds beside the weights.
MemoryPlan plan_layer_tapes(const EncoderConfig& config, std::size_t batch, std::size_t tokens);

void trace_encoder_layer(Trace& trace, const Module& layer, const Shape& shape,
                         NormPlacement placement);
// For a memory budget (core/base/budget.hpp) on x (B,T,D): EncoderLayerSteps' tensors; what
// forward() holds beside them at its peak (the tape it reads them from, and the attention's
// temporaries while it runs).
MemoryPlan plan_encoder_layer(const EncoderConfig& config, std::size_t batch, std::size_t tokens);
MemoryPlan plan_encoder_layer_temporaries(const EncoderConfig& config, std::size_t batch,
                                          std::size_t tokens);

struct Embeddings {
  Embedding token_embeddings;     // (V,D)
  Embedding position_embeddings;  // (P,D)
  LayerNorm layer_norm;           // eps 1e-12
  float dropout = 0.0f;           // p of its nn.Dropout, used in train mode only
};

struct EmbeddingsSteps {
  Tensor3 token;          // (B,T,D) token_embeddings(ids)
  Tensor3 position;       // (1,T,D) position_embeddings(0..T-1)
  Tensor3 sum;            // (B,T,D)
  Tensor3 output;         // (B,T,D) dropout(layer_norm(sum)): the identity in eval mode
  Tensor3 dropout_scale;  // train mode: 0 or 1/(1-p) per element; empty in eval mode
};

Embeddings init_embeddings(Rng& rng, const EncoderConfig& config);
Module describe_embeddings(const EncoderConfig& config, std::string name = "");
void visit_parameters(Embeddings& embeddings, const std::string& prefix,
                      const ParameterVisitor& visit);
inline void visit_parameters(Embeddings& e, const ParameterVisitor& visit) {
  visit_parameters(e, "", visit);
}
// torchinfo's rows of one Embeddings call on ids of shape `input` (B,T).
void trace_embeddings(Trace& trace, const Module& embeddings, const Shape& input);
// ids (B,T); throws attn::Error for T > P or an id outside the vocabulary. With `dropout`, train
// mode: its nn.Dropout draws its mask from it.
EmbeddingsSteps forward(const Embeddings& embeddings, const Ids& ids, Rng* dropout = nullptr);
// The backward of forward(embeddings, ids) from its steps: adds the token table's, the position
// table's and the layer norm's gradients into `grad`. Ids have no gradient.
void backward(const Embeddings& embeddings, const Ids& ids, const EmbeddingsSteps& steps,
              const Tensor3& d_output, Embeddings& grad);
// For a memory budget on ids (B,T): EmbeddingsSteps' tensors and what forward() holds beside them
// (the layer norm's steps).
MemoryPlan plan_embeddings(const EncoderConfig& config, std::size_t batch, std::size_t tokens);

struct Encoder {
  bool with_embeddings = true;  // false: the layers only, on hidden states
  Embeddings embeddings;
  std::vector<EncoderLayer> layers;
};

Encoder init_encoder(Rng& rng, const EncoderConfig& config, NormPlacement placement,
                     bool with_embeddings);
// TransformerEncoder{embeddings, layers}; without embeddings and with one layer, the bare
// TransformerEncoderLayer (whose keys have no "layers.0." prefix).
Module describe_encoder(const EncoderConfig& config, bool with_embeddings);
// describe_encoder's size, from one head and one layer (see multi_head_size); throws
// Error(too_large) past 2^63-1 parameters, as describe_encoder does.
ModuleSize encoder_size(const EncoderConfig& config, bool with_embeddings);
void visit_parameters(Encoder& encoder, const ParameterVisitor& visit);

// The whole model's forward, kept for backward: the embeddings' steps (with embeddings) and each
// layer's tape, in order.
struct EncoderTape {
  Ids ids;                     // (B,T), with embeddings
  EmbeddingsSteps embeddings;  // with embeddings
  std::vector<EncoderLayerTape> layers;
  const Tensor3& output() const {
    return layers.empty() ? embeddings.output : layers.back().output;
  }
};
// From ids (B,T) with embeddings; `mask` (B,T,T) additive or null; with `dropout`, train mode.
EncoderTape forward_tape(const Encoder& encoder, const Ids& ids, const Tensor3* mask = nullptr,
                         Rng* dropout = nullptr);
// From hidden states (B,T,D), the layers only.
EncoderTape forward_tape(const Encoder& encoder, const Tensor3& x, const Tensor3* mask = nullptr,
                         Rng* dropout = nullptr);
// Adds every parameter's gradient into `grad`; returns dX for hidden-state input (empty with
// embeddings, where the input is ids).
Tensor3 backward(const Encoder& encoder, const EncoderTape& tape, const Tensor3& d_output,
                 Encoder& grad);
// torchinfo's rows: for ids (B,T) with embeddings, for hidden states (B,T,D) without.
std::vector<LayerInfo> trace_encoder(const EncoderConfig& config, bool with_embeddings,
                                     NormPlacement placement, const Shape& input);

}  // namespace attn
