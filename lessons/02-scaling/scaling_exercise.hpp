// Lesson 02's exercise: measure why attention divides its scores by sqrt(D). The signatures are
// the core's (core/scaling.hpp); you write the bodies in scaling_exercise.cpp.
//
// Legend: D the width of q and k (d_model); `rows` queries, each scored against `keys` keys.
#pragma once

#include <cstddef>

#include "base/random.hpp"
#include "scaling.hpp"

namespace attn::exercise {

// Your prediction, written in scaling_exercise.cpp before you run attn check: the standard
// deviation of q·k for D = 64 (before any division by sqrt(D)). NaN, or no such line: not predicted yet.
[[gnu::weak]] extern const double predicted_dot_spread_d64;

// -sum w ln w over weights[0], ..., weights[n - 1], in nats, with 0 ln 0 = 0: ln(n) for n equal
// weights, 0 for a one-hot row.
double entropy(const float* weights, std::size_t n);

// `samples` pairs q, k of D independent rng.normal() entries: the mean and the sample variance of
// q·k (about 0 and D), and that variance divided by D, which is the variance of q·k / sqrt(D).
DotProductSpread measure_dot_product_spread(Rng& rng, std::size_t d_model, std::size_t samples);

// `rows` queries q, each against `keys` keys k, entries rng.normal(): scores (rows, keys) q·k.
// unscaled from softmax(scores), scaled from softmax(scores / sqrt(D)): each the mean over the
// rows of the largest weight and of the entropy.
SoftmaxPeakComparison measure_softmax_peak(Rng& rng, std::size_t d_model, std::size_t keys,
                                           std::size_t rows);

}  // namespace attn::exercise
