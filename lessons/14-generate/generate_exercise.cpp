// Lesson 14's exercise. Fill in each function where it says TODO, then run
//
//     attn check generate        (the tests, with what was expected and what came out)
//     attn hint generate         (a hint, one stage at a time)
//
// Tensor1 is xt::xtensor<float, 1>: v(i) an element, v.size() its length, Tensor1({V}) a new one;
// Tensor4 is the same with four axes: k(b, h, t, i), k.shape(2), Tensor4({B, H, t, hs}). From the
// core: attn::forward(linear, x) applies an nn.Linear to x (B,T,in) -> (B,T,out), and
// attn::softmax(scores) is lesson 03's softmax over the last axis (of a Tensor4 too).
#include "generate_exercise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "linear.hpp"
#include "softmax.hpp"

namespace attn::exercise {

SampledToken sample_next(const Tensor1& logits, const std::vector<std::int64_t>& special,
                         const SamplingSettings& settings, float uniform) {
  // TODO(lesson 14): turn the logits into the distribution a token is drawn from, then draw one.
  // The filters in Hugging Face's order (the header says what each keeps); a special token gets
  // probability 0 whatever its logit. logits (V) -> probabilities (V) summing to 1, and the token.
  // The checks: with temperature 1, no top-k and top_p 1 the probabilities are the softmax of the
  // logits (special tokens aside); a larger temperature flattens them; top-k 2 then top_p 0.7 on
  // probabilities 0.6, 0.25, ... keeps one token, since 0.6 / 0.85 >= 0.7; uniform 0 draws the
  // first token with probability above 0.
  // PyTorch: TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, then softmax
  // BEGIN SOLUTION
  if (!(settings.temperature > 0.0f) || !std::isfinite(settings.temperature)) {
    throw std::invalid_argument(
        fmt::format("sample_next: temperature {} is not positive", settings.temperature));
  }
  if (!(settings.top_p > 0.0f && settings.top_p <= 1.0f)) {
    throw std::invalid_argument(
        fmt::format("sample_next: top_p {} is outside (0, 1]", settings.top_p));
  }
  if (!(uniform >= 0.0f && uniform < 1.0f)) {
    throw std::invalid_argument(fmt::format("sample_next: uniform {} is outside [0, 1)", uniform));
  }
  const std::size_t vocabulary = logits.size();
  constexpr double kMasked = -std::numeric_limits<double>::infinity();
  std::vector<double> z(vocabulary);
  for (std::size_t i = 0; i < vocabulary; ++i)
    z[i] = static_cast<double>(logits(i)) / settings.temperature;
  for (const std::int64_t id : special) {
    if (id >= 0 && static_cast<std::size_t>(id) < vocabulary)
      z[static_cast<std::size_t>(id)] = kMasked;
  }
  std::vector<std::size_t> order(vocabulary);  // most likely first
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return z[a] > z[b]; });
  if (vocabulary == 0 || z[order[0]] == kMasked) {
    throw std::invalid_argument("sample_next: every token is special: nothing to draw");
  }
  if (settings.top_k > 0 && settings.top_k < vocabulary) {
    const double kth = z[order[settings.top_k - 1]];  // ties with the k-th stay, as torch.topk's
    for (double& value : z)
      if (value < kth) value = kMasked;
  }
  std::vector<double> p(vocabulary, 0.0);  // softmax of what top-k kept
  double sum = 0.0;
  for (std::size_t i = 0; i < vocabulary; ++i)
    sum += p[i] = z[i] == kMasked ? 0.0 : std::exp(z[i] - z[order[0]]);
  double kept = 0.0;
  std::size_t keep = 0;
  while (keep < vocabulary && p[order[keep]] > 0.0) {
    kept += p[order[keep]] / sum;
    ++keep;
    if (kept >= settings.top_p) break;
  }
  double total = 0.0;
  for (std::size_t i = keep; i < vocabulary; ++i)
    p[order[i]] = 0.0;
  for (const double value : p)
    total += value;
  SampledToken out{Tensor1::from_shape({vocabulary}), 0};
  double cumulative = 0.0;
  bool drawn = false;
  for (std::size_t i = 0; i < vocabulary; ++i) {
    out.probabilities(i) = static_cast<float>(p[i] / total);
    cumulative += p[i] / total;
    if (!drawn && p[i] > 0.0 && uniform < cumulative) {
      out.token = static_cast<std::int64_t>(i);
      drawn = true;
    }
  }
  if (!drawn) {  // round-off left the total just below uniform: the last token kept
    std::size_t last = vocabulary - 1;
    while (p[last] == 0.0)
      --last;
    out.token = static_cast<std::int64_t>(last);
  }
  return out;
  // END SOLUTION
}

CachedAttention attend_with_cache(const FusedMultiHead& layer, const Tensor4& cached_keys,
                                  const Tensor4& cached_values, const Tensor3& x_new) {
  // TODO(lesson 14): one step of decoding with the cache: the new token's query, key and value;
  // the key and value appended to the cache; the new token attending over all t + 1 keys (no
  // mask is needed: nothing after it exists yet); the heads joined and projected as in lesson 05.
  // x_new (B,1,D), cache (B,H,t,hs) -> keys and values (B,H,t+1,hs), weights (B,H,1,t+1), output
  // (B,1,D). The check: step by step from an empty cache, each output equals the row of the
  // causal attention on the whole prefix, without ever computing an earlier token's key again.
  // PyTorch: torch.cat([cache_k, k_new], dim=2), then (q_new @ K.transpose(-2, -1)) / sqrt(hs)
  // BEGIN SOLUTION
  const std::size_t width = layer.W_O.weight.shape(0), heads = layer.heads;
  const std::size_t size = width / heads, batch = x_new.shape(0), cached = cached_keys.shape(2);
  if (x_new.shape(1) != 1 || x_new.shape(2) != width) {
    throw std::invalid_argument(
        fmt::format("attend_with_cache: x_new {} is not (B,1,{})", shape_string_of(x_new), width));
  }
  if (cached_keys.shape() != cached_values.shape() || cached_keys.shape(0) != batch ||
      cached_keys.shape(1) != heads || cached_keys.shape(3) != size) {
    throw std::invalid_argument(fmt::format(
        "attend_with_cache: cached keys {} and values {} are not both (B,H,t,hs) = ({}, {}, t, {})",
        shape_string_of(cached_keys), shape_string_of(cached_values), batch, heads, size));
  }
  const Tensor3 query = attn::forward(layer.W_Q, x_new);  // (B,1,D)
  const Tensor3 key = attn::forward(layer.W_K, x_new), value = attn::forward(layer.W_V, x_new);
  CachedAttention out;
  out.keys = Tensor4({batch, heads, cached + 1, size});  // (B,H,t,hs) + one row
  out.values = Tensor4({batch, heads, cached + 1, size});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t n = 0; n < cached; ++n)
        for (std::size_t i = 0; i < size; ++i) {
          out.keys(b, h, n, i) = cached_keys(b, h, n, i);
          out.values(b, h, n, i) = cached_values(b, h, n, i);
        }
      for (std::size_t i = 0; i < size; ++i) {
        out.keys(b, h, cached, i) = key(b, 0, h * size + i);
        out.values(b, h, cached, i) = value(b, 0, h * size + i);
      }
    }
  const float root = std::sqrt(static_cast<float>(size));
  Tensor4 scores({batch, heads, 1, cached + 1});  // (B,H,1,hs) @ (B,H,hs,t+1) -> (B,H,1,t+1)
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t n = 0; n <= cached; ++n) {
        float dot = 0.0f;
        for (std::size_t i = 0; i < size; ++i)
          dot += query(b, 0, h * size + i) * out.keys(b, h, n, i);
        scores(b, h, 0, n) = dot / root;
      }
  out.weights = attn::softmax(scores);
  Tensor3 concatenated({batch, 1, width});  // (B,H,1,t+1) @ (B,H,t+1,hs) -> (B,1,H*hs)
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < size; ++i) {
        float sum = 0.0f;
        for (std::size_t n = 0; n <= cached; ++n)
          sum += out.weights(b, h, 0, n) * out.values(b, h, n, i);
        concatenated(b, 0, h * size + i) = sum;
      }
  out.output = attn::forward(layer.W_O, concatenated);  // (B,1,D)
  return out;
  // END SOLUTION
}

}  // namespace attn::exercise
