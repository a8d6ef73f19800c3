// Lesson 08's model for `attn summary` and `attn backward --model`: the book's FeedForward(D, F),
// or seed 001's and seed 000's.
#pragma once

#include "catalog.hpp"

namespace attn::lessons {

ModelDescription feed_forward_model(const ModelRequest& request);
LessonRun feed_forward_gradients(const ModelRequest& request, const GradientRequest& gradient);

}  // namespace attn::lessons
