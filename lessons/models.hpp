// What the lessons' models for `attn summary` and `attn backward --model` have in common: the
// lessons' defaults for the request's sizes, the inputs of a backward run (read from the files
// given, or drawn from the seed) and the run it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/random.hpp"
#include "catalog.hpp"
#include "embedding.hpp"
#include "gradients.hpp"
#include "state_dict.hpp"

namespace attn::lessons {

// The element sizes of a summary's inputs: int64 ids, float32 hidden states.
inline constexpr std::size_t kInt64 = 8, kFloat32 = 4;

// A size of the request, or the lesson's default when it is 0.
std::size_t or_default(std::size_t given, std::size_t lesson_default);

// The shape (B, T, width) of hidden states of the request's sizes.
Shape hidden_states(const ModelRequest& r, std::size_t width);

// Error about "variant": `variant` is not one of `model`'s, which are `choices`.
Error unknown_variant(std::string_view model, const std::string& variant, std::string_view choices);

// ---- attn backward --model: the forward on X (or ids), then backward from G

// The model's float input (B,T,D): --input, or N(0, 1) draws of the request's sizes.
Tensor3 float_input(const ModelRequest& r, const GradientRequest& g, Rng& rng, std::size_t width);

// ids (B,T) in 0..rows-1: --input as int64, or uniform draws.
Ids id_input(const ModelRequest& r, const GradientRequest& g, Rng& rng, std::size_t rows);

// G, the gradient of the output: --grad-output (the output's shape, float32), or N(0, 1) draws.
Tensor3 gradient_of(const Tensor3& output, const GradientRequest& g, Rng& rng);

// The weights of --weights, when given, loaded into `layer`.
template <class Layer>
void load_weights(Layer& layer, const Module& module, const GradientRequest& g) {
  if (g.weights) load_state_dict(layer, module, *g.weights, g.weights_name);
}

// The run: X, the output, G, dX (none for ids) and every parameter's gradient.
template <class Layer>
LessonRun gradient_run(std::string_view model, const GradientRequest& g, Array input,
                       const Tensor3& output, const Tensor3& d_output, const Tensor3* d_input,
                       Layer& grad) {
  LessonRun run("backward");
  run.setting("model", std::string(model));
  run.setting(g.weights ? "weights" : "seed", g.weights ? g.weights_name : std::to_string(g.seed));
  if (g.input) run.setting("input", g.input_name);
  if (g.grad_output) run.setting("grad-output", g.grad_output_name);
  run.prose(fmt::format(
      "`y = {}(x)`, then `y.backward(G)`: the gradient of every parameter as PyTorch leaves it in "
      "`.grad`, and the input's.\n",
      model));
  run.step("input", d_input != nullptr ? "x" : "the ids (they get no gradient)", std::move(input));
  run.step("output", "y", to_array(output));
  run.step("grad_output", "G = dL/dy, what y.backward(G) feeds in", to_array(d_output));
  if (d_input != nullptr) run.step("grad_input", "x.grad = dL/dx", to_array(*d_input));
  visit_parameters(grad, [&](const std::string& key, float* data, const Shape& shape) {
    run.step("grad." + key, key + ".grad",
             make_float32(shape, std::vector<float>(data, data + element_count(shape))));
    run.parameters += static_cast<std::int64_t>(element_count(shape));
  });
  return run;
}

// The models whose input is hidden states (B,T,D): the weights (initialised from `rng`, or
// loaded), X, the forward (`run` gives the steps, whose `output` is y), G and the backward.
template <class Layer, class Run>
LessonRun hidden_state_gradients(std::string_view name, const ModelRequest& r,
                                 const GradientRequest& g, Rng& rng, Layer layer,
                                 const Module& module, std::size_t width, Run run) {
  load_weights(layer, module, g);
  const Tensor3 x = float_input(r, g, rng, width);
  const auto steps = run(layer, x);
  const Tensor3 dy = gradient_of(steps.output, g, rng);
  Layer grad = zeros_like(layer);
  const Tensor3 dx = backward(layer, x, steps, dy, grad);
  return gradient_run(name, g, to_array(x), steps.output, dy, &dx, grad);
}

// forward(layer, x) of the attention layers, which take a mask: none here.
inline constexpr auto unmasked = [](const auto& layer, const Tensor3& x) {
  return forward(layer, x, nullptr);
};
inline constexpr auto plain = [](const auto& layer, const Tensor3& x) { return forward(layer, x); };

// nn.Embedding(rows, D) on ids: the table's gradient only.
LessonRun table_gradients(std::string_view model, const Module& module, Embedding layer,
                          const Ids& ids, const GradientRequest& g, Rng& rng);

}  // namespace attn::lessons
