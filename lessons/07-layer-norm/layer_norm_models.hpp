// Lesson 07's model for `attn summary` and `attn backward --model`: nn.LayerNorm(D), or seed 001's
// LayerNormalization.
#pragma once

#include "catalog.hpp"

namespace attn::lessons {

ModelDescription layer_norm_model(const ModelRequest& request);
LessonRun layer_norm_gradients(const ModelRequest& request, const GradientRequest& gradient);

}  // namespace attn::lessons
