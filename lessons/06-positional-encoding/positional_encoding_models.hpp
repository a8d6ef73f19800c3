// Lesson 06's model for `attn summary` and `attn backward --model`: seed 001's PositionalEncoding,
// or the book's learned table.
#pragma once

#include "catalog.hpp"

namespace attn::lessons {

ModelDescription positional_encoding_model(const ModelRequest& request);
LessonRun positional_encoding_gradients(const ModelRequest& request,
                                        const GradientRequest& gradient);

}  // namespace attn::lessons
