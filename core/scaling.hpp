// Measurements behind the 1/sqrt(D) in attention: the spread of q·k for random vectors, and how
// peaked the softmax of such scores is with and without the division.
#pragma once

#include <cstddef>

#include "base/random.hpp"

namespace attn {

struct DotProductSpread {
  std::size_t d_model = 0;
  double mean = 0.0;             // of q·k over the samples
  double variance = 0.0;         // of q·k: D for unit-variance entries
  double scaled_variance = 0.0;  // of q·k / sqrt(D): about 1
};

// q, k with independent N(0, 1) entries, `samples` pairs.
DotProductSpread measure_dot_product_spread(Rng& rng, std::size_t d_model, std::size_t samples);

struct SoftmaxPeak {
  double max_weight = 0.0;  // mean over rows of the largest weight
  double entropy = 0.0;     // mean over rows of -sum w ln w, in nats (ln(keys) when uniform)
  // Median over rows of the Frobenius norm of the softmax's Jacobian diag(p) - p pᵀ: how much
  // the weights move when the scores do. 0 for a one-hot row.
  double jacobian_norm = 0.0;
};

struct SoftmaxPeakComparison {
  std::size_t d_model = 0;
  SoftmaxPeak unscaled;  // softmax(q·k)
  SoftmaxPeak scaled;    // softmax(q·k / sqrt(D))
};

// `rows` queries, each against `keys` random keys, all entries N(0, 1).
SoftmaxPeakComparison measure_softmax_peak(Rng& rng, std::size_t d_model, std::size_t keys,
                                           std::size_t rows);

// Self-attention of random tokens: T tokens x with N(0, 1) entries, scored against each other.
struct SelfAttentionPeak {
  std::size_t d_model = 0;
  SoftmaxPeak same;      // softmax(X Xᵀ / sqrt(D)): queries and keys are the tokens themselves
  double same_self = 0;  // its mean weight of a token on itself (the diagonal)
  SoftmaxPeak projected;  // softmax(Q Kᵀ / sqrt(D)), Q = X W_qᵀ, K = X W_kᵀ, W entries N(0, 1/D)
  double projected_self = 0;
};

// `sequences` sequences of `tokens` tokens each; the projections are drawn in pairs (up to one
// per sequence, fewer at large D) and the sequences share them in turn.
SelfAttentionPeak measure_self_attention_peak(Rng& rng, std::size_t d_model, std::size_t tokens,
                                              std::size_t sequences);

// ‖diag(p) - p pᵀ‖_F of one row of weights, in double.
double softmax_jacobian_norm(const float* weights, std::size_t n);

// -sum w ln w of one row of weights (0 ln 0 = 0), in nats.
double entropy(const float* weights, std::size_t n);

}  // namespace attn
