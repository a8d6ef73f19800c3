// Optimisers as torch.optim computes them (PyTorch 1.13, one tensor at a time, float32): SGD with
// momentum and AdamW with decoupled weight decay and bias correction. They update the parameters
// of a model from the gradients backward() left in a struct of the same type, visited in
// lockstep in state_dict order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear.hpp"

namespace attn {

// One parameter tensor and its gradient.
struct ParameterSlot {
  std::string key;
  float* value = nullptr;
  const float* grad = nullptr;
  std::size_t count = 0;
};

// Every parameter of `model` beside the same parameter of `grad` (a struct of the same type and
// shapes), in state_dict order. Throws attn::Error when the two differ in keys or sizes.
template <class Layer>
std::vector<ParameterSlot> parameter_slots(Layer& model, Layer& grad);

// torch.optim.SGD(params, lr, momentum, weight_decay): g += wd·p; with momentum the buffer starts
// at g, then buf = momentum·buf + g; p -= lr·buf.
struct Sgd {
  float lr = 1e-2f, momentum = 0.0f, weight_decay = 0.0f;
  std::vector<std::vector<float>> buffers;
  void step(const std::vector<ParameterSlot>& slots);
};

// torch.optim.AdamW(params, lr, betas, eps, weight_decay): p *= 1 - lr·wd; m = β1 m + (1-β1) g;
// v = β2 v + (1-β2) g²; p -= lr / (1 - β1^t) · m / (√v / √(1 - β2^t) + eps).
struct AdamW {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 1e-2f;
  std::int64_t steps = 0;
  std::vector<std::vector<float>> m, v;
  void step(const std::vector<ParameterSlot>& slots);
};

// The memory the optimiser's state takes for `parameters` floats, in bytes.
std::size_t optimizer_state_bytes(const Sgd& sgd, std::size_t parameters);
std::size_t optimizer_state_bytes(const AdamW& adamw, std::size_t parameters);

template <class Layer>
std::vector<ParameterSlot> parameter_slots(Layer& model, Layer& grad) {
  std::vector<ParameterSlot> slots;
  visit_parameters(model, [&](const std::string& key, float* data, const Shape& shape) {
    slots.push_back({key, data, nullptr, element_count(shape)});
  });
  std::size_t i = 0;
  visit_parameters(grad, [&](const std::string& key, float* data, const Shape& shape) {
    if (i >= slots.size() || slots[i].key != key || slots[i].count != element_count(shape))
      throw Error(ErrorKind::bad_size, "parameter_slots",
                  fmt::format("the gradient's {} does not match the model's "
                              "parameters",
                              key));
    slots[i++].grad = data;
  });
  if (i != slots.size())
    throw Error(ErrorKind::bad_size, "parameter_slots",
                "the gradient has fewer parameters than the model");
  return slots;
}

}  // namespace attn
