#pragma once

#include "lesson.hpp"

namespace attn::lessons {

// Lesson 10: backpropagation through one attention head, step by step (dY, dV, dP, dS, dQ, dK,
// dX and the weights' gradients), checked by finite differences on screen; then what gradients
// show that forward passes cannot: the scaling by √hs, pre-LN against post-LN in a deep stack,
// and what residual connections do for the gradient.
LessonRun run_backward(const LessonOptions& options);

}  // namespace attn::lessons
