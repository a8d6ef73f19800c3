// Loading and saving a layer's weights by state_dict key, strictly: the keys and shapes must be
// exactly those of the PyTorch module the layer describes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "io/weights.hpp"
#include "linear.hpp"
#include "module.hpp"

namespace attn {

// What keeps `weights` from being exactly the `expected` keys and shapes, in float32: "missing a;
// unexpected 'b'; c is (2) but the model needs (3)" (keys escaped), or "" when they fit.
std::string state_dict_mismatch(const std::vector<StateDictEntry>& expected,
                                const StateDict& weights);

// Throws one attn::Error listing every missing, unexpected and wrong-shaped key (and a wrong
// dtype), naming `source` (the file) and the module's class.
void check_state_dict(const Module& model, const StateDict& weights, std::string_view source);

// Checks, then copies each parameter the visitor offers from `weights`.
template <class Layer>
void load_state_dict(Layer& layer, const Module& model, const StateDict& weights,
                     std::string_view source);

// The layer's parameters keyed like model.state_dict(), as float32 arrays.
template <class Layer>
StateDict collect_state_dict(Layer& layer);

// Visitor glue used by the templates.
void copy_parameter_in(const StateDict& weights, const std::string& key, float* data,
                       const Shape& shape);
void copy_parameter_out(StateDict& weights, const std::string& key, const float* data,
                        const Shape& shape);

template <class Layer>
void load_state_dict(Layer& layer, const Module& model, const StateDict& weights,
                     std::string_view source) {
  check_state_dict(model, weights, source);
  visit_parameters(layer, [&](const std::string& key, float* data, const Shape& shape) {
    copy_parameter_in(weights, key, data, shape);
  });
}

template <class Layer>
StateDict collect_state_dict(Layer& layer) {
  StateDict out;
  visit_parameters(layer, [&](const std::string& key, float* data, const Shape& shape) {
    copy_parameter_out(out, key, data, shape);
  });
  return out;
}

}  // namespace attn
