// Lesson 07's exercise: nn.LayerNorm, its parameters at initialisation and its forward pass step
// by step. The signatures are the core's (core/layer_norm.hpp); you write the bodies in
// layer_norm_exercise.cpp.
//
// Legend: B batch, T tokens, D model width.
#pragma once

#include <cstddef>

#include "base/tensor.hpp"
#include "layer_norm.hpp"

namespace attn::exercise {

// Your prediction, written in layer_norm_exercise.cpp before you run attn check: the first
// normalised value of the token (1, 2, 3). NaN, or no such line: not predicted yet.
[[gnu::weak]] extern const double predicted_normalised_first;

// nn.LayerNorm(D, eps) as it starts: weight (D) all ones, bias (D) all zeros, and eps. Throws
// std::invalid_argument unless eps is positive and finite.
LayerNorm init_layer_norm(std::size_t d_model, float eps = kLayerNormEps);

// Per token of x (B,T,D): mean (B,T,1), biased variance (B,T,1), normalised (B,T,D) =
// (x - mean) / sqrt(variance + eps), output (B,T,D) = normalised * weight + bias. Throws
// std::invalid_argument when D is not the size of weight and bias.
LayerNormSteps forward(const LayerNorm& norm, const Tensor3& x);

}  // namespace attn::exercise
