// Lesson 04's exercise. Fill in each function where it says TODO, then run
//
//     attn check attention        (the tests, with what was expected and what came out)
//     attn hint attention         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(0) is its first size, x(b, t, s) an element, and
// Tensor3(shape) a new tensor of that shape. attn::softmax(scores) is lesson 03's, from the core.
#include "attention_exercise.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "softmax.hpp"

namespace attn::exercise {

AttentionSteps scaled_dot_product_attention(const Tensor3& queries, const Tensor3& keys,
                                            const Tensor3& values, const Tensor3* mask) {
  // TODO(lesson 04): scaled dot-product attention, softmax(Q Kᵀ / sqrt(hs) + mask) V, with every
  // member of AttentionSteps filled (queries, keys and values are the inputs as given).
  // queries (B,T,hs), keys (B,S,hs), values (B,S,hv), mask (B,T,S) additive or null -> scores,
  // scaled_scores and weights (B,T,S), output (B,T,hv). Throws std::invalid_argument when the keys
  // or values do not fit the queries (B, hs) or each other (S), or the mask is not (B,T,S).
  // PyTorch: scores = torch.bmm(q, k.transpose(1, 2)); scaled = scores / math.sqrt(hs) + mask;
  // weights = torch.softmax(scaled, dim=-1); output = torch.bmm(weights, v)
  // BEGIN SOLUTION
  const std::size_t batch = queries.shape(0), tokens = queries.shape(1), head = queries.shape(2);
  const std::size_t sources = keys.shape(1), value_size = values.shape(2);
  if (keys.shape(0) != batch || keys.shape(2) != head || values.shape(0) != batch ||
      values.shape(1) != sources) {
    throw std::invalid_argument(fmt::format(
        "scaled_dot_product_attention: queries {}, keys {} and values {} do not fit: expected (B,T,hs), "
        "(B,S,hs), (B,S,hv)",
        shape_string_of(queries), shape_string_of(keys), shape_string_of(values)));
  }
  if (mask != nullptr &&
      (mask->shape(0) != batch || mask->shape(1) != tokens || mask->shape(2) != sources)) {
    throw std::invalid_argument(
        fmt::format("scaled_dot_product_attention: mask {} does not fit scores ({}, {}, {})",
                    shape_string_of(*mask), batch, tokens, sources));
  }
  AttentionSteps steps;
  steps.queries = queries;
  steps.keys = keys;
  steps.values = values;
  steps.scores = Tensor3({batch, tokens, sources});         // (B,T,hs) @ (B,hs,S) -> (B,T,S)
  steps.scaled_scores = Tensor3({batch, tokens, sources});  // (B,T,S)
  const float root = std::sqrt(static_cast<float>(head));
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t t = 0; t < tokens; ++t) {
      for (std::size_t s = 0; s < sources; ++s) {
        float dot = 0.0f;
        for (std::size_t i = 0; i < head; ++i)
          dot += queries(b, t, i) * keys(b, s, i);
        steps.scores(b, t, s) = dot;
        steps.scaled_scores(b, t, s) = dot / root + (mask != nullptr ? (*mask)(b, t, s) : 0.0f);
      }
    }
  }
  steps.weights = attn::softmax(steps.scaled_scores);   // (B,T,S)
  steps.output = Tensor3({batch, tokens, value_size});  // (B,T,S) @ (B,S,hv) -> (B,T,hv)
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t t = 0; t < tokens; ++t) {
      for (std::size_t j = 0; j < value_size; ++j) {
        float sum = 0.0f;
        for (std::size_t s = 0; s < sources; ++s)
          sum += steps.weights(b, t, s) * values(b, s, j);
        steps.output(b, t, j) = sum;
      }
    }
  }
  return steps;
  // END SOLUTION
}

Tensor3 attention_mask(std::size_t batch, std::size_t tokens, bool causal,
                       const std::vector<std::size_t>& lengths) {
  // TODO(lesson 04): the additive mask of a batch: -inf where query i may not look at key j, that
  // is j > i when causal, and j >= lengths[b] (a padding key) when lengths is not empty; 0
  // everywhere else. B = batch, T = tokens, lengths empty or one per sequence -> (B,T,T). Throws
  // std::invalid_argument when lengths is neither empty nor B long, or a length is 0 or past T.
  // PyTorch: nn.Transformer.generate_square_subsequent_mask(T) when causal, with -inf also where
  // nn.MultiheadAttention's key_padding_mask (B,T) would be True
  // BEGIN SOLUTION
  if (!lengths.empty() && lengths.size() != batch) {
    throw std::invalid_argument(
        fmt::format("attention_mask: {} lengths for a batch of {}: give one length per sequence",
                    lengths.size(), batch));
  }
  Tensor3 mask({batch, tokens, tokens});
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t length = lengths.empty() ? tokens : lengths[b];
    if (length == 0 || length > tokens) {
      throw std::invalid_argument(fmt::format(
          "attention_mask: length {} of sequence {} is outside 1..{} (T)", length, b, tokens));
    }
    for (std::size_t i = 0; i < tokens; ++i) {
      for (std::size_t j = 0; j < tokens; ++j) {
        const bool hidden = (causal && j > i) || j >= length;
        mask(b, i, j) = hidden ? -std::numeric_limits<float>::infinity() : 0.0f;
      }
    }
  }
  return mask;
  // END SOLUTION
}

AttentionSteps forward(const AttentionHead& head, const Tensor3& x, const Tensor3* mask) {
  // TODO(lesson 04): one attention head on x: Q, K and V are x through head.q, head.k and head.v
  // (nn.Linear, x Wᵀ + b: weight (hs,D), bias (hs) when has_bias), then the attention above on them
  // with the mask. x (B,T,D), mask (B,T,T) or null -> AttentionSteps with Q, K, V (B,T,hs) and
  // output (B,T,hs). Throws std::invalid_argument when a projection's weight is not D wide.
  // PyTorch (seed 000's AttentionHead): scaled_dot_product_attention(self.q(x), self.k(x),
  // self.v(x)), with the mask added to the scaled scores
  // BEGIN SOLUTION
  const auto project = [&x](const Linear& layer) {
    if (layer.weight.shape(1) != x.shape(2)) {
      throw std::invalid_argument(
          fmt::format("forward: x {} does not fit a projection of weight {}", shape_string_of(x),
                      shape_string_of(layer.weight)));
    }
    Tensor3 out({x.shape(0), x.shape(1), layer.weight.shape(0)});  // (B,T,D) @ (D,hs) -> (B,T,hs)
    for (std::size_t b = 0; b < x.shape(0); ++b) {
      for (std::size_t t = 0; t < x.shape(1); ++t) {
        for (std::size_t o = 0; o < layer.weight.shape(0); ++o) {
          float sum = layer.has_bias ? layer.bias(o) : 0.0f;
          for (std::size_t d = 0; d < x.shape(2); ++d)
            sum += x(b, t, d) * layer.weight(o, d);
          out(b, t, o) = sum;
        }
      }
    }
    return out;
  };
  return scaled_dot_product_attention(project(head.q), project(head.k), project(head.v), mask);
  // END SOLUTION
}

}  // namespace attn::exercise
