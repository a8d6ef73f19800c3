// The catalog: one entry per lesson, with the PyTorch modules `attn summary` describes for it.
// Each model takes the lesson's own defaults, so that a summary shows the module the lesson runs.
#include "catalog.hpp"

#include <fmt/format.h>

#include "00-tokens/tokens_lesson.hpp"
#include "04-attention/attention_lesson.hpp"
#include "05-multi-head/multi_head_lesson.hpp"
#include "06-positional-encoding/positional_encoding_lesson.hpp"
#include "07-layer-norm/layer_norm_lesson.hpp"
#include "08-feed-forward/feed_forward_lesson.hpp"
#include "13-decoder/decoder_lesson.hpp"
#include "attention.hpp"
#include "embedding.hpp"
#include "encoder.hpp"
#include "error.hpp"
#include "feed_forward.hpp"
#include "gradients.hpp"
#include "layer_norm.hpp"
#include "models.hpp"
#include "multi_head.hpp"
#include "positional_encoding.hpp"
#include "random.hpp"
#include "shipped.hpp"
#include "state_dict.hpp"
#include "transformer.hpp"

namespace attn::lessons {

namespace {

// ---- 00 tokens: nn.Embedding(V, D) on ids (B, T)

ModelDescription embedding_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, TokensLessonOptions{}.d_model);
  const std::size_t rows = or_default(r.vocab_size, lesson_vocabulary().size());
  const Shape ids = {r.batch, r.seq};
  return {describe_embedding(rows, width), trace_embedding(rows, width, ids), {{ids, kInt64}}};
}

// ---- 04 attention: seed 004's SelfAttention(D), seed 000's AttentionHead(D, hs)

ModelDescription self_attention_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const Shape x = hidden_states(r, width);
  return {describe_self_attention(width), trace_self_attention(width, x), {{x, kFloat32}}};
}

ModelDescription attention_head_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t hs = or_default(r.head_size, width);  // the lesson's --head-size default
  const Shape x = hidden_states(r, width);
  return {describe_attention_head(width, hs), trace_attention_head(width, hs, x), {{x, kFloat32}}};
}

// ---- 05 multi-head: the book's form unless --variant says otherwise (the compare view's output)

ModelDescription multi_head_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t heads = or_default(r.heads, MultiHeadLessonOptions{}.heads);
  const std::string name = r.variant.empty() ? "book" : r.variant;
  const std::optional<MultiHeadVariant> variant = multi_head_variant(name);
  if (!variant) throw unknown_variant("multi-head", name, "narrow, wide, book or fused");
  const Shape x = hidden_states(r, width);
  return {describe_multi_head(*variant, width, heads),
          trace_multi_head(*variant, width, heads, x),
          {{x, kFloat32}}};
}

// ---- 06 positional-encoding: seed 001's PositionalEncoding, or the book's learned table

ModelDescription positional_encoding_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t positions = or_default(r.max_positions, kDefaultMaxPositions);
  const std::string kind = r.kind.empty() ? PositionalEncodingLessonOptions{}.kind : r.kind;
  if (r.seq > positions) {
    throw Error(
        ErrorKind::bad_size, "describe",
        fmt::format(
            "T = {} is more than the {} positions of the table: give <max_positions> {} or more",
            r.seq, positions, r.seq))
        .about("max_positions")
        .driven_by({"T", "P"});
  }
  if (kind == "sinusoidal") {
    const Shape x = hidden_states(r, width);
    return {describe_sinusoidal_encoding(), trace_sinusoidal_encoding(x), {{x, kFloat32}}};
  }
  if (kind != "learned") {
    throw Error("describe",
                fmt::format("'{}' is not a kind of encoding: use sinusoidal or learned", kind))
        .about("kind");
  }
  const Shape ids = {1, r.seq};  // position_ids = torch.arange(T).unsqueeze(0)
  return {describe_position_embedding(positions, width),
          trace_position_embedding(positions, width, ids),
          {{ids, kInt64}}};
}

// ---- 07 layer-norm: nn.LayerNorm(D), or seed 001's LayerNormalization

ModelDescription layer_norm_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::string variant = r.variant.empty() ? LayerNormLessonOptions{}.variant : r.variant;
  const Shape x = hidden_states(r, width);
  if (variant == "torch")
    return {describe_layer_norm(width), trace_layer_norm(width, x), {{x, kFloat32}}};
  if (variant != "seed001") throw unknown_variant("layer-norm", variant, "torch or seed001");
  const Module norm = describe_layer_normalization();
  Trace trace;
  trace_layer_norm(trace, norm, x);
  return {norm, trace.layers(), {{x, kFloat32}}};
}

// ---- 08 feed-forward: the book's FeedForward(D, F), or seed 001's and seed 000's

ModelDescription feed_forward_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t hidden = or_default(r.d_ff, 4 * width);
  const std::string name = r.variant.empty() ? FeedForwardLessonOptions{}.variant : r.variant;
  const std::optional<FeedForwardVariant> variant = feed_forward_variant(name);
  if (!variant) throw unknown_variant("feed-forward", name, "book, relu or gelu-last");
  const Shape x = hidden_states(r, width);
  return {describe_feed_forward(*variant, width, hidden),
          trace_feed_forward(*variant, width, hidden, x),
          {{x, kFloat32}}};
}

// ---- 09 encoder: the book's Embeddings and TransformerEncoder, from a config

EncoderConfig encoder_config(const ModelRequest& r) {
  EncoderConfig c = r.config ? *r.config : tiny_config();
  if (r.d_model != 0) c.hidden_size = r.d_model;
  if (r.heads != 0) c.num_attention_heads = r.heads;
  if (r.d_ff != 0) c.intermediate_size = r.d_ff;
  if (r.layers != 0) c.num_hidden_layers = r.layers;
  if (r.max_positions != 0) c.max_position_embeddings = r.max_positions;
  if (r.vocab_size != 0) c.vocab_size = r.vocab_size;
  validate_config(c, r.config ? "the config" : "the tiny config");
  return c;
}

ModelDescription embeddings_model(const ModelRequest& r) {
  const EncoderConfig c = encoder_config(r);
  const Shape ids = {r.batch, r.seq};
  Module m = describe_embeddings(c);
  Trace trace;
  trace_embeddings(trace, m, ids);
  return {std::move(m), trace.layers(), {{ids, kInt64}}};
}

ModelDescription encoder_model(const ModelRequest& r) {
  const EncoderConfig c = encoder_config(r);
  const NormPlacement norm = r.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  if (!r.norm.empty() && r.norm != "pre" && r.norm != "post") {
    throw Error("describe", fmt::format("'{}' is not a placement: use pre or post", r.norm))
        .about("norm");
  }
  const Shape input = r.embeddings ? Shape{r.batch, r.seq} : Shape{r.batch, r.seq, c.hidden_size};
  return {describe_encoder(c, r.embeddings),
          trace_encoder(c, r.embeddings, norm, input),
          {{input, r.embeddings ? kInt64 : kFloat32}}};
}

// ---- 13 decoder: seed 001's DecoderBlock, Decoder and Transformer (S = T = --seq)

TransformerConfig seed001_config(const ModelRequest& r) {
  const DecoderLessonOptions lesson;
  TransformerConfig c;
  c.d_model = or_default(r.d_model, LessonOptions{}.d_model);
  c.heads = or_default(r.heads, lesson.heads);
  c.d_ff = or_default(r.d_ff, lesson.d_ff);
  c.layers = or_default(r.layers, 2);
  c.source_vocab = c.target_vocab = or_default(r.vocab_size, lesson.vocab);
  c.source_positions = c.target_positions = or_default(r.max_positions, r.seq);
  if (!r.norm.empty() && r.norm != "pre" && r.norm != "post")
    throw Error("describe", fmt::format("'{}' is not a placement: use pre or post", r.norm))
        .about("norm");
  c.placement = r.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  try {
    check_config(c);
  } catch (const Error& e) {
    throw Error(ErrorKind::bad_size, "describe", e.detail()).about("heads");
  }
  if (r.seq > c.target_positions)
    throw Error(ErrorKind::bad_size, "describe",
                fmt::format("--seq {} is past the positional encoding's {} positions: give "
                            "--max-positions {} or more",
                            r.seq, c.target_positions, r.seq))
        .about("seq");
  return c;
}

// The masks a decoder is trained with, as torchinfo counts them among the inputs: the source
// padding mask (B,1,1,S) and the causal target mask (B,1,T,T), int64 as the generator makes them.
SummaryInput source_mask_input(const ModelRequest& r) {
  return {Shape{r.batch, 1, 1, r.seq}, kInt64};
}

SummaryInput target_mask_input(const ModelRequest& r) {
  return {Shape{r.batch, 1, r.seq, r.seq}, kInt64};
}

ModelDescription decoder_block_model(const ModelRequest& r) {
  const TransformerConfig c = seed001_config(r);
  const Shape x = hidden_states(r, c.d_model);
  return {describe_decoder_block(c),
          trace_decoder_block(c, r.batch, r.seq, r.seq),
          {{x, kFloat32}, {x, kFloat32}, source_mask_input(r), target_mask_input(r)}};
}

ModelDescription decoder_model(const ModelRequest& r) {
  const TransformerConfig c = seed001_config(r);
  const Shape x = hidden_states(r, c.d_model);
  return {describe_decoder(c),
          trace_decoder(c, r.batch, r.seq, r.seq),
          {{x, kFloat32}, {x, kFloat32}, source_mask_input(r), target_mask_input(r)}};
}

ModelDescription transformer_model(const ModelRequest& r) {
  const TransformerConfig c = seed001_config(r);
  const Shape ids{r.batch, r.seq};
  return {describe_transformer(c),
          trace_transformer(c, r.batch, r.seq, r.seq),
          {{ids, kInt64}, {ids, kInt64}, source_mask_input(r), target_mask_input(r)}};
}

// ---- attn backward --model: the forward on X (or ids), then backward from G

// A module with no parameters (seed 001's PositionalEncoding).
struct NoParameters {};
void visit_parameters(NoParameters&, const ParameterVisitor&) {}

LessonRun self_attention_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  Rng rng(g.seed);
  return hidden_state_gradients("self-attention", r, g, rng, init_self_attention(rng, width),
                                describe_self_attention(width), width, unmasked);
}

LessonRun attention_head_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t hs = or_default(r.head_size, width);
  Rng rng(g.seed);
  return hidden_state_gradients("attention-head", r, g, rng, init_attention_head(rng, width, hs),
                                describe_attention_head(width, hs), width, unmasked);
}

LessonRun multi_head_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t heads = or_default(r.heads, MultiHeadLessonOptions{}.heads);
  const std::string name = r.variant.empty() ? "book" : r.variant;
  const std::optional<MultiHeadVariant> variant = multi_head_variant(name);
  if (!variant) throw unknown_variant("multi-head", name, "narrow, wide, book or fused");
  Rng rng(g.seed);
  return hidden_state_gradients("multi-head", r, g, rng,
                                init_multi_head(rng, *variant, width, heads),
                                describe_multi_head(*variant, width, heads), width, unmasked);
}

LessonRun embedding_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, TokensLessonOptions{}.d_model);
  const std::size_t rows = or_default(r.vocab_size, lesson_vocabulary().size());
  Rng rng(g.seed);
  Embedding layer = init_embedding(rng, rows, width);
  const Ids ids = id_input(r, g, rng, rows);
  return table_gradients("embedding", describe_embedding(rows, width), std::move(layer), ids, g,
                         rng);
}

LessonRun positional_encoding_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t positions = or_default(r.max_positions, kDefaultMaxPositions);
  const std::string kind = r.kind.empty() ? PositionalEncodingLessonOptions{}.kind : r.kind;
  Rng rng(g.seed);
  if (kind == "learned") {  // the book's nn.Embedding(P, D) on position_ids = arange(T)[None]
    if (g.input)
      throw Error("backward",
                  "the learned table reads the positions 0..T-1 itself: drop --input "
                  "and give --seq T")
          .about("input");
    if (r.seq > positions)
      throw Error(ErrorKind::bad_size, "backward",
                  fmt::format("T = {} is more than the {} positions of the table: give "
                              "--max-positions {} or more",
                              r.seq, positions, r.seq))
          .about("seq");
    Ids ids({1, r.seq});
    for (std::size_t t = 0; t < r.seq; ++t)
      ids(0, t) = static_cast<std::int64_t>(t);
    Embedding layer = init_embedding(rng, positions, width);
    return table_gradients("positional-encoding", describe_position_embedding(positions, width),
                           std::move(layer), ids, g, rng);
  }
  if (kind != "sinusoidal")
    throw Error("describe",
                fmt::format("'{}' is not a kind of encoding: use sinusoidal or learned", kind))
        .about("kind");
  // Seed 001's x + pe[:, :T]: no parameters, and dL/dx = G.
  const Tensor3 x = float_input(r, g, rng, width);
  if (x.shape(1) > positions)
    throw Error(ErrorKind::bad_size, "backward",
                fmt::format("T = {} is more than the table's {} positions: give --max-positions {} "
                            "or more",
                            x.shape(1), positions, x.shape(1)))
        .about("max_positions");
  const SinusoidalTable table = sinusoidal_table(positions, width);
  Tensor3 y = x;
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t t = 0; t < x.shape(1); ++t)
      for (std::size_t d = 0; d < width; ++d)
        y(b, t, d) += table.pe(t, d);
  const Tensor3 dy = gradient_of(y, g, rng);
  NoParameters none;
  return gradient_run("positional-encoding", g, to_array(x), y, dy, &dy, none);
}

LessonRun layer_norm_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::string variant = r.variant.empty() ? LayerNormLessonOptions{}.variant : r.variant;
  Rng rng(g.seed);
  if (variant == "torch")
    return hidden_state_gradients("layer-norm", r, g, rng, init_layer_norm(width),
                                  describe_layer_norm(width), width, plain);
  if (variant != "seed001") throw unknown_variant("layer-norm", variant, "torch or seed001");
  return hidden_state_gradients("layer-norm", r, g, rng, init_layer_normalization(),
                                describe_layer_normalization(), width, plain);
}

LessonRun feed_forward_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t hidden = or_default(r.d_ff, 4 * width);
  const std::string name = r.variant.empty() ? FeedForwardLessonOptions{}.variant : r.variant;
  const std::optional<FeedForwardVariant> variant = feed_forward_variant(name);
  if (!variant) throw unknown_variant("feed-forward", name, "book, relu or gelu-last");
  Rng rng(g.seed);
  return hidden_state_gradients("feed-forward", r, g, rng,
                                init_feed_forward(rng, *variant, width, hidden),
                                describe_feed_forward(*variant, width, hidden), width, plain);
}

LessonRun embeddings_gradients(const ModelRequest& r, const GradientRequest& g) {
  const EncoderConfig c = encoder_config(r);
  Rng rng(g.seed);
  Embeddings layer = init_embeddings(rng, c);
  load_weights(layer, describe_embeddings(c), g);
  const Ids ids = id_input(r, g, rng, c.vocab_size);
  const EmbeddingsSteps s = forward(layer, ids);
  const Tensor3 dy = gradient_of(s.output, g, rng);
  Embeddings grad = zeros_like(layer);
  backward(layer, ids, s, dy, grad);
  return gradient_run("embeddings", g, to_array(ids), s.output, dy, nullptr, grad);
}

LessonRun encoder_gradients(const ModelRequest& r, const GradientRequest& g) {
  const EncoderConfig c = encoder_config(r);
  const NormPlacement norm = r.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  if (!r.norm.empty() && r.norm != "pre" && r.norm != "post")
    throw Error("describe", fmt::format("'{}' is not a placement: use pre or post", r.norm))
        .about("norm");
  Rng rng(g.seed);
  Encoder layer = init_encoder(rng, c, norm, r.embeddings);
  load_weights(layer, describe_encoder(c, r.embeddings), g);
  Encoder grad = zeros_like(layer);
  if (r.embeddings) {
    const Ids ids = id_input(r, g, rng, c.vocab_size);
    const EncoderTape tape = forward_tape(layer, ids);
    const Tensor3 dy = gradient_of(tape.output(), g, rng);
    backward(layer, tape, dy, grad);
    return gradient_run("encoder", g, to_array(ids), tape.output(), dy, nullptr, grad);
  }
  const Tensor3 x = float_input(r, g, rng, c.hidden_size);
  const EncoderTape tape = forward_tape(layer, x);
  const Tensor3 dy = gradient_of(tape.output(), g, rng);
  const Tensor3 dx = backward(layer, tape, dy, grad);
  return gradient_run("encoder", g, to_array(x), tape.output(), dy, &dx, grad);
}

}  // namespace

const std::vector<LessonInfo>& catalog() {
  static const std::vector<LessonInfo> lessons = {
      {0,
       "tokens",
       "text to ids with BERT's tokenizer, ids to vectors with nn.Embedding",
       {{"--text", "fruit flies like a banana", "--add-special-tokens", "--d-model", "16"}},
       {{"embedding",
         "nn.Embedding(V, D) on ids (B, T); V is the lesson vocabulary's unless --vocab-size",
         {"d_model", "vocab_size"},
         embedding_model,
         embedding_gradients}}},
      {1,
       "dot-product",
       "self-attention with no parameters: W = softmax(X Xᵀ), Y = W X",
       {{"--seed", "3", "--batch", "2", "--seq", "7", "--d-model", "12"}},
       {}},
      {2,
       "scaling",
       "why scores are divided by sqrt(D), and what that does not fix",
       {{"--seed", "3", "--seq", "4", "--d-model", "64"}},
       {}},
      {3,
       "softmax",
       "scores to weights: exp and normalise, overflow, masks, temperature",
       {{"--seed", "4", "--mask", "causal", "--seq", "9", "--temperature", "0.5"}},
       {}},
      {4,
       "attention",
       "one head with learned queries, keys and values, masks, a heatmap",
       {{"--seed", "5", "--seq", "64", "--d-model", "96", "--mask", "causal"},
        {"--variant", "head", "--head-size", "4", "--batch", "2", "--lengths", "5,3"}},
       {{"self-attention",
         "seed 004's SelfAttention(D)",
         {"d_model"},
         self_attention_model,
         self_attention_gradients},
        {"attention-head",
         "seed 000's AttentionHead(D, hs)",
         {"d_model", "head_size"},
         attention_head_model,
         attention_head_gradients}}},
      {5,
       "multi-head",
       "several heads: narrow, wide, book and fused; which are the same; the T² cost",
       {{"--seed", "6", "--seq", "48", "--d-model", "96", "--heads", "4"},
        {"--variant", "fused", "--heads", "3"}},
       {{"multi-head",
         "MultiHeadAttention, --variant narrow|wide|book|fused (default book)",
         {"d_model", "heads", "variant"},
         multi_head_model,
         multi_head_gradients}}},
      {6,
       "positional-encoding",
       "where each token is: sinusoids or a learned table; PE[p+k] as a rotation",
       {{"--seed", "7", "--seq", "33", "--d-model", "17"}, {"--kind", "learned", "--seq", "8"}},
       {{"positional-encoding",
         "seed 001's PositionalEncoding, or --kind learned: the book's nn.Embedding(P, D) on arange(T)",
         {"d_model", "max_positions", "kind"},
         positional_encoding_model,
         positional_encoding_gradients}}},
      {7,
       "layer-norm",
       "each token to mean 0 and variance 1; seed 001's variant; pre-LN vs post-LN",
       {{"--seed", "8", "--batch", "3", "--seq", "5", "--d-model", "40"}, {"--variant", "seed001"}},
       {{"layer-norm",
         "nn.LayerNorm(D), or --variant seed001: seed 001's LayerNormalization",
         {"d_model", "variant"},
         layer_norm_model,
         layer_norm_gradients}}},
      {8,
       "feed-forward",
       "each token widened 4x, bent by GELU, narrowed back; why GELU sits in the middle",
       {{"--seed", "9", "--seq", "64", "--d-model", "96", "--d-ff", "384"},
        {"--variant", "gelu-last", "--gelu", "tanh"}},
       {{"feed-forward",
         "the book's FeedForward(D, F), --d-ff F (default 4 x D), --variant book|relu|gelu-last",
         {"d_model", "d_ff", "variant"},
         feed_forward_model,
         feed_forward_gradients}}},
      {9,
       "encoder",
       "the whole encoder: embeddings, then N layers of attention and feed-forward",
       {{"--seed", "10", "--no-embeddings", "--batch", "2", "--seq", "128", "--max-positions",
         "128", "--d-model", "192", "--heads", "4", "--d-ff", "768", "--layers", "2"},
        {"--seed", "11", "--text", "time flies like an arrow", "--add-special-tokens", "--norm",
         "post"}},
       {{"embeddings",
         "the book's Embeddings: token and position tables, LayerNorm, dropout (--config)",
         {"config", "d_model", "max_positions", "vocab_size"},
         embeddings_model,
         embeddings_gradients},
        {"encoder",
         "the book's TransformerEncoder (--config, --layers, --no-embeddings, --norm)",
         {"config", "d_model", "heads", "d_ff", "layers", "max_positions", "vocab_size",
          "no_embeddings", "norm"},
         encoder_model,
         encoder_gradients}}},
      {10,
       "backward",
       "backpropagation through one head, checked; gradients of scaling, LN and residuals",
       {{"--seed", "12", "--seq", "7", "--d-model", "12"}},
       {}},
      {11,
       "train",
       "training a tiny encoder: cross-entropy, AdamW, a loss curve, a trained head",
       {{"--task", "reverse", "--steps", "300"},
        {"--task", "masked", "--tokens", "16", "--steps", "200"},
        {"--model", "transformer", "--task", "number-words", "--steps", "60"}},
       {}},
      {12,
       "cross-attention",
       "queries from the decoder, keys and values from the encoder: T x S weights, padding",
       {{"--seed", "3", "--batch", "2", "--source-seq", "6", "--source-lengths", "6,3"},
        {"--seq", "4", "--source-seq", "9", "--d-model", "8", "--heads", "4", "--fill", "torch",
         "--source-lengths", "9"},
        {"--checkpoint", "transformer-reverse", "--text", "hgfedcba"}},
       {}},
      {13,
       "decoder",
       "the causal mask and teacher forcing, a decoder block, log_softmax; seed 001's bugs",
       {{"--seed", "4", "--batch", "2", "--lengths", "5,3"},
        {"--seq", "7", "--d-model", "12", "--heads", "3", "--d-ff", "20", "--source-seq", "9"}},
       {{"decoder-block",
         "seed 001's DecoderBlock(x, memory, source mask, causal target mask): masked "
         "self-attention, cross-attention, feed-forward",
         {"d_model", "heads", "d_ff", "max_positions", "norm"},
         decoder_block_model,
         nullptr},
        {"decoder",
         "seed 001's Decoder(x, memory, source mask, causal target mask): --layers "
         "DecoderBlocks and a LayerNormalization",
         {"d_model", "heads", "d_ff", "layers", "max_positions", "norm"},
         decoder_model,
         nullptr},
        {"transformer",
         "seed 001's Transformer(source, target, source mask, causal target mask), bugs "
         "fixed: encoder, decoder, projection",
         {"d_model", "heads", "d_ff", "layers", "vocab_size", "max_positions", "norm"},
         transformer_model,
         nullptr}}},
      {14,
       "generate",
       "decoding a trained encoder-decoder: greedy and sampled, top-k, top-p, the KV cache",
       {{"--text", "hgfedcba"},
        {"--text", "cabbage", "--temperature", "1.5", "--top-k", "3", "--seed", "4"},
        {"--text", "dad", "--top-p", "0.5", "--no-cache"}},
       {}},
  };
  return lessons;
}

const LessonInfo& lesson_info(std::string_view name) {
  for (const LessonInfo& lesson : catalog())
    if (lesson.name == name) return lesson;
  throw Error("lesson_info", fmt::format("no lesson '{}'", name));
}

}  // namespace attn::lessons
