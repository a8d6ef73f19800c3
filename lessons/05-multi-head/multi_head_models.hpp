// Lesson 05's model for `attn summary` and `attn backward --model`: MultiHeadAttention, the book's
// form unless --variant says otherwise (the compare view's output).
#pragma once

#include "catalog.hpp"

namespace attn::lessons {

ModelDescription multi_head_model(const ModelRequest& request);
LessonRun multi_head_gradients(const ModelRequest& request, const GradientRequest& gradient);

}  // namespace attn::lessons
