// Lesson 12's exercise. Fill in each function where it says TODO, then run
//
//     attn check cross-attention        (the tests, with what was expected and what came out)
//     attn hint cross-attention         (a hint, one stage at a time)
//
// Tensor4 is xt::xtensor<float, 4>: y.shape(3) is its last size, y(b, h, t, i) an element, and
// Tensor4({B, H, T, hs}) a new tensor of that shape; Ids is the same for int64 ids. From the core:
// attn::forward(linear, x) applies an nn.Linear to x (B,T,in) -> (B,T,out), and
// attn::softmax(scores) is lesson 03's softmax over the last axis (of a Tensor4 too).
#include "cross_attention_exercise.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "linear.hpp"
#include "softmax.hpp"

namespace attn::exercise {

Tensor2 source_mask(const Ids& source, std::int64_t pad) {
  // TODO(lesson 12): which source tokens a query may read: every real token, no padding.
  // source (B,S) -> keep (B,S) of 1s and 0s. The check: a source without padding keeps all S.
  // PyTorch: the seed's src_mask as 0s and 1s, without its two axes of size 1
  // BEGIN SOLUTION
  Tensor2 keep({source.shape(0), source.shape(1)});
  for (std::size_t i = 0; i < source.size(); ++i)
    keep.data()[i] = source.data()[i] == pad ? 0.0f : 1.0f;
  return keep;
  // END SOLUTION
}

MultiHeadSteps cross_attention(const FusedMultiHead& layer, const Tensor3& x, const Tensor3& memory,
                               const Tensor2& keep) {
  // TODO(lesson 12): lesson 05's fused multi-head attention with two inputs: the queries come
  // from x, the keys and values from the memory, so each head's scores are T x S, not T x T. A
  // padded source token must get weight exactly 0 in every head and every row; the seed does it
  // by replacing its score with -1e9 before the softmax. x (B,T,D), memory (B,S,D), keep (B,S)
  // -> every field of MultiHeadSteps (the header gives their shapes). Throws
  // std::invalid_argument for inputs that do not fit (see the header). The checks: each row of
  // weights sums to 1 over the real keys, and the output is (B,T,D) whatever S is.
  // PyTorch: MultiHeadAttention.forward(x, memory, memory, keep[:, None, None, :]) of seed 001
  // BEGIN SOLUTION
  const std::size_t width = layer.W_O.weight.shape(0), heads = layer.heads;
  const std::size_t batch = x.shape(0), tokens = x.shape(1), sources = memory.shape(1);
  if (x.shape(2) != width || memory.shape(2) != width || memory.shape(0) != batch) {
    throw std::invalid_argument(
        fmt::format("cross_attention: x {} and memory {} must be (B,T,{}) and (B,S,{})",
                    shape_string_of(x), shape_string_of(memory), width, width));
  }
  if (keep.shape(0) != batch || keep.shape(1) != sources) {
    throw std::invalid_argument(fmt::format("cross_attention: keep {} is not (B,S) = ({}, {})",
                                            shape_string_of(keep), batch, sources));
  }
  const std::size_t size = width / heads;
  const auto split = [&](const Tensor3& projected) {  // (B,N,H*hs) -> (B,H,N,hs)
    const std::size_t rows = projected.shape(1);
    Tensor4 out({batch, heads, rows, size});
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t n = 0; n < rows; ++n)
          for (std::size_t i = 0; i < size; ++i)
            out(b, h, n, i) = projected(b, n, h * size + i);
    return out;
  };
  MultiHeadSteps steps;
  steps.queries = split(attn::forward(layer.W_Q, x));    // (B,H,T,hs)
  steps.keys = split(attn::forward(layer.W_K, memory));  // (B,H,S,hs)
  steps.values = split(attn::forward(layer.W_V, memory));
  const float root = std::sqrt(static_cast<float>(size));
  steps.scores = Tensor4({batch, heads, tokens, sources});  // (B,H,T,hs) @ (B,H,hs,S) -> (B,H,T,S)
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t s = 0; s < sources; ++s) {
          float dot = 0.0f;
          for (std::size_t i = 0; i < size; ++i)
            dot += steps.queries(b, h, t, i) * steps.keys(b, h, s, i);
          steps.scores(b, h, t, s) = keep(b, s) == 0.0f ? -1e9f : dot / root;
        }
  steps.weights = attn::softmax(steps.scores);  // (B,H,T,S)
  steps.concatenated = Tensor3({batch, tokens, heads * size});
  for (std::size_t b = 0; b < batch; ++b)  // (B,H,T,S) @ (B,H,S,hs) -> (B,T,H*hs)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t i = 0; i < size; ++i) {
          float sum = 0.0f;
          for (std::size_t s = 0; s < sources; ++s)
            sum += steps.weights(b, h, t, s) * steps.values(b, h, s, i);
          steps.concatenated(b, t, h * size + i) = sum;
        }
  steps.output = attn::forward(layer.W_O, steps.concatenated);  // (B,T,D)
  return steps;
  // END SOLUTION
}

}  // namespace attn::exercise
