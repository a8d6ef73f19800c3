#include "scaling.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "matmul.hpp"
#include "softmax.hpp"

namespace attn {

namespace {
std::vector<float> normal_vector(Rng& rng, std::size_t n) {
  std::vector<float> v(n);
  for (float& x : v)
    x = static_cast<float>(rng.normal());
  return v;
}

float dot(const std::vector<float>& a, const std::vector<float>& b) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i)
    sum += a[i] * b[i];
  return sum;
}

SoftmaxPeak peak(const Tensor2& weights) {
  SoftmaxPeak p;
  const std::size_t rows = weights.shape(0), keys = weights.shape(1);
  std::vector<double> norms;
  norms.reserve(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* w = weights.data() + r * keys;
    p.max_weight += *std::max_element(w, w + keys);
    p.entropy += entropy(w, keys);
    norms.push_back(softmax_jacobian_norm(w, keys));
  }
  p.max_weight /= static_cast<double>(rows);
  p.entropy /= static_cast<double>(rows);
  if (!norms.empty()) {
    const auto middle = norms.begin() + static_cast<std::ptrdiff_t>(norms.size() / 2);
    std::nth_element(norms.begin(), middle, norms.end());
    p.jacobian_norm = *middle;
  }
  return p;
}

// A (rows, cols) matrix with N(0, 1/cols) entries: y = W x keeps x's unit variance.
Tensor2 projection(Rng& rng, std::size_t rows, std::size_t cols) {
  Tensor2 w({rows, cols});
  const double scale = 1.0 / std::sqrt(static_cast<double>(cols));
  for (std::size_t i = 0; i < w.size(); ++i)
    w.data()[i] = static_cast<float>(rng.normal() * scale);
  return w;
}
}  // namespace

DotProductSpread measure_dot_product_spread(Rng& rng, std::size_t d_model, std::size_t samples) {
  std::vector<double> values(samples);
  for (double& v : values) {
    const auto q = normal_vector(rng, d_model), k = normal_vector(rng, d_model);
    v = dot(q, k);
  }
  DotProductSpread s;
  s.d_model = d_model;
  for (double v : values)
    s.mean += v;
  s.mean /= static_cast<double>(samples);
  for (double v : values)
    s.variance += (v - s.mean) * (v - s.mean);
  s.variance /= static_cast<double>(samples - 1);
  s.scaled_variance = s.variance / static_cast<double>(d_model);  // Var(x / c) = Var(x) / c^2
  return s;
}

SoftmaxPeakComparison measure_softmax_peak(Rng& rng, std::size_t d_model, std::size_t keys,
                                           std::size_t rows) {
  Tensor2 scores({rows, keys});
  for (std::size_t r = 0; r < rows; ++r) {
    const auto q = normal_vector(rng, d_model);
    for (std::size_t j = 0; j < keys; ++j)
      scores(r, j) = dot(q, normal_vector(rng, d_model));
  }
  SoftmaxPeakComparison c;
  c.d_model = d_model;
  c.unscaled = peak(softmax(scores));
  const Tensor2 scaled = scores / std::sqrt(static_cast<float>(d_model));
  c.scaled = peak(softmax(scaled));
  return c;
}

SelfAttentionPeak measure_self_attention_peak(Rng& rng, std::size_t d_model, std::size_t tokens,
                                              std::size_t sequences) {
  // A pair of projections has its own bias for a token's score with itself (tr(W_qᵀ W_k)/√D,
  // spread 1/√D), so the sequences cycle through several pairs: more at small D, where the bias
  // is larger and a pair is cheap.
  const std::size_t pairs =
      std::clamp<std::size_t>(2048 / d_model, 4, std::max<std::size_t>(sequences, 1));
  std::vector<Tensor2> w_q, w_k;
  for (std::size_t i = 0; i < pairs; ++i) {
    w_q.push_back(projection(rng, d_model, d_model));
    w_k.push_back(projection(rng, d_model, d_model));
  }
  Tensor3 x({sequences, tokens, d_model});
  for (std::size_t i = 0; i < x.size(); ++i)
    x.data()[i] = static_cast<float>(rng.normal());
  // Q = X W_qᵀ and K = X W_kᵀ, one sequence at a time against its pair's projections.
  Tensor3 q({sequences, tokens, d_model}), k({sequences, tokens, d_model});
  for (std::size_t s = 0; s < sequences; ++s) {
    const std::size_t n = tokens * d_model;
    Tensor3 one({1, tokens, d_model});
    std::copy_n(x.data() + s * n, n, one.data());
    const Tensor3 qs = linear(one, w_q[s % pairs], nullptr);
    const Tensor3 ks = linear(one, w_k[s % pairs], nullptr);
    std::copy_n(qs.data(), n, q.data() + s * n);
    std::copy_n(ks.data(), n, k.data() + s * n);
  }
  const Tensor3 xx = batched_matmul_transposed(x, x), qk = batched_matmul_transposed(q, k);
  Tensor2 same({sequences * tokens, tokens}), projected({sequences * tokens, tokens});
  const float root = std::sqrt(static_cast<float>(d_model));
  for (std::size_t s = 0; s < sequences; ++s)
    for (std::size_t i = 0; i < tokens; ++i)
      for (std::size_t j = 0; j < tokens; ++j) {
        same(s * tokens + i, j) = xx(s, i, j) / root;
        projected(s * tokens + i, j) = qk(s, i, j) / root;
      }
  const auto diagonal = [tokens](const Tensor2& w) {
    double sum = 0.0;
    for (std::size_t r = 0; r < w.shape(0); ++r)
      sum += w(r, r % tokens);
    return sum / static_cast<double>(w.shape(0));
  };
  SelfAttentionPeak p;
  p.d_model = d_model;
  const Tensor2 same_weights = softmax(same), projected_weights = softmax(projected);
  p.same = peak(same_weights);
  p.same_self = diagonal(same_weights);
  p.projected = peak(projected_weights);
  p.projected_self = diagonal(projected_weights);
  return p;
}

double softmax_jacobian_norm(const float* weights, std::size_t n) {
  // ‖J‖² = Σ_i p_i² (1 - p_i)² + Σ_i p_i² Σ_{j≠i} p_j². Near one-hot, 1 - p_i and the sums over
  // j ≠ i are tiny differences of numbers near 1, so both are summed from the other entries
  // (prefix and suffix sums), never subtracted from 1.
  std::vector<double> before(n + 1, 0.0), before_sq(n + 1, 0.0);
  for (std::size_t j = 0; j < n; ++j) {
    before[j + 1] = before[j] + weights[j];
    before_sq[j + 1] = before_sq[j] + static_cast<double>(weights[j]) * weights[j];
  }
  double after = 0.0, after_sq = 0.0, total = 0.0;
  for (std::size_t i = n; i-- > 0;) {
    const double p = weights[i], others = before[i] + after, others_sq = before_sq[i] + after_sq;
    total += p * p * (others * others + others_sq);
    after += p;
    after_sq += p * p;
  }
  return std::sqrt(total);
}

double entropy(const float* weights, std::size_t n) {
  double h = 0.0;
  for (std::size_t j = 0; j < n; ++j)
    if (weights[j] > 0.0f) h -= weights[j] * std::log(static_cast<double>(weights[j]));
  return h;
}

}  // namespace attn
