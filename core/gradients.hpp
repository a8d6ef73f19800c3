// Gradients as llm.c keeps them: a struct of the same type as the weights, whose parameters hold
// dLoss/dparameter. Every backward() adds into it (+=), so shared weights and micro-batches just
// add up; zero it before each step.
#pragma once

#include <algorithm>
#include <string>

#include "base/array.hpp"
#include "linear.hpp"

namespace attn {

// Sets every parameter the layer's visit_parameters offers to 0.
template <class Layer>
void zero_grad(Layer& grad) {
  visit_parameters(grad, [](const std::string&, float* data, const Shape& shape) {
    std::fill(data, data + element_count(shape), 0.0f);
  });
}

// A layer of the same type and shapes as `layer`, every parameter 0: where backward() adds the
// gradients.
template <class Layer>
Layer zeros_like(const Layer& layer) {
  Layer grad = layer;
  zero_grad(grad);
  return grad;
}

}  // namespace attn
