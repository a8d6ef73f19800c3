// Lesson 02's exercise. Fill in each function where it says TODO, then run
//
//     attn check scaling        (the tests, with what was expected and what came out)
//     attn hint scaling         (a hint, one stage at a time)
//
// rng.normal() is one N(0, 1) draw (a double). Tensor2 is xt::xtensor<float, 2>: s(r, j) an
// element, s.data() + r * s.shape(1) a pointer to row r, and Tensor2({rows, keys}) a new tensor.
#include "scaling_exercise.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "softmax.hpp"

namespace attn::exercise {

double entropy(const float* weights, std::size_t n) {
  // TODO(lesson 02): return minus the sum of w * ln(w) over the n weights, summed in double,
  // skipping the weights that are 0 (their ln is -inf, and 0 ln 0 counts as 0).
  // BEGIN SOLUTION
  double h = 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    if (weights[j] > 0.0f)
      h -= static_cast<double>(weights[j]) * std::log(static_cast<double>(weights[j]));
  }
  return h;
  // END SOLUTION
}

DotProductSpread measure_dot_product_spread(Rng& rng, std::size_t d_model, std::size_t samples) {
  // TODO(lesson 02): `samples` times, draw q then k (d_model rng.normal() values each) and keep q·k;
  // return d_model, the mean of q·k, the variance (divided by samples - 1) and variance / d_model.
  // BEGIN SOLUTION
  std::vector<double> dots(samples);
  std::vector<float> q(d_model), k(d_model);  // (D), (D)
  for (double& dot : dots) {
    for (float& v : q)
      v = static_cast<float>(rng.normal());
    for (float& v : k)
      v = static_cast<float>(rng.normal());
    float sum = 0.0f;
    for (std::size_t d = 0; d < d_model; ++d)
      sum += q[d] * k[d];
    dot = sum;
  }
  DotProductSpread spread;
  spread.d_model = d_model;
  for (double dot : dots)
    spread.mean += dot;
  spread.mean /= static_cast<double>(samples);
  for (double dot : dots)
    spread.variance += (dot - spread.mean) * (dot - spread.mean);
  spread.variance /= static_cast<double>(samples - 1);
  spread.scaled_variance =
      spread.variance / static_cast<double>(d_model);  // Var(x / c) = Var(x) / c^2
  return spread;
  // END SOLUTION
}

SoftmaxPeakComparison measure_softmax_peak(Rng& rng, std::size_t d_model, std::size_t keys,
                                           std::size_t rows) {
  // TODO(lesson 02): fill scores (rows, keys) with q·k, one q per row and a new k per key; divide a
  // copy by sqrt(d_model); attn::softmax both, and average each one's row max and entropy() over rows.
  // BEGIN SOLUTION
  Tensor2 scores({rows, keys});  // (rows, keys) q·k
  std::vector<float> q(d_model), k(d_model);
  for (std::size_t r = 0; r < rows; ++r) {
    for (float& v : q)
      v = static_cast<float>(rng.normal());
    for (std::size_t j = 0; j < keys; ++j) {
      for (float& v : k)
        v = static_cast<float>(rng.normal());
      float dot = 0.0f;
      for (std::size_t d = 0; d < d_model; ++d)
        dot += q[d] * k[d];
      scores(r, j) = dot;
    }
  }
  const float root = std::sqrt(static_cast<float>(d_model));
  Tensor2 scaled({rows, keys});  // (rows, keys) q·k / sqrt(D)
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < keys; ++j)
      scaled(r, j) = scores(r, j) / root;
  }
  const auto peak = [rows, keys](const Tensor2& weights) {
    SoftmaxPeak p;
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = weights.data() + r * keys;
      p.max_weight += *std::max_element(row, row + keys);
      p.entropy += entropy(row, keys);
    }
    p.max_weight /= static_cast<double>(rows);
    p.entropy /= static_cast<double>(rows);
    return p;
  };
  SoftmaxPeakComparison comparison;
  comparison.d_model = d_model;
  comparison.unscaled = peak(attn::softmax(scores));  // (rows, keys) weights
  comparison.scaled = peak(attn::softmax(scaled));
  return comparison;
  // END SOLUTION
}

}  // namespace attn::exercise
