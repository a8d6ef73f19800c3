// Lesson 00's model for `attn summary` and `attn backward --model`: nn.Embedding(V, D) on ids
// (B, T).
#pragma once

#include "catalog.hpp"

namespace attn::lessons {

ModelDescription embedding_model(const ModelRequest& request);
LessonRun embedding_gradients(const ModelRequest& request, const GradientRequest& gradient);

}  // namespace attn::lessons
