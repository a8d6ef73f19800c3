#include "transformer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/heads.hpp"
#include "matmul.hpp"
#include "positional_encoding.hpp"
#include "softmax.hpp"

namespace attn {

namespace {

ParameterVisitor prefixed(const std::string& prefix, const ParameterVisitor& visit) {
  return [&visit, prefix](const std::string& key, float* data, const Shape& shape) {
    visit(prefix + key, data, shape);
  };
}

FusedMultiHead init_attention(Rng& rng, const TransformerConfig& c) {
  return std::get<FusedMultiHead>(
      init_multi_head(rng, MultiHeadVariant::fused, c.d_model, c.heads));
}

// torch's `x * math.sqrt(d)`: the double scalar rounded to float, then one float product.
float embedding_scale(std::size_t d_model) {
  return static_cast<float>(std::sqrt(static_cast<double>(d_model)));
}

// InputEmbedding then PositionalEncoding: embedding(ids) * sqrt(D) + pe[:T].
Tensor3 embed(const Embedding& table, const Tensor2& pe, const Ids& ids, const char* which) {
  if (ids.shape(1) > pe.shape(0)) {
    throw Error(ErrorKind::bad_size, "transformer",
                fmt::format("{} {} tokens long, past the {} positions of its positional "
                            "encoding: give at most {} tokens",
                            which, ids.shape(1), pe.shape(0), pe.shape(0)));
  }
  const Tensor3 scaled = forward(table, ids) * embedding_scale(table.weight.shape(1));
  return add_positions(scaled, first_positions(pe, ids.shape(1)));
}

// One residual connection around `sublayer` (x -> sublayer output).
template <class Sublayer>
Tensor3 residual_forward(NormPlacement placement, const ResidualConnection& r, const Tensor3& x,
                         ResidualTape& tape, Sublayer&& sublayer) {
  tape.input = x;
  if (placement == NormPlacement::pre) {
    tape.norm = forward(r.norm, x);
    return x + sublayer(tape.norm.output);
  }
  tape.sum = x + sublayer(x);
  tape.norm = forward(r.norm, tape.sum);
  return tape.norm.output;
}

// What the sublayer read: pre, norm(x); post, x.
const Tensor3& sublayer_input(NormPlacement placement, const ResidualTape& tape) {
  return placement == NormPlacement::pre ? tape.norm.output : tape.input;
}

// The backward of residual_forward: `sublayer_backward` maps the gradient of the sublayer's output
// to that of its input.
template <class SublayerBackward>
Tensor3 residual_backward(NormPlacement placement, const ResidualConnection& r,
                          const ResidualTape& tape, const Tensor3& d_output,
                          ResidualConnection& grad, SublayerBackward&& sublayer_backward) {
  if (placement == NormPlacement::pre) {
    const Tensor3 d_normed = sublayer_backward(d_output);
    return d_output + backward(r.norm, tape.input, tape.norm, d_normed, grad.norm);
  }
  const Tensor3 d_sum = backward(r.norm, tape.sum, tape.norm, d_output, grad.norm);
  return d_sum + sublayer_backward(d_sum);
}

Module residual_connections(std::size_t count) {
  Module list{"ModuleList", "residual_connection", {}, {}};
  for (std::size_t i = 0; i < count; ++i)
    list.children.push_back(
        Module{"ResidualConnection",
               std::to_string(i),
               {},
               {describe_layer_normalization("norm"), leaf_module("Dropout", "dropout")}});
  return list;
}

Module named_attention(const TransformerConfig& c, std::string name) {
  Module m = describe_multi_head(MultiHeadVariant::fused, c.d_model, c.heads);
  m.name = std::move(name);
  return m;
}

void visit_norm(LayerNormalization& norm, const std::string& prefix,
                const ParameterVisitor& visit) {
  visit_parameters(norm, prefix, visit);
}

ScoreMask mask_for(const Array* mask, std::size_t batch, std::size_t heads, std::size_t queries,
                   std::size_t keys, MaskFill fill) {
  return broadcast_mask(*mask, batch, heads, queries, keys, fill);
}

void check_ids(const Ids& ids, std::size_t vocab, const char* which) {
  if (ids.shape(0) == 0 || ids.shape(1) == 0)
    throw Error(ErrorKind::bad_size, "transformer",
                fmt::format("the {} ids are empty: give at least one token", which));
  if (const auto bad = first_id_out_of_range(ids, vocab)) {
    throw Error(ErrorKind::bad_value, "transformer",
                fmt::format("{} id {} is outside the vocabulary of {}: give ids 0 to {}", which,
                            *bad, vocab, vocab - 1));
  }
}

// decode on target ids with the target mask (B,H,T,T) and the cross mask (B,H,T,S).
std::vector<DecoderBlockTape> run_decoder(const Transformer& model, const Tensor3& x,
                                          const Tensor3& memory, const ScoreMask* target_mask,
                                          const ScoreMask* cross_mask, Tensor3& out) {
  std::vector<DecoderBlockTape> tapes;
  Tensor3 stream = x;
  for (const DecoderBlock& block : model.decoder.layers) {
    tapes.push_back(forward(block, stream, memory, target_mask, cross_mask));
    stream = tapes.back().output;
  }
  out = stream;
  return tapes;
}

}  // namespace

void check_config(const TransformerConfig& c) {
  const auto positive = [](std::size_t v, const char* name) {
    if (v == 0)
      throw Error(ErrorKind::bad_size, "transformer",
                  fmt::format("{} is 0: every size of the model must be at least 1", name));
  };
  positive(c.source_vocab, "the source vocabulary");
  positive(c.target_vocab, "the target vocabulary");
  positive(c.source_positions, "the source's positions");
  positive(c.target_positions, "the target's positions");
  positive(c.d_model, "d_model");
  positive(c.heads, "heads");
  positive(c.d_ff, "d_ff");
  positive(c.layers, "layers");
  head_size(c.d_model, c.heads, "transformer", "pick <heads> that divides D");
}

namespace {
// The parts every block has, in the order the seed's constructors make them after the attention.
template <class Block>
Block finish_block(Rng& rng, const TransformerConfig& c, Block b) {
  b.placement = c.placement;
  b.feed_forward_neural_network =
      init_feed_forward(rng, FeedForwardVariant::relu, c.d_model, c.d_ff);
  for (ResidualConnection& r : b.residual_connection)
    r.norm = init_layer_normalization();
  return b;
}
}  // namespace

EncoderBlock init_encoder_block(Rng& rng, const TransformerConfig& c) {
  EncoderBlock b;
  b.multi_head_attention = init_attention(rng, c);
  return finish_block(rng, c, std::move(b));
}

DecoderBlock init_decoder_block(Rng& rng, const TransformerConfig& c) {
  DecoderBlock b;
  b.multi_head_attention = init_attention(rng, c);
  b.cross_attention = init_attention(rng, c);
  return finish_block(rng, c, std::move(b));
}

Transformer init_transformer(Rng& rng, const TransformerConfig& c) {
  check_config(c);
  Transformer m;
  m.config = c;
  for (std::size_t l = 0; l < c.layers; ++l)
    m.encoder.layers.push_back(init_encoder_block(rng, c));
  m.encoder.norm = init_layer_normalization();
  for (std::size_t l = 0; l < c.layers; ++l)
    m.decoder.layers.push_back(init_decoder_block(rng, c));
  m.decoder.norm = init_layer_normalization();
  m.projection = init_linear(rng, c.d_model, c.target_vocab, true);
  m.source_embedding = init_embedding(rng, c.source_vocab, c.d_model);
  m.target_embedding = init_embedding(rng, c.target_vocab, c.d_model);
  m.source_pe = sinusoidal_table(c.source_positions, c.d_model).pe;
  m.target_pe = sinusoidal_table(c.target_positions, c.d_model).pe;
  return m;
}

Module describe_encoder_block(const TransformerConfig& c, std::string name) {
  return Module{"EncoderBlock",
                std::move(name),
                {},
                {named_attention(c, "multi_head_attention"),
                 describe_feed_forward(FeedForwardVariant::relu, c.d_model, c.d_ff,
                                       "feed_forward_neural_network"),
                 residual_connections(2)}};
}

Module describe_decoder_block(const TransformerConfig& c, std::string name) {
  return Module{"DecoderBlock",
                std::move(name),
                {},
                {named_attention(c, "multi_head_attention"), named_attention(c, "cross_attention"),
                 describe_feed_forward(FeedForwardVariant::relu, c.d_model, c.d_ff,
                                       "feed_forward_neural_network"),
                 residual_connections(3)}};
}

Module describe_decoder(const TransformerConfig& c, std::string name) {
  Module layers{"ModuleList", "layers", {}, {}};
  for (std::size_t l = 0; l < c.layers; ++l)
    layers.children.push_back(describe_decoder_block(c, std::to_string(l)));
  return Module{"Decoder", std::move(name), {}, {layers, describe_layer_normalization("norm")}};
}

Module describe_transformer(const TransformerConfig& c) {
  check_config(c);
  Module layers{"ModuleList", "layers", {}, {}};
  for (std::size_t l = 0; l < c.layers; ++l)
    layers.children.push_back(describe_encoder_block(c, std::to_string(l)));
  const auto positional = [](std::string name) {
    return Module{"PositionalEncoding", std::move(name), {}, {leaf_module("Dropout", "dropout")}};
  };
  return Module{
      "Transformer",
      "",
      {},
      {Module{"Encoder", "encoder", {}, {layers, describe_layer_normalization("norm")}},
       describe_decoder(c, "decoder"),
       Module{"LinearTransformation",
              "projection",
              {},
              {linear_module("linear", c.d_model, c.target_vocab, true)}},
       Module{"InputEmbedding",
              "source_embedding",
              {},
              {describe_embedding(c.source_vocab, c.d_model, "embedding")}},
       Module{"InputEmbedding",
              "target_embedding",
              {},
              {describe_embedding(c.target_vocab, c.d_model, "embedding")}},
       positional("source_positional_encoding"), positional("target_positional_encoding")}};
}

void visit_parameters(EncoderBlock& b, const std::string& prefix, const ParameterVisitor& visit) {
  visit_parameters(b.multi_head_attention, prefixed(prefix + "multi_head_attention.", visit));
  visit_parameters(b.feed_forward_neural_network,
                   prefixed(prefix + "feed_forward_neural_network.", visit));
  for (std::size_t i = 0; i < 2; ++i)
    visit_norm(b.residual_connection[i].norm,
               prefix + "residual_connection." + std::to_string(i) + ".norm.", visit);
}

void visit_parameters(DecoderBlock& b, const std::string& prefix, const ParameterVisitor& visit) {
  visit_parameters(b.multi_head_attention, prefixed(prefix + "multi_head_attention.", visit));
  visit_parameters(b.cross_attention, prefixed(prefix + "cross_attention.", visit));
  visit_parameters(b.feed_forward_neural_network,
                   prefixed(prefix + "feed_forward_neural_network.", visit));
  for (std::size_t i = 0; i < 3; ++i)
    visit_norm(b.residual_connection[i].norm,
               prefix + "residual_connection." + std::to_string(i) + ".norm.", visit);
}

void visit_parameters(Decoder& d, const std::string& prefix, const ParameterVisitor& visit) {
  for (std::size_t l = 0; l < d.layers.size(); ++l)
    visit_parameters(d.layers[l], prefix + "layers." + std::to_string(l) + ".", visit);
  visit_norm(d.norm, prefix + "norm.", visit);
}

void visit_parameters(Transformer& m, const ParameterVisitor& visit) {
  for (std::size_t l = 0; l < m.encoder.layers.size(); ++l)
    visit_parameters(m.encoder.layers[l], "encoder.layers." + std::to_string(l) + ".", visit);
  visit_norm(m.encoder.norm, "encoder.norm.", visit);
  visit_parameters(m.decoder, "decoder.", visit);
  visit_parameters(m.projection, "projection.linear.", visit);
  visit_parameters(m.source_embedding, "source_embedding.embedding.", visit);
  visit_parameters(m.target_embedding, "target_embedding.embedding.", visit);
}

EncoderBlockTape forward(const EncoderBlock& b, const Tensor3& x, const ScoreMask* mask) {
  EncoderBlockTape t;
  Tensor3 stream = residual_forward(b.placement, b.residual_connection[0], x, t.residual[0],
                                    [&](const Tensor3& in) {
                                      t.attention = forward(b.multi_head_attention, in, in, mask);
                                      return t.attention.output;
                                    });
  t.output = residual_forward(b.placement, b.residual_connection[1], stream, t.residual[1],
                              [&](const Tensor3& in) {
                                t.feed_forward = forward(b.feed_forward_neural_network, in);
                                return t.feed_forward.output;
                              });
  return t;
}

DecoderBlockTape forward(const DecoderBlock& b, const Tensor3& x, const Tensor3& memory,
                         const ScoreMask* target_mask, const ScoreMask* source_mask) {
  DecoderBlockTape t;
  Tensor3 stream = residual_forward(
      b.placement, b.residual_connection[0], x, t.residual[0], [&](const Tensor3& in) {
        t.self_attention = forward(b.multi_head_attention, in, in, target_mask);
        return t.self_attention.output;
      });
  stream = residual_forward(
      b.placement, b.residual_connection[1], stream, t.residual[1], [&](const Tensor3& in) {
        t.cross_attention = forward(b.cross_attention, in, memory, source_mask);
        return t.cross_attention.output;
      });
  t.output = residual_forward(b.placement, b.residual_connection[2], stream, t.residual[2],
                              [&](const Tensor3& in) {
                                t.feed_forward = forward(b.feed_forward_neural_network, in);
                                return t.feed_forward.output;
                              });
  return t;
}

Tensor3 backward(const EncoderBlock& b, const EncoderBlockTape& t, const ScoreMask* mask,
                 const Tensor3& d_output, EncoderBlock& grad) {
  const NormPlacement p = b.placement;
  const Tensor3 d_stream = residual_backward(
      p, b.residual_connection[1], t.residual[1], d_output, grad.residual_connection[1],
      [&](const Tensor3& d) {
        return backward(b.feed_forward_neural_network, sublayer_input(p, t.residual[1]),
                        t.feed_forward, d, grad.feed_forward_neural_network);
      });
  return residual_backward(p, b.residual_connection[0], t.residual[0], d_stream,
                           grad.residual_connection[0], [&](const Tensor3& d) {
                             const Tensor3& in = sublayer_input(p, t.residual[0]);
                             const CrossAttentionGradients g =
                                 backward(b.multi_head_attention, in, in, t.attention, mask, d,
                                          grad.multi_head_attention);
                             return Tensor3(g.x + g.memory);
                           });
}

DecoderBlockGradients backward(const DecoderBlock& b, const DecoderBlockTape& t,
                               const Tensor3& memory, const ScoreMask* target_mask,
                               const ScoreMask* source_mask, const Tensor3& d_output,
                               DecoderBlock& grad) {
  const NormPlacement p = b.placement;
  DecoderBlockGradients out;
  out.memory = xt::zeros<float>(memory.shape());
  Tensor3 d_stream = residual_backward(
      p, b.residual_connection[2], t.residual[2], d_output, grad.residual_connection[2],
      [&](const Tensor3& d) {
        return backward(b.feed_forward_neural_network, sublayer_input(p, t.residual[2]),
                        t.feed_forward, d, grad.feed_forward_neural_network);
      });
  d_stream = residual_backward(p, b.residual_connection[1], t.residual[1], d_stream,
                               grad.residual_connection[1], [&](const Tensor3& d) {
                                 CrossAttentionGradients g = backward(
                                     b.cross_attention, sublayer_input(p, t.residual[1]), memory,
                                     t.cross_attention, source_mask, d, grad.cross_attention);
                                 out.memory += g.memory;
                                 return g.x;
                               });
  out.x = residual_backward(p, b.residual_connection[0], t.residual[0], d_stream,
                            grad.residual_connection[0], [&](const Tensor3& d) {
                              const Tensor3& in = sublayer_input(p, t.residual[0]);
                              const CrossAttentionGradients g =
                                  backward(b.multi_head_attention, in, in, t.self_attention,
                                           target_mask, d, grad.multi_head_attention);
                              return Tensor3(g.x + g.memory);
                            });
  return out;
}

Tensor3 log_softmax(const Tensor3& x) {
  return map_rows(x, [](const float* in, float* o, std::size_t n) {
    const float largest = *std::max_element(in, in + n);
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j)
      sum += std::exp(static_cast<double>(in[j]) - largest);
    const double log_sum = std::log(sum);
    for (std::size_t j = 0; j < n; ++j)
      o[j] = static_cast<float>(static_cast<double>(in[j]) - largest - log_sum);
  });
}

Tensor3 encode(const Transformer& model, const Ids& source, const Array* source_mask) {
  const TransformerConfig& c = model.config;
  check_ids(source, c.source_vocab, "source");
  const std::size_t batch = source.shape(0), s = source.shape(1);
  ScoreMask mask;
  if (source_mask != nullptr) mask = mask_for(source_mask, batch, c.heads, s, s, c.fill);
  Tensor3 stream = embed(model.source_embedding, model.source_pe, source, "the source is");
  for (const EncoderBlock& block : model.encoder.layers)
    stream = forward(block, stream, source_mask != nullptr ? &mask : nullptr).output;
  return forward(model.encoder.norm, stream).output;
}

TransformerTape forward(const Transformer& model, const Ids& source, const Ids& target,
                        const Array* source_mask, const Array* target_mask) {
  const TransformerConfig& c = model.config;
  check_ids(source, c.source_vocab, "source");
  check_ids(target, c.target_vocab, "target");
  if (source.shape(0) != target.shape(0))
    throw Error(ErrorKind::bad_size, "transformer",
                fmt::format("{} source sequences but {} target sequences: give as many of each",
                            source.shape(0), target.shape(0)));
  const std::size_t batch = source.shape(0), s = source.shape(1), t = target.shape(1);
  TransformerTape tape;
  tape.source = source;
  tape.target = target;
  tape.has_source_mask = source_mask != nullptr;
  tape.has_target_mask = target_mask != nullptr;
  if (tape.has_source_mask) {
    tape.encoder_mask = mask_for(source_mask, batch, c.heads, s, s, c.fill);
    tape.cross_mask = mask_for(source_mask, batch, c.heads, t, s, c.fill);
  }
  if (tape.has_target_mask) tape.target_mask = mask_for(target_mask, batch, c.heads, t, t, c.fill);
  const ScoreMask* encoder_mask = tape.has_source_mask ? &tape.encoder_mask : nullptr;
  const ScoreMask* cross_mask = tape.has_source_mask ? &tape.cross_mask : nullptr;
  const ScoreMask* self_mask = tape.has_target_mask ? &tape.target_mask : nullptr;

  tape.source_input = embed(model.source_embedding, model.source_pe, source, "the source is");
  Tensor3 stream = tape.source_input;
  for (const EncoderBlock& block : model.encoder.layers) {
    tape.encoder_layers.push_back(forward(block, stream, encoder_mask));
    stream = tape.encoder_layers.back().output;
  }
  tape.encoder_norm = forward(model.encoder.norm, stream);
  tape.target_input = embed(model.target_embedding, model.target_pe, target, "the target is");
  Tensor3 decoded;
  tape.decoder_layers =
      run_decoder(model, tape.target_input, tape.memory(), self_mask, cross_mask, decoded);
  tape.decoder_norm = forward(model.decoder.norm, decoded);
  tape.logits = forward(model.projection, tape.decoder_norm.output);
  tape.log_probs = log_softmax(tape.logits);
  return tape;
}

void backward(const Transformer& model, const TransformerTape& tape, const Tensor3& d_logits,
              Transformer& grad) {
  const ScoreMask* encoder_mask = tape.has_source_mask ? &tape.encoder_mask : nullptr;
  const ScoreMask* cross_mask = tape.has_source_mask ? &tape.cross_mask : nullptr;
  const ScoreMask* self_mask = tape.has_target_mask ? &tape.target_mask : nullptr;
  const std::size_t layers = model.decoder.layers.size();
  const Tensor3& decoded = layers == 0 ? tape.target_input : tape.decoder_layers.back().output;
  Tensor3 d = backward(model.projection, tape.decoder_norm.output, d_logits, grad.projection);
  d = backward(model.decoder.norm, decoded, tape.decoder_norm, d, grad.decoder.norm);
  Tensor3 d_memory = xt::zeros<float>(tape.memory().shape());
  for (std::size_t l = layers; l-- > 0;) {
    DecoderBlockGradients g =
        backward(model.decoder.layers[l], tape.decoder_layers[l], tape.memory(), self_mask,
                 cross_mask, d, grad.decoder.layers[l]);
    d = std::move(g.x);
    d_memory += g.memory;
  }
  const float scale = embedding_scale(model.config.d_model);
  backward(model.target_embedding, tape.target, Tensor3(d * scale), grad.target_embedding);

  const std::size_t encoder_layers = model.encoder.layers.size();
  const Tensor3& encoded =
      encoder_layers == 0 ? tape.source_input : tape.encoder_layers.back().output;
  d = backward(model.encoder.norm, encoded, tape.encoder_norm, d_memory, grad.encoder.norm);
  for (std::size_t l = encoder_layers; l-- > 0;)
    d = backward(model.encoder.layers[l], tape.encoder_layers[l], encoder_mask, d,
                 grad.encoder.layers[l]);
  backward(model.source_embedding, tape.source, Tensor3(d * scale), grad.source_embedding);
}

DecoderCache start_decoding(const Transformer& model, const Tensor3& memory,
                            const Array* source_mask) {
  const TransformerConfig& c = model.config;
  DecoderCache cache;
  const std::size_t batch = memory.shape(0), s = memory.shape(1);
  if (source_mask != nullptr) {
    cache.cross_mask = mask_for(source_mask, batch, c.heads, 1, s, c.fill);
    cache.has_cross_mask = true;
  }
  for (const DecoderBlock& block : model.decoder.layers) {
    cache.cross_keys.push_back(
        split_into_heads(forward(block.cross_attention.W_K, memory), c.heads));
    cache.cross_values.push_back(
        split_into_heads(forward(block.cross_attention.W_V, memory), c.heads));
    cache.self_keys.emplace_back(Tensor3({batch * c.heads, 0, c.d_model / c.heads}));
    cache.self_values.emplace_back(Tensor3({batch * c.heads, 0, c.d_model / c.heads}));
  }
  return cache;
}

namespace {
// (B*H,n,hs) with one more row per batch-head: (B*H,1,hs) appended.
Tensor3 append_row(const Tensor3& rows, const Tensor3& row) {
  const std::size_t groups = rows.shape(0), n = rows.shape(1), hs = rows.shape(2);
  Tensor3 out({groups, n + 1, hs});
  for (std::size_t g = 0; g < groups; ++g) {
    std::copy(rows.data() + g * n * hs, rows.data() + (g + 1) * n * hs,
              out.data() + g * (n + 1) * hs);
    std::copy(row.data() + g * hs, row.data() + (g + 1) * hs, out.data() + (g * (n + 1) + n) * hs);
  }
  return out;
}

// One query per sequence (B,1,D) attending to cached keys and values (B*H,S,hs).
Tensor3 attend_cached(const FusedMultiHead& m, const Tensor3& x, const Tensor3& keys,
                      const Tensor3& values, const ScoreMask* mask) {
  const Tensor3 queries = split_into_heads(forward(m.W_Q, x), m.heads);  // (B*H,1,hs)
  Tensor3 scores =
      batched_matmul_transposed(queries, keys) / std::sqrt(static_cast<float>(keys.shape(2)));
  if (mask != nullptr) apply_mask(*mask, scores);
  const Tensor3 context = batched_matmul(softmax(scores), values);
  Tensor3 concatenated = merge_from_heads(context, m.heads);  // (B,1,H*hs)
  zero_ablated_heads(concatenated, m.ablated, m.heads);
  return forward(m.W_O, concatenated);
}
}  // namespace

Tensor3 decode_step(const Transformer& model, DecoderCache& cache,
                    const std::vector<std::int64_t>& ids) {
  const TransformerConfig& c = model.config;
  if (cache.tokens >= c.target_positions) {
    throw Error(ErrorKind::bad_size, "decode_step",
                fmt::format("the target would pass the {} positions of its positional encoding",
                            c.target_positions));
  }
  Ids step({ids.size(), 1});
  std::copy(ids.begin(), ids.end(), step.begin());
  check_ids(step, c.target_vocab, "target");
  const Tensor3 scaled = forward(model.target_embedding, step) * embedding_scale(c.d_model);
  Tensor3 x = scaled;
  for (std::size_t d = 0; d < c.d_model; ++d)
    for (std::size_t b = 0; b < ids.size(); ++b)
      x(b, 0, d) += model.target_pe(cache.tokens, d);
  const ScoreMask* cross_mask = cache.has_cross_mask ? &cache.cross_mask : nullptr;
  for (std::size_t l = 0; l < model.decoder.layers.size(); ++l) {
    const DecoderBlock& b = model.decoder.layers[l];
    ResidualTape unused;
    x = residual_forward(b.placement, b.residual_connection[0], x, unused, [&](const Tensor3& in) {
      const std::size_t heads = b.multi_head_attention.heads;
      cache.self_keys[l] = append_row(
          cache.self_keys[l], split_into_heads(forward(b.multi_head_attention.W_K, in), heads));
      cache.self_values[l] = append_row(
          cache.self_values[l], split_into_heads(forward(b.multi_head_attention.W_V, in), heads));
      // The new token sees every token before it and itself: the causal mask keeps them all.
      return attend_cached(b.multi_head_attention, in, cache.self_keys[l], cache.self_values[l],
                           nullptr);
    });
    x = residual_forward(b.placement, b.residual_connection[1], x, unused, [&](const Tensor3& in) {
      return attend_cached(b.cross_attention, in, cache.cross_keys[l], cache.cross_values[l],
                           cross_mask);
    });
    x = residual_forward(b.placement, b.residual_connection[2], x, unused, [&](const Tensor3& in) {
      return forward(b.feed_forward_neural_network, in).output;
    });
  }
  ++cache.tokens;
  return log_softmax(forward(model.projection, forward(model.decoder.norm, x).output));
}

Tensor3 decode_last(const Transformer& model, const Tensor3& memory, const Array* source_mask,
                    const Ids& prefix) {
  const TransformerConfig& c = model.config;
  check_ids(prefix, c.target_vocab, "target");
  const std::size_t batch = prefix.shape(0), t = prefix.shape(1), s = memory.shape(1);
  ScoreMask cross;
  if (source_mask != nullptr) cross = mask_for(source_mask, batch, c.heads, t, s, c.fill);
  const Array causal = target_causal_mask(std::vector<std::size_t>(batch, t), t);
  const ScoreMask self = mask_for(&causal, batch, c.heads, t, t, c.fill);
  Tensor3 decoded;
  run_decoder(model, embed(model.target_embedding, model.target_pe, prefix, "the target is"),
              memory, &self, source_mask != nullptr ? &cross : nullptr, decoded);
  Tensor3 last({batch, 1, c.d_model});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t d = 0; d < c.d_model; ++d)
      last(b, 0, d) = decoded(b, t - 1, d);
  // The seed's decode normalises every position; the last row's norm is the same computation.
  return log_softmax(forward(model.projection, forward(model.decoder.norm, last).output));
}

namespace {
// Seed 001's MultiHeadAttention called on queries of `q` (B,T,D) and keys and values of `kv`.
void trace_attention(Trace& trace, const Module& m, const Shape& q, const Shape& kv,
                     std::size_t heads) {
  trace.call(m, q, q);
  trace.enter();
  trace.call(child(m, "W_Q"), q, q);
  trace.call(child(m, "W_K"), kv, kv);
  trace.call(child(m, "W_V"), kv, kv);
  const Shape weights{q[0], heads, q[1], kv[1]};
  trace.call(child(m, "dropout"), weights, weights);
  trace.call(child(m, "W_O"), q, q);
  trace.leave();
}

void trace_relu_feed_forward(Trace& trace, const Module& m, const Shape& x) {
  const Module& first = child(m, "layer1");
  const Shape hidden = linear_output(x, first.parameters.front().shape.front());
  trace.call(m, x, x);
  trace.enter();
  trace.call(first, x, hidden);
  trace.call(child(m, "relu"), hidden, hidden);
  trace.call(child(m, "dropout"), hidden, hidden);
  trace.call(child(m, "layer2"), hidden, x);
  trace.leave();
}

// ResidualConnection i of a block (the trace at the block's children's depth): its row, its
// norm and dropout one level down inside the list, and the sublayer's rows at the block's
// children's depth, in the order the connection calls them. The rows that follow the sublayer's
// are listed under the list and the connection again, as torchinfo's
// add_missing_container_layers re-inserts them: the list's own LayerInfo, and a stand-in for the
// connection. `list_row` is the list's first row.
template <class Sublayer>
void trace_residual(Trace& trace, const Module& list, std::size_t i, const Shape& x,
                    NormPlacement placement, std::size_t& list_row, Sublayer&& sublayer) {
  if (i == 0) {
    list_row = trace.size();
    trace.container(list);
  }
  trace.enter();
  const Module& r = list.children.at(i);
  const std::size_t connection_row = trace.size();
  trace.call(r, x, x);
  trace.enter();
  const auto norm = [&] { trace.call(child(r, "norm"), x, x); };
  const auto lambda = [&] {  // called from inside the connection, at its own depth
    const Trace::Detour detour = trace.step_out(2);
    sublayer();
    trace.step_back(detour);
    trace.leave();
    trace.leave();
    trace.relist(list_row, true);
    trace.enter();
    trace.relist(connection_row, false);
    trace.enter();
  };
  if (placement == NormPlacement::pre) {
    norm();
    lambda();
    trace.call(child(r, "dropout"), x, x);
  } else {
    lambda();
    trace.call(child(r, "dropout"), x, x);
    norm();
  }
  trace.leave();
  trace.leave();
}

// An EncoderBlock (memory null: self-attention, feed-forward) or a DecoderBlock (self-attention,
// cross-attention on the memory, feed-forward).
void trace_block(Trace& trace, const Module& block, const Shape& x, const Shape* memory,
                 std::size_t heads, NormPlacement placement) {
  trace.call(block, x, x);
  trace.enter();
  const Module& list = child(block, "residual_connection");
  std::size_t i = 0, list_row = 0;
  trace_residual(trace, list, i++, x, placement, list_row, [&] {
    trace_attention(trace, child(block, "multi_head_attention"), x, x, heads);
  });
  if (memory != nullptr)
    trace_residual(trace, list, i++, x, placement, list_row, [&] {
      trace_attention(trace, child(block, "cross_attention"), x, *memory, heads);
    });
  trace_residual(trace, list, i, x, placement, list_row, [&] {
    trace_relu_feed_forward(trace, child(block, "feed_forward_neural_network"), x);
  });
  trace.leave();
}

void trace_stack(Trace& trace, const Module& stack, const Shape& x, const Shape& memory,
                 const TransformerConfig& c, bool decoder) {
  trace.call(stack, x, x);
  trace.enter();
  const Module& layers = child(stack, "layers");
  trace.container(layers);
  trace.enter();
  for (const Module& block : layers.children) {
    trace_block(trace, block, x, decoder ? &memory : nullptr, c.heads, c.placement);
  }
  trace.leave();
  trace.call(child(stack, "norm"), x, x);
  trace.leave();
}

// InputEmbedding then PositionalEncoding on ids (B,N).
void trace_inputs(Trace& trace, const Module& embedding, const Module& positions, const Shape& ids,
                  std::size_t d_model) {
  const Shape x{ids[0], ids[1], d_model};
  trace.call(embedding, ids, x);
  trace.enter();
  trace.call(child(embedding, "embedding"), ids, x);
  trace.leave();
  trace.call(positions, x, x);
  trace.enter();
  trace.call(child(positions, "dropout"), x, x);
  trace.leave();
}
}  // namespace

std::vector<LayerInfo> trace_decoder_block(const TransformerConfig& c, std::size_t batch,
                                           std::size_t tokens, std::size_t source_tokens) {
  Trace trace;
  const Shape memory{batch, source_tokens, c.d_model};
  trace_block(trace, describe_decoder_block(c), {batch, tokens, c.d_model}, &memory, c.heads,
              c.placement);
  return trace.layers();
}

std::vector<LayerInfo> trace_decoder(const TransformerConfig& c, std::size_t batch,
                                     std::size_t tokens, std::size_t source_tokens) {
  Trace trace;
  trace_stack(trace, describe_decoder(c), {batch, tokens, c.d_model},
              {batch, source_tokens, c.d_model}, c, true);
  return trace.layers();
}

std::vector<LayerInfo> trace_transformer(const TransformerConfig& c, std::size_t batch,
                                         std::size_t tokens, std::size_t source_tokens) {
  const Module m = describe_transformer(c);
  const Shape source{batch, source_tokens, c.d_model}, target{batch, tokens, c.d_model};
  Trace trace;
  trace.call(m, {batch, source_tokens}, {batch, tokens, c.target_vocab});
  trace.enter();
  trace_inputs(trace, child(m, "source_embedding"), child(m, "source_positional_encoding"),
               {batch, source_tokens}, c.d_model);
  trace_stack(trace, child(m, "encoder"), source, source, c, false);
  trace_inputs(trace, child(m, "target_embedding"), child(m, "target_positional_encoding"),
               {batch, tokens}, c.d_model);
  trace_stack(trace, child(m, "decoder"), target, source, c, true);
  const Module& projection = child(m, "projection");
  trace.call(projection, target, {batch, tokens, c.target_vocab});
  trace.enter();
  trace.call(child(projection, "linear"), target, {batch, tokens, c.target_vocab});
  trace.leave();
  trace.leave();
  return trace.layers();
}

DecodeCost decode_cost(const TransformerConfig& c, std::size_t source_tokens, std::size_t t) {
  const std::uint64_t d = c.d_model, f = c.d_ff, v = c.target_vocab, s = source_tokens, n = t + 1,
                      layers = c.layers;
  DecodeCost cost;
  // Cached: the new token's Q, K, V, O (4 D²), its scores and weighted sum over n keys (2 n D),
  // the cross-attention's Q and O (2 D²) over S keys (2 S D), the feed-forward (2 D F); the
  // memory's keys and values (2 S D²) once, at the first step.
  cost.cached = layers * (4 * d * d + 2 * n * d + 2 * d * d + 2 * s * d + 2 * d * f +
                          (t == 0 ? 2 * s * d * d : 0)) +
                d * v;
  // Recomputed: all n tokens through every product, n² scores, the memory's keys and values again.
  cost.recomputed = layers * (n * 4 * d * d + 2 * n * n * d + n * 2 * d * d + 2 * s * d * d +
                              2 * n * s * d + n * 2 * d * f) +
                    d * v;
  return cost;
}

}  // namespace attn
