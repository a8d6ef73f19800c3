// Lesson 15's exercise. Fill in each function where it says TODO, then run
//
//     attn check gpt        (the tests, with what was expected and what came out)
//     attn hint gpt         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(0) is its first size, x(b, t, d) an element, and
// Tensor3({B, T, D}) a new tensor of that shape (Tensor4 the same with four). The LayerNorm is
// lesson 07's, already in the core: attn::forward(norm, x).output (write attn:: in front).
#include "gpt_exercise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace attn::exercise {

Tensor3 conv1d(const Conv1D& layer, const Tensor3& x) {
  // TODO(lesson 15): transformers' Conv1D, a Linear whose weight is stored (in, out):
  // x (B,T,in) -> y (B,T,out), y(b, t, o) = bias(o) + the sum over i of x(b, t, i) * weight(i, o).
  // Throws std::invalid_argument when the weight's rows are not x's width or the bias is not as
  // long as its columns.
  // PyTorch: torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(B, T, out)
  // BEGIN SOLUTION
  const std::size_t in = layer.weight.shape(0), out = layer.weight.shape(1);
  if (x.shape(2) != in || layer.bias.shape(0) != out) {
    throw std::invalid_argument(fmt::format("conv1d: weight {} and bias {} do not fit x {}",
                                            shape_string_of(layer.weight),
                                            shape_string_of(layer.bias), shape_string_of(x)));
  }
  Tensor3 y({x.shape(0), x.shape(1), out});
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t t = 0; t < x.shape(1); ++t)
      for (std::size_t o = 0; o < out; ++o) {
        float sum = layer.bias(o);
        for (std::size_t i = 0; i < in; ++i)
          sum += x(b, t, i) * layer.weight(i, o);
        y(b, t, o) = sum;
      }
  return y;
  // END SOLUTION
}

CausalAttentionSteps causal_self_attention(const GptAttention& attention, const Tensor3& x) {
  // TODO(lesson 15): GPT-2's causal self-attention, every field of CausalAttentionSteps as the
  // header says. c_attn(x) (B,T,3D) holds q, k and v side by side; split each into H heads of hs
  // columns -> (B,H,T,hs). Scores Q Kᵀ / √hs (B,H,T,T); query t may read keys 0 to t only, so every
  // later key's score is -inf (std::numeric_limits<float>::infinity()) and its weight exactly 0.
  // Softmax over the keys (subtract the row's largest score first), weights V per head, the heads
  // back side by side (B,T,D), then c_proj. Throws std::invalid_argument when H does not divide
  // D, or c_attn is not (D, 3D) or c_proj not (D, D). The checks: the weights are zero above the
  // diagonal, and changing a later token moves no earlier row.
  // PyTorch: q, k, v = self.c_attn(x).split(D, dim=2); heads with .view(B,T,H,hs).transpose(1,2);
  // att = (q @ k.transpose(-2,-1)) / math.sqrt(hs); att.masked_fill(tril == 0, float('-inf'));
  // softmax(att, dim=-1) @ v; .transpose(1,2).reshape(B,T,D); self.c_proj(...)   (nanoGPT)
  // BEGIN SOLUTION
  const std::size_t batch = x.shape(0), tokens = x.shape(1), width = x.shape(2);
  const std::size_t heads = attention.heads;
  if (heads == 0 || width % heads != 0) {
    throw std::invalid_argument(
        fmt::format("causal_self_attention: {} heads do not divide D = {}", heads, width));
  }
  if (attention.c_attn.weight.shape(1) != 3 * width || attention.c_proj.weight.shape(0) != width ||
      attention.c_proj.weight.shape(1) != width) {
    throw std::invalid_argument(fmt::format(
        "causal_self_attention: c_attn {} and c_proj {} do not fit D = {}: expected ({}, {}) and "
        "({}, {})",
        shape_string_of(attention.c_attn.weight), shape_string_of(attention.c_proj.weight), width,
        width, 3 * width, width, width));
  }
  const std::size_t head_size = width / heads;
  const Tensor3 qkv = conv1d(attention.c_attn, x);  // (B,T,3D)
  CausalAttentionSteps steps;
  steps.query = Tensor4({batch, heads, tokens, head_size});
  steps.key = Tensor4({batch, heads, tokens, head_size});
  steps.value = Tensor4({batch, heads, tokens, head_size});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t s = 0; s < head_size; ++s) {
          const std::size_t column = h * head_size + s;
          steps.query(b, h, t, s) = qkv(b, t, column);
          steps.key(b, h, t, s) = qkv(b, t, width + column);
          steps.value(b, h, t, s) = qkv(b, t, 2 * width + column);
        }
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  const float masked = -std::numeric_limits<float>::infinity();
  steps.scores = Tensor4({batch, heads, tokens, tokens});
  steps.weights = Tensor4({batch, heads, tokens, tokens});
  steps.context = Tensor3({batch, tokens, width});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < tokens; ++i) {
        float largest = masked;
        for (std::size_t j = 0; j < tokens; ++j) {
          float score = masked;
          if (j <= i) {
            float dot = 0.0f;
            for (std::size_t s = 0; s < head_size; ++s)
              dot += steps.query(b, h, i, s) * steps.key(b, h, j, s);
            score = dot * scale;
          }
          steps.scores(b, h, i, j) = score;
          largest = std::max(largest, score);
        }
        float total = 0.0f;
        for (std::size_t j = 0; j < tokens; ++j) {
          const float e = steps.scores(b, h, i, j) == masked
                              ? 0.0f
                              : std::exp(steps.scores(b, h, i, j) - largest);
          steps.weights(b, h, i, j) = e;
          total += e;
        }
        for (std::size_t j = 0; j < tokens; ++j)
          steps.weights(b, h, i, j) /= total;
        for (std::size_t s = 0; s < head_size; ++s) {
          float sum = 0.0f;
          for (std::size_t j = 0; j < tokens; ++j)
            sum += steps.weights(b, h, i, j) * steps.value(b, h, j, s);
          steps.context(b, i, h * head_size + s) = sum;
        }
      }
  steps.output = conv1d(attention.c_proj, steps.context);  // (B,T,D)
  return steps;
  // END SOLUTION
}

GptBlockSteps forward(const GptBlock& block, const Tensor3& x) {
  // TODO(lesson 15): one GPT-2 block, every field of GptBlockSteps as the header says, in the
  // order the data flows. Pre-LN: each sublayer reads a normalised copy, and the stream is only
  // added to. The MLP is c_fc, GELU's tanh form (GPT-2's gelu_new, not the exact erf form), then
  // c_proj. x (B,T,D) -> every step (B,T,D), hidden and gelu (B,T,F). Throws
  // std::invalid_argument when x's width is not the norms' (check before calling the core's
  // LayerNorm, which throws attn::Error), or when a weight does not fit.
  // PyTorch: x = x + self.attn(self.ln_1(x)); x = x + self.mlp(self.ln_2(x)), where
  // mlp(h) = c_proj(0.5 * a * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 * a**3)))) with a = c_fc(h)
  // BEGIN SOLUTION
  const auto add = [](const Tensor3& a, const Tensor3& b) {  // (B,T,D) + (B,T,D)
    Tensor3 sum(a.shape());
    for (std::size_t i = 0; i < a.size(); ++i)
      sum.data()[i] = a.data()[i] + b.data()[i];
    return sum;
  };
  if (x.dimension() != 3 || x.shape(2) != block.ln_1.weight.shape(0) ||
      x.shape(2) != block.ln_2.weight.shape(0)) {
    throw std::invalid_argument(fmt::format("forward: x {} does not fit ln_1 {} and ln_2 {}",
                                            shape_string_of(x), shape_string_of(block.ln_1.weight),
                                            shape_string_of(block.ln_2.weight)));
  }
  GptBlockSteps steps;
  steps.ln_1 = attn::forward(block.ln_1, x).output;
  steps.attention = causal_self_attention(block.attn, steps.ln_1).output;
  steps.residual = add(x, steps.attention);  // x itself, not ln_1
  steps.ln_2 = attn::forward(block.ln_2, steps.residual).output;
  steps.hidden = conv1d(block.mlp.c_fc, steps.ln_2);  // (B,T,F)
  steps.gelu = Tensor3(steps.hidden.shape());
  const float root = std::sqrt(2.0f / 3.14159265358979f);
  for (std::size_t i = 0; i < steps.hidden.size(); ++i) {
    const float a = steps.hidden.data()[i];
    steps.gelu.data()[i] = 0.5f * a * (1.0f + std::tanh(root * (a + 0.044715f * a * a * a)));
  }
  steps.mlp = conv1d(block.mlp.c_proj, steps.gelu);  // (B,T,D)
  steps.output = add(steps.residual, steps.mlp);
  return steps;
  // END SOLUTION
}

}  // namespace attn::exercise
