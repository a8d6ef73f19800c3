// Lesson 05's exercise. Fill in each function where it says TODO, then run
//
//     attn check multi-head        (the tests, with what was expected and what came out)
//     attn hint multi-head         (a hint, one stage at a time)
//
// Tensor4 is xt::xtensor<float, 4>: y.shape(3) is its last size, y(b, h, t, i) an element, and
// Tensor4(shape) a new tensor of that shape. From the core: attn::forward(linear, x) applies an
// nn.Linear to x (B,T,in) -> (B,T,out), and attn::softmax(scores) is lesson 03's.
#include "multi_head_exercise.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "linear.hpp"
#include "softmax.hpp"

namespace attn::exercise {

std::size_t head_size(MultiHeadVariant variant, std::size_t d_model, std::size_t heads) {
  // TODO(lesson 05): the head size hs of a variant: D for wide (each head as wide as the model),
  // D / H for narrow, book and fused (the width cut into H heads). Throws std::invalid_argument
  // when D or H is 0, or, for all but wide, when H does not divide D.
  // PyTorch (seed 001): assert d_model % h == 0; self.d_k = d_model // h
  // BEGIN SOLUTION
  if (d_model == 0 || heads == 0) {
    throw std::invalid_argument(
        fmt::format("head_size: d_model={} and heads={} must both be at least 1", d_model, heads));
  }
  if (variant == MultiHeadVariant::wide) return d_model;
  if (d_model % heads != 0) {
    throw std::invalid_argument(
        fmt::format("head_size: d_model={} is not divisible by heads={}: the {} variant "
                    "splits D into H heads of D/H",
                    d_model, heads, variant_name(variant)));
  }
  return d_model / heads;
  // END SOLUTION
}

Tensor4 split_heads(const Tensor3& x, std::size_t heads) {
  // TODO(lesson 05): cut each token's H*hs numbers into H heads of hs, head h taking the columns
  // h*hs .. h*hs + hs - 1, with the head axis before the tokens. x (B,T,H*hs) -> (B,H,T,hs).
  // Throws std::invalid_argument when heads is 0 or does not divide x's last size.
  // PyTorch: x.view(B, T, H, hs).transpose(1, 2)
  // BEGIN SOLUTION
  if (heads == 0 || x.shape(2) % heads != 0) {
    throw std::invalid_argument(fmt::format(
        "split_heads: x {} cannot be cut into {} heads of equal size", shape_string_of(x), heads));
  }
  const std::size_t batch = x.shape(0), tokens = x.shape(1), size = x.shape(2) / heads;
  Tensor4 out({batch, heads, tokens, size});  // (B,T,H*hs) -> (B,H,T,hs)
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t t = 0; t < tokens; ++t) {
        for (std::size_t i = 0; i < size; ++i)
          out(b, h, t, i) = x(b, t, h * size + i);
      }
    }
  }
  return out;
  // END SOLUTION
}

Tensor3 merge_heads(const Tensor4& y) {
  // TODO(lesson 05): the inverse of split_heads: each token's heads side by side again, head h in
  // the columns h*hs .. h*hs + hs - 1. y (B,H,T,hs) -> (B,T,H*hs).
  // PyTorch: y.transpose(1, 2).reshape(B, T, H * hs)
  // BEGIN SOLUTION
  const std::size_t batch = y.shape(0), heads = y.shape(1), tokens = y.shape(2), size = y.shape(3);
  Tensor3 out({batch, tokens, heads * size});  // (B,H,T,hs) -> (B,T,H*hs)
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t t = 0; t < tokens; ++t) {
        for (std::size_t i = 0; i < size; ++i)
          out(b, t, h * size + i) = y(b, h, t, i);
      }
    }
  }
  return out;
  // END SOLUTION
}

void attend(MultiHeadSteps& steps, const Tensor3* mask, const Linear& output) {
  // TODO(lesson 05): what every form shares once steps.queries, keys and values (B,H,T,hs) are
  // filled: each head attends on its own with softmax(Q Kᵀ / sqrt(hs) + mask), the heads' outputs
  // go side by side and through `output`, the form's output Linear. Fills steps.scores and
  // steps.weights (B,H,T,T), steps.concatenated (B,T,H*hs) and steps.output (B,T,D). The mask
  // (B,T,T), additive or null, is the same for every head. PyTorch: weights = torch.softmax(
  // Q @ K.transpose(-2, -1) / math.sqrt(hs) + mask[:, None], dim=-1);
  // output = W_O((weights @ V).transpose(1, 2).reshape(B, T, H * hs))
  // BEGIN SOLUTION
  const std::size_t batch = steps.keys.shape(0), heads = steps.keys.shape(1),
                    tokens = steps.keys.shape(2), size = steps.keys.shape(3);
  if (mask != nullptr &&
      (mask->shape(0) != batch || mask->shape(1) != tokens || mask->shape(2) != tokens)) {
    throw std::invalid_argument(fmt::format("attend: mask {} does not fit ({}, {}, {})",
                                            shape_string_of(*mask), batch, tokens, tokens));
  }
  const float root = std::sqrt(static_cast<float>(size));
  steps.scores = Tensor4({batch, heads, tokens, tokens});  // (B,H,T,hs) @ (B,H,hs,T) -> (B,H,T,T)
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t t = 0; t < tokens; ++t) {
        for (std::size_t u = 0; u < tokens; ++u) {
          float dot = 0.0f;
          for (std::size_t i = 0; i < size; ++i)
            dot += steps.queries(b, h, t, i) * steps.keys(b, h, u, i);
          steps.scores(b, h, t, u) = dot / root + (mask != nullptr ? (*mask)(b, t, u) : 0.0f);
        }
      }
    }
  }
  steps.weights = attn::softmax(steps.scores);     // (B,H,T,T)
  Tensor4 per_head({batch, heads, tokens, size});  // (B,H,T,T) @ (B,H,T,hs) -> (B,H,T,hs)
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t t = 0; t < tokens; ++t) {
        for (std::size_t i = 0; i < size; ++i) {
          float sum = 0.0f;
          for (std::size_t u = 0; u < tokens; ++u)
            sum += steps.weights(b, h, t, u) * steps.values(b, h, u, i);
          per_head(b, h, t, i) = sum;
        }
      }
    }
  }
  steps.concatenated = merge_heads(per_head);                // (B,T,H*hs)
  steps.output = attn::forward(output, steps.concatenated);  // (B,T,H*hs) -> (B,T,D)
  // END SOLUTION
}

MultiHeadSteps forward(const Seed004MultiHead& layer, const Tensor3& x, const Tensor3* mask) {
  // TODO(lesson 05): seed 004's class (narrow and wide): Q, K, V are x's projections by
  // toqueries, tokeys and tovalues, each cut into layer.heads heads; then attend() with
  // unifyheads. Throws std::invalid_argument when x is not D wide (D = unifyheads' output size)
  // or the mask is not (B,T,T). PyTorch: queries = self.toqueries(x).view(B, T, H, hs)
  // .transpose(1, 2)
  // BEGIN SOLUTION
  if (x.shape(2) != layer.unifyheads.weight.shape(0)) {
    throw std::invalid_argument(fmt::format("forward: x {} does not fit a layer of width D = {}",
                                            shape_string_of(x), layer.unifyheads.weight.shape(0)));
  }
  MultiHeadSteps steps;
  steps.queries = split_heads(attn::forward(layer.toqueries, x), layer.heads);  // (B,H,T,hs)
  steps.keys = split_heads(attn::forward(layer.tokeys, x), layer.heads);
  steps.values = split_heads(attn::forward(layer.tovalues, x), layer.heads);
  attend(steps, mask, layer.unifyheads);
  return steps;
  // END SOLUTION
}

MultiHeadSteps forward(const FusedMultiHead& layer, const Tensor3& x, const Tensor3* mask) {
  // TODO(lesson 05): seed 001's class: Q, K, V are x's projections by W_Q, W_K and W_V, each cut
  // into layer.heads heads; then attend() with W_O. Throws std::invalid_argument when x is not D
  // wide or the mask is not (B,T,T). PyTorch: query = self.W_Q(q).view(B, -1, self.h, self.d_k)
  // .transpose(1, 2)
  // BEGIN SOLUTION
  if (x.shape(2) != layer.W_O.weight.shape(0)) {
    throw std::invalid_argument(fmt::format("forward: x {} does not fit a layer of width D = {}",
                                            shape_string_of(x), layer.W_O.weight.shape(0)));
  }
  MultiHeadSteps steps;
  steps.queries = split_heads(attn::forward(layer.W_Q, x), layer.heads);  // (B,H,T,hs)
  steps.keys = split_heads(attn::forward(layer.W_K, x), layer.heads);
  steps.values = split_heads(attn::forward(layer.W_V, x), layer.heads);
  attend(steps, mask, layer.W_O);
  return steps;
  // END SOLUTION
}

MultiHeadSteps forward(const BookMultiHead& layer, const Tensor3& x, const Tensor3* mask) {
  // TODO(lesson 05): the book's class: head h's own q, k, v Linears give slice h of Q, K, V
  // (B,H,T,hs); then attend() with output_linear. Throws std::invalid_argument when the layer has
  // no heads, x is not D wide (D = output_linear's output size) or the mask is not (B,T,T).
  // PyTorch: torch.cat([h(x) for h in self.heads], dim=-1), each head h(x) attending on its own
  // BEGIN SOLUTION
  if (layer.heads.empty()) throw std::invalid_argument("forward: the layer has no heads");
  if (x.shape(2) != layer.output_linear.weight.shape(0)) {
    throw std::invalid_argument(fmt::format("forward: x {} does not fit a layer of width D = {}",
                                            shape_string_of(x),
                                            layer.output_linear.weight.shape(0)));
  }
  const std::size_t batch = x.shape(0), tokens = x.shape(1), heads = layer.heads.size();
  const std::size_t size = layer.heads.front().q.weight.shape(0);
  MultiHeadSteps steps;
  steps.queries = Tensor4({batch, heads, tokens, size});
  steps.keys = steps.values = steps.queries;
  for (std::size_t h = 0; h < heads; ++h) {
    const AttentionHead& head = layer.heads[h];
    const Tensor3 q = attn::forward(head.q, x), k = attn::forward(head.k, x),
                  v = attn::forward(head.v, x);
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t t = 0; t < tokens; ++t) {
        for (std::size_t i = 0; i < size; ++i) {
          steps.queries(b, h, t, i) = q(b, t, i);
          steps.keys(b, h, t, i) = k(b, t, i);
          steps.values(b, h, t, i) = v(b, t, i);
        }
      }
    }
  }
  attend(steps, mask, layer.output_linear);
  return steps;
  // END SOLUTION
}

}  // namespace attn::exercise
