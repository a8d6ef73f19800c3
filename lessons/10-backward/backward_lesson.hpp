#pragma once

#include <vector>

#include "encoder.hpp"
#include "layer_norm.hpp"
#include "lesson.hpp"
#include "linear.hpp"

namespace attn::lessons {

// Lesson 10: backpropagation through one attention head, step by step (dY, dV, dP, dS, dQ, dK,
// dX and the weights' gradients), checked by finite differences on screen; then what gradients
// show that forward passes cannot: the scaling by √hs, pre-LN against post-LN as the stack
// deepens, and what residual connections and LayerNorm do for the gradient.
LessonRun run_backward(const LessonOptions& options);

// Xiong et al. (2020)'s setting: encoder layers on hidden states, a final LayerNorm after a pre-LN
// stack (none after post-LN, whose layers end in one), a Linear head and the mean cross-entropy
// over every token. Legend: L layers, C classes.
struct DepthStack {
  Encoder encoder;       // L layers, without embeddings; the placement is the layers'
  LayerNorm final_norm;  // (D), used by pre-LN only
  Linear head;           // (C, D)
};

struct DepthGradients {
  double loss = 0.0;
  double stream_rms = 0.0;  // the residual stream leaving the last layer (pre-LN: before the
                            // final LayerNorm)
  std::vector<double> feed_forward_norms;  // per layer, ‖dL/dW2‖ of its feed-forward's linear_2
  DepthStack grad;                         // every parameter's gradient
};

// x (B,T,D), labels (B,T) in 0..C-1: forward to the loss and back.
DepthGradients depth_gradients(const DepthStack& stack, const Tensor3& x, const Ids& labels);

}  // namespace attn::lessons
