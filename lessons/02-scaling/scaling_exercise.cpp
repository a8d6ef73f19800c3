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

// PREDICT before you run attn check: q and k have D = 64 entries, each one N(0, 1) draw. What
// is the standard deviation of q·k, before any division by sqrt(D)? Write your guess in place of
// the NaN. attn check prints it beside the value your measure_dot_product_spread measured; a
// prediction earns or costs no points.
const double predicted_dot_spread_d64 = 8.0;  // prediction

double entropy(const float* weights, std::size_t n) {
  // TODO(lesson 02): the entropy, in nats, of one row of n weights: minus the sum of w ln w,
  // where a weight of 0 adds 0 (0 ln 0 = 0). weights[0 .. n-1] -> a double: ln n for n equal
  // weights, 0 for a one-hot row. PyTorch: torch.special.entr(w).sum()
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
  // TODO(lesson 02): how far q·k spreads for random q and k: over `samples` pairs q, k of d_model
  // entries, each entry one rng.normal() draw from the rng given, the mean of q·k, its sample
  // variance (divided by samples - 1) and that variance / d_model, which is the variance of
  // q·k / sqrt(D); d_model is copied into the result. PyTorch, with dots the samples' q·k:
  // dots.mean(), dots.var(), dots.var() / D
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
  // TODO(lesson 02): how peaked softmax rows are without and with the 1/sqrt(D): scores
  // (rows, keys) of q·k, each row's query q against `keys` keys k of its own, every entry of q and
  // k one rng.normal() draw. unscaled describes softmax(scores), scaled softmax(scores / sqrt(D)),
  // each by the mean over the rows of the row's largest weight and of its entropy; d_model is
  // copied into the result. The core's attn::softmax (lesson 03's, for a Tensor2 too) is available.
  // PyTorch, for s = scores and s = scores / math.sqrt(D): w = torch.softmax(s, dim=-1);
  // w.max(dim=-1).values.mean(), torch.special.entr(w).sum(-1).mean()
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
