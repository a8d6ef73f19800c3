// Lesson 09's exercise. Fill in each function where it says TODO, then run
//
//     attn check encoder        (the tests, with what was expected and what came out)
//     attn hint encoder         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(0) is its first size, x(b, t, d) an element, and
// Tensor3({B, T, D}) a new tensor of that shape. The sublayers are earlier lessons, already in the
// core: attn::forward(norm, x).output (LayerNorm), attn::forward(attention, x, nullptr).output
// (multi-head, no mask) and attn::forward(feed_forward, x).output. Write attn:: in front of them.
#include "encoder_exercise.hpp"

#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

namespace attn::exercise {

EmbeddingsSteps forward(const Embeddings& embeddings, const Ids& ids) {
  // TODO(lesson 09): the book's Embeddings, every step kept in EmbeddingsSteps: each id's row of
  // the token table, the position table's rows for positions 0..T-1, their sum, and the sum through
  // layer_norm (the core's, lesson 07). ids (B,T) -> token (B,T,D), position (1,T,D), sum (B,T,D),
  // output (B,T,D). Throws std::invalid_argument when T is more than the P positions or an id is
  // outside 0..V-1. PyTorch: self.layer_norm(self.token_embeddings(ids) +
  // self.position_embeddings(torch.arange(T).unsqueeze(0))), dropout being the identity
  // BEGIN SOLUTION
  const Tensor2& token_table = embeddings.token_embeddings.weight;        // (V,D)
  const Tensor2& position_table = embeddings.position_embeddings.weight;  // (P,D)
  const std::size_t batch = ids.shape(0), tokens = ids.shape(1), width = token_table.shape(1);
  if (tokens > position_table.shape(0)) {
    throw std::invalid_argument(fmt::format("Embeddings: {} tokens but only {} positions", tokens,
                                            position_table.shape(0)));
  }
  EmbeddingsSteps steps;
  steps.token = Tensor3({batch, tokens, width});
  steps.position = Tensor3({1, tokens, width});
  steps.sum = Tensor3({batch, tokens, width});
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t d = 0; d < width; ++d)
      steps.position(0, t, d) = position_table(t, d);
  }
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t t = 0; t < tokens; ++t) {
      const std::int64_t id = ids(b, t);
      if (id < 0 || static_cast<std::size_t>(id) >= token_table.shape(0)) {
        throw std::invalid_argument(fmt::format("Embeddings: id {} at ({}, {}) is outside 0..{}",
                                                id, b, t, token_table.shape(0) - 1));
      }
      for (std::size_t d = 0; d < width; ++d) {
        steps.token(b, t, d) = token_table(static_cast<std::size_t>(id), d);
        steps.sum(b, t, d) = steps.token(b, t, d) + steps.position(0, t, d);
      }
    }
  }
  steps.output = attn::forward(embeddings.layer_norm, steps.sum).output;  // (B,T,D), eps 1e-12
  return steps;
  // END SOLUTION
}

EncoderLayerSteps forward(const EncoderLayer& layer, const Tensor3& x) {
  // TODO(lesson 09): one TransformerEncoderLayer, pre-LN or post-LN as layer.placement says, every
  // field of EncoderLayerSteps filled as its comment in core/encoder.hpp says. x (B,T,D) -> every
  // step (B,T,D). Pre-LN: each sublayer reads a normalised copy and x is only added to; post-LN:
  // each sublayer reads the stream, and the residual sum is normalised. The sublayers are the
  // core's (see the top of this file) and check the shapes themselves (they throw attn::Error).
  // PyTorch, pre-LN:  x = x + self.attention(self.layer_norm_1(x))
  //                   x = x + self.feed_forward(self.layer_norm_2(x))
  //          post-LN: x = self.layer_norm_1(x + self.attention(x))
  //                   x = self.layer_norm_2(x + self.feed_forward(x))
  // BEGIN SOLUTION
  const auto add = [](const Tensor3& a, const Tensor3& b) {  // (B,T,D) + (B,T,D)
    Tensor3 sum(a.shape());
    for (std::size_t i = 0; i < a.size(); ++i)
      sum.data()[i] = a.data()[i] + b.data()[i];
    return sum;
  };
  EncoderLayerSteps steps;
  steps.input = x;
  if (layer.placement == NormPlacement::pre) {  // every step (B,T,D)
    steps.norm_1 = attn::forward(layer.layer_norm_1, x).output;
    steps.attention = attn::forward(layer.attention, steps.norm_1, nullptr).output;
    steps.residual_1 = add(x, steps.attention);  // x itself, not norm_1
    steps.norm_2 = attn::forward(layer.layer_norm_2, steps.residual_1).output;
    steps.feed_forward = attn::forward(layer.feed_forward, steps.norm_2).output;
    steps.output = add(steps.residual_1, steps.feed_forward);
  } else {
    steps.attention = attn::forward(layer.attention, x, nullptr).output;
    steps.norm_1 = attn::forward(layer.layer_norm_1, add(x, steps.attention)).output;
    steps.residual_1 = steps.norm_1;  // the normalised sum is the stream now
    steps.feed_forward = attn::forward(layer.feed_forward, steps.residual_1).output;
    steps.norm_2 =
        attn::forward(layer.layer_norm_2, add(steps.residual_1, steps.feed_forward)).output;
    steps.output = steps.norm_2;
  }
  return steps;
  // END SOLUTION
}

}  // namespace attn::exercise
