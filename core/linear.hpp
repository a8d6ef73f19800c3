// nn.Linear as a plain struct of weights, with PyTorch's default initialisation and a visitor
// over its parameters for loading and saving state_dicts.
#pragma once

#include <functional>
#include <string>

#include "base/random.hpp"
#include "base/tensor.hpp"

namespace attn {

struct Linear {
  Tensor2 weight;  // (out, in)
  Tensor1 bias;    // (out), or empty when bias=False
  bool has_bias = false;
};

// U(-1/sqrt(in), 1/sqrt(in)) for weight and bias: nn.Linear's default (kaiming_uniform, a=sqrt(5)).
Linear init_linear(Rng& rng, std::size_t in, std::size_t out, bool bias);
// x (B,T,in) -> (B,T,out)
Tensor3 forward(const Linear& layer, const Tensor3& x);

// The backward of forward(layer, x) for the gradient d_output (B,T,out): returns dX = dY W
// (B,T,in), and adds dW = dYᵀ X (over all B·T rows) and db = Σ dY into `grad`, a Linear of the
// same shapes (llm.c's convention: parameter gradients accumulate; zero them before a step).
Tensor3 backward(const Linear& layer, const Tensor3& x, const Tensor3& d_output, Linear& grad);
// The same product in float64 from the float32 weights: x @ weight^T + bias, (B,T,in) -> (B,T,out).
Tensor3d forward_float64(const Linear& layer, const Tensor3d& x);

// Called once per parameter with its state_dict key, storage and shape, in state_dict order.
using ParameterVisitor =
    std::function<void(const std::string& key, float* data, const Shape& shape)>;
void visit_parameters(Linear& layer, const std::string& prefix, const ParameterVisitor& visit);
inline void visit_parameters(Linear& layer, const ParameterVisitor& visit) {
  visit_parameters(layer, "", visit);
}

}  // namespace attn
