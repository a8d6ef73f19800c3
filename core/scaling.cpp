#include "scaling.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

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
  for (std::size_t r = 0; r < rows; ++r) {
    const float* w = weights.data() + r * keys;
    p.max_weight += *std::max_element(w, w + keys);
    p.entropy += entropy(w, keys);
  }
  p.max_weight /= static_cast<double>(rows);
  p.entropy /= static_cast<double>(rows);
  return p;
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

double entropy(const float* weights, std::size_t n) {
  double h = 0.0;
  for (std::size_t j = 0; j < n; ++j)
    if (weights[j] > 0.0f) h -= weights[j] * std::log(static_cast<double>(weights[j]));
  return h;
}

}  // namespace attn
