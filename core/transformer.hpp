// Seed 001's encoder-decoder Transformer, its bugs fixed. Legend: B batch, S source tokens,
// T target tokens, D model width, H heads, F feed-forward width, V target vocabulary.
//
//   ResidualConnection{norm}   pre (as the seed writes it): x + sublayer(norm(x))
//                              post (as the paper does):   norm(x + sublayer(x))
//   EncoderBlock{multi_head_attention, feed_forward_neural_network, residual_connection.0-1}
//   DecoderBlock{multi_head_attention, cross_attention, feed_forward_neural_network,
//                residual_connection.0-2}: masked self-attention, cross-attention on the
//                encoder's output (queries from the decoder, keys and values from the memory),
//                feed-forward
//   Encoder{layers, norm}, Decoder{layers, norm}: the blocks, then a LayerNormalization
//   LinearTransformation{linear}: log_softmax(linear(x)) over the target vocabulary
//   InputEmbedding{embedding}: embedding(ids) * sqrt(D)
//   Transformer{encoder, decoder, projection, source_embedding, target_embedding,
//               source_positional_encoding, target_positional_encoding}
// The norms are seed 001's LayerNormalization, the attention its MultiHeadAttention (W_Q, W_K,
// W_V, W_O without bias), the feed-forward its FeedForwardNeuralNetwork (layer1 -> ReLU ->
// dropout -> layer2). Masks are as the seed applies them (masked_fill(mask == 0, fill)): the
// source's (B,1,1,S) in the encoder and the cross-attention, the target's (B,1,T,T) in the
// decoder's self-attention. Dropout is the identity (eval mode), in training too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "embedding.hpp"
#include "feed_forward.hpp"
#include "layer_norm.hpp"
#include "multi_head.hpp"
#include "trace.hpp"

namespace attn {

struct TransformerConfig {
  std::size_t source_vocab = 0, target_vocab = 0;
  std::size_t source_positions = 0, target_positions = 0;         // the pe tables' lengths
  std::size_t d_model = 512, heads = 8, d_ff = 2048, layers = 6;  // buildingTranformers' defaults
  NormPlacement placement = NormPlacement::pre;
  MaskFill fill = MaskFill::seed;
};
// Throws Error(bad_size) for a size of 0 or H not dividing D, naming the size and the fix.
void check_config(const TransformerConfig& config);

struct ResidualConnection {
  LayerNormalization norm;
};

struct EncoderBlock {
  NormPlacement placement = NormPlacement::pre;
  FusedMultiHead multi_head_attention;
  FeedForward feed_forward_neural_network;  // the relu variant
  ResidualConnection residual_connection[2];
};

struct DecoderBlock {
  NormPlacement placement = NormPlacement::pre;
  FusedMultiHead multi_head_attention;  // masked self-attention
  FusedMultiHead cross_attention;       // queries from x, keys and values from the memory
  FeedForward feed_forward_neural_network;
  ResidualConnection residual_connection[3];
};

struct Seed001Encoder {  // seed 001's Encoder
  std::vector<EncoderBlock> layers;
  LayerNormalization norm;
};

struct Decoder {
  std::vector<DecoderBlock> layers;
  LayerNormalization norm;
};

struct Transformer {
  TransformerConfig config;
  Seed001Encoder encoder;
  Decoder decoder;
  Linear projection;                             // projection.linear: Linear(D, V)
  Embedding source_embedding, target_embedding;  // *.embedding
  Tensor2 source_pe, target_pe;                  // the buffers *.pe, (P,D) (saved as (1,P,D))
};

EncoderBlock init_encoder_block(Rng& rng, const TransformerConfig& config);
DecoderBlock init_decoder_block(Rng& rng, const TransformerConfig& config);
// PyTorch's default initialisation of every module, in registration order; the pe tables.
Transformer init_transformer(Rng& rng, const TransformerConfig& config);

// The module trees (state_dict keys without the pe buffers; torchinfo's parameter columns).
Module describe_encoder_block(const TransformerConfig& config, std::string name = "");
Module describe_decoder_block(const TransformerConfig& config, std::string name = "");
Module describe_decoder(const TransformerConfig& config, std::string name = "");
Module describe_transformer(const TransformerConfig& config);

// Parameters in state_dict order, keyed as the seed's classes name them.
void visit_parameters(EncoderBlock& block, const std::string& prefix,
                      const ParameterVisitor& visit);
void visit_parameters(DecoderBlock& block, const std::string& prefix,
                      const ParameterVisitor& visit);
void visit_parameters(Decoder& decoder, const std::string& prefix, const ParameterVisitor& visit);
void visit_parameters(Transformer& model, const ParameterVisitor& visit);
inline void visit_parameters(EncoderBlock& block, const ParameterVisitor& visit) {
  visit_parameters(block, "", visit);
}
inline void visit_parameters(DecoderBlock& block, const ParameterVisitor& visit) {
  visit_parameters(block, "", visit);
}

// One residual connection's forward, kept for backward.
struct ResidualTape {
  Tensor3 input;                 // (B,T,D) the stream entering
  LayerNormalizationSteps norm;  // pre: norm(input); post: norm(input + sublayer)
  Tensor3 sum;                   // post: input + sublayer(input); empty for pre
};

struct EncoderBlockTape {
  ResidualTape residual[2];
  MultiHeadSteps attention;
  FeedForwardSteps feed_forward;
  Tensor3 output;
};

struct DecoderBlockTape {
  ResidualTape residual[3];
  MultiHeadSteps self_attention, cross_attention;
  FeedForwardSteps feed_forward;
  Tensor3 output;
};

// x (B,S,D), the source mask broadcast to (B,H,S,S) or null.
EncoderBlockTape forward(const EncoderBlock& block, const Tensor3& x, const ScoreMask* mask);
// x (B,T,D), memory (B,S,D); target mask (B,H,T,T) and source mask (B,H,T,S), or null.
DecoderBlockTape forward(const DecoderBlock& block, const Tensor3& x, const Tensor3& memory,
                         const ScoreMask* target_mask, const ScoreMask* source_mask);

// Their backward: dX (and d memory) from dY, every parameter's gradient added into `grad`.
Tensor3 backward(const EncoderBlock& block, const EncoderBlockTape& tape, const ScoreMask* mask,
                 const Tensor3& d_output, EncoderBlock& grad);
struct DecoderBlockGradients {
  Tensor3 x, memory;
};
DecoderBlockGradients backward(const DecoderBlock& block, const DecoderBlockTape& tape,
                               const Tensor3& memory, const ScoreMask* target_mask,
                               const ScoreMask* source_mask, const Tensor3& d_output,
                               DecoderBlock& grad);

// The whole model's forward on source ids (B,S) and target ids (B,T), kept for backward. The
// masks are as the seed passes them (any shape that broadcasts; null for none): the source's
// against (B,H,S,S) and (B,H,T,S), the target's against (B,H,T,T).
struct TransformerTape {
  Ids source, target;
  ScoreMask encoder_mask, cross_mask, target_mask;
  bool has_source_mask = false, has_target_mask = false;
  Tensor3 source_input, target_input;  // embedding * sqrt(D) + pe: what the stacks read
  std::vector<EncoderBlockTape> encoder_layers;
  LayerNormalizationSteps encoder_norm;  // its output is the memory (B,S,D)
  std::vector<DecoderBlockTape> decoder_layers;
  LayerNormalizationSteps decoder_norm;  // (B,T,D)
  Tensor3 logits;                        // (B,T,V) projection.linear
  Tensor3 log_probs;                     // (B,T,V) log_softmax
  const Tensor3& memory() const { return encoder_norm.output; }
};
TransformerTape forward(const Transformer& model, const Ids& source, const Ids& target,
                        const Array* source_mask, const Array* target_mask);
// encode(source, mask) alone: the memory (B,S,D).
Tensor3 encode(const Transformer& model, const Ids& source, const Array* source_mask);
// The backward from dLoss/dlogits (B,T,V): every parameter's gradient added into `grad`.
void backward(const Transformer& model, const TransformerTape& tape, const Tensor3& d_logits,
              Transformer& grad);

// log_softmax over the last axis, as torch computes it: x - max - log(Σ exp(x - max)).
Tensor3 log_softmax(const Tensor3& x);

// Incremental decoding: each decoder block's self-attention keys and values of the tokens decoded
// so far, and its cross-attention keys and values of the memory, computed once.
struct DecoderCache {
  std::vector<Tensor3> self_keys, self_values;    // per layer (B*H, t, hs), one row more a step
  std::vector<Tensor3> cross_keys, cross_values;  // per layer (B*H, S, hs)
  ScoreMask cross_mask;                           // the source mask at (B,H,1,S)
  bool has_cross_mask = false;
  std::size_t tokens = 0;  // t: target tokens decoded so far
};
// Computes the cross-attention keys and values of `memory` (B,S,D) once.
DecoderCache start_decoding(const Transformer& model, const Tensor3& memory,
                            const Array* source_mask);
// Feeds one token per sequence (B ids) at position cache.tokens and returns the log-probs of the
// next token (B,1,V): the last row of decode + project on the whole prefix, without recomputing
// the prefix.
Tensor3 decode_step(const Transformer& model, DecoderCache& cache,
                    const std::vector<std::int64_t>& ids);
// The same without the cache: decode + project on the whole prefix (B,t), the last position's
// log-probs (B,1,V).
Tensor3 decode_last(const Transformer& model, const Tensor3& memory, const Array* source_mask,
                    const Ids& prefix);

// torchinfo's rows (call order, the module tree's depths) of one call of: a DecoderBlock on x
// (B,T,D) and a memory of S tokens; the Decoder likewise; the Transformer on source ids (B,S) and
// target ids (B,T), as Transformer.forward(source, target) = project(decode(encode(source),
// target)) with no masks. A module a ResidualConnection calls through its lambda keeps its own
// depth (its place in the tree), as torchinfo 1.8 resolves it.
std::vector<LayerInfo> trace_decoder_block(const TransformerConfig& config, std::size_t batch,
                                           std::size_t tokens, std::size_t source_tokens);
std::vector<LayerInfo> trace_decoder(const TransformerConfig& config, std::size_t batch,
                                     std::size_t tokens, std::size_t source_tokens);
std::vector<LayerInfo> trace_transformer(const TransformerConfig& config, std::size_t batch,
                                         std::size_t tokens, std::size_t source_tokens);

// Multiply-adds of the decoder and projection for step t (the prefix holds t + 1 tokens) with and
// without the cache, counted from the shapes: the products of the Linears and of attention.
struct DecodeCost {
  std::uint64_t cached = 0, recomputed = 0;
};
DecodeCost decode_cost(const TransformerConfig& config, std::size_t source_tokens, std::size_t t);

}  // namespace attn
