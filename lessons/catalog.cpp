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
#include "attention.hpp"
#include "embedding.hpp"
#include "encoder.hpp"
#include "error.hpp"
#include "feed_forward.hpp"
#include "layer_norm.hpp"
#include "multi_head.hpp"
#include "positional_encoding.hpp"
#include "shipped.hpp"

namespace attn::lessons {

namespace {

constexpr std::size_t kInt64 = 8, kFloat32 = 4;

// A size of the request, or the lesson's default when it is 0.
std::size_t or_default(std::size_t given, std::size_t lesson_default) {
  return given != 0 ? given : lesson_default;
}

Shape hidden_states(const ModelRequest& r, std::size_t width) {
  return {r.batch, r.seq, width};
}

Error unknown_variant(std::string_view model, const std::string& variant,
                      std::string_view choices) {
  return Error("describe",
               fmt::format("'{}' is not a variant of {}: use {}", variant, model, choices))
      .about("variant");
}

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
         embedding_model}}},
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
       {{"self-attention", "seed 004's SelfAttention(D)", {"d_model"}, self_attention_model},
        {"attention-head",
         "seed 000's AttentionHead(D, hs)",
         {"d_model", "head_size"},
         attention_head_model}}},
      {5,
       "multi-head",
       "several heads: narrow, wide, book and fused; which are the same; the T² cost",
       {{"--seed", "6", "--seq", "48", "--d-model", "96", "--heads", "4"},
        {"--variant", "fused", "--heads", "3"}},
       {{"multi-head",
         "MultiHeadAttention, --variant narrow|wide|book|fused (default book)",
         {"d_model", "heads", "variant"},
         multi_head_model}}},
      {6,
       "positional-encoding",
       "where each token is: sinusoids or a learned table; PE[p+k] as a rotation",
       {{"--seed", "7", "--seq", "33", "--d-model", "17"}, {"--kind", "learned", "--seq", "8"}},
       {{"positional-encoding",
         "seed 001's PositionalEncoding, or --kind learned: the book's nn.Embedding(P, D) on arange(T)",
         {"d_model", "max_positions", "kind"},
         positional_encoding_model}}},
      {7,
       "layer-norm",
       "each token to mean 0 and variance 1; seed 001's variant; pre-LN vs post-LN",
       {{"--seed", "8", "--batch", "3", "--seq", "5", "--d-model", "40"}, {"--variant", "seed001"}},
       {{"layer-norm",
         "nn.LayerNorm(D), or --variant seed001: seed 001's LayerNormalization",
         {"d_model", "variant"},
         layer_norm_model}}},
      {8,
       "feed-forward",
       "each token widened 4x, bent by GELU, narrowed back; why GELU sits in the middle",
       {{"--seed", "9", "--seq", "64", "--d-model", "96", "--d-ff", "384"},
        {"--variant", "gelu-last", "--gelu", "tanh"}},
       {{"feed-forward",
         "the book's FeedForward(D, F), --d-ff F (default 4 x D), --variant book|relu|gelu-last",
         {"d_model", "d_ff", "variant"},
         feed_forward_model}}},
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
         embeddings_model},
        {"encoder",
         "the book's TransformerEncoder (--config, --layers, --no-embeddings, --norm)",
         {"config", "d_model", "heads", "d_ff", "layers", "max_positions", "vocab_size",
          "no_embeddings", "norm"},
         encoder_model}}},
      {10,
       "backward",
       "backpropagation through one head, checked; gradients of scaling, LN and residuals",
       {{"--seed", "12", "--seq", "7", "--d-model", "12"}},
       {}},
      {11,
       "train",
       "training a tiny encoder: cross-entropy, AdamW, a loss curve, a trained head",
       {{"--task", "reverse", "--steps", "300"},
        {"--task", "masked", "--tokens", "16", "--steps", "200"}},
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
