// The catalog: one entry per lesson, with the PyTorch modules `attn summary` describes for it.
// Each model takes the lesson's own defaults, so that a summary shows the module the lesson runs;
// the models are in the lessons' folders (<stem>_models.hpp).
#include "catalog.hpp"

#include <fmt/format.h>

#include "00-tokens/tokens_models.hpp"
#include "04-attention/attention_models.hpp"
#include "05-multi-head/multi_head_models.hpp"
#include "06-positional-encoding/positional_encoding_models.hpp"
#include "07-layer-norm/layer_norm_models.hpp"
#include "08-feed-forward/feed_forward_models.hpp"
#include "09-encoder/encoder_models.hpp"
#include "13-decoder/decoder_models.hpp"
#include "base/error.hpp"

namespace attn::lessons {

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
  throw Error(ErrorKind::internal, "lesson_info", fmt::format("no lesson '{}'", name));
}

}  // namespace attn::lessons
