// What the lessons' models have in common (models.hpp).
#include "models.hpp"

#include <cstdint>

#include "module_size.hpp"

namespace attn::lessons {

MemoryPlan plan_backward(const ModelDescription& d) {
  // The legend letters of an output's axes, as the lessons show them.
  const auto axes_of = [](const Shape& shape) -> std::string {
    if (shape.size() == 3) return "B T D";
    if (shape.size() == 4) return "B H T T";
    return "";
  };
  const std::size_t parameters = module_size(d.module).parameters.saturated();
  MemoryPlan plan = {
      {"the weights, their gradients and their copy", {3, parameters}, "", 4, Held::shown}};
  for (const SummaryInput& input : d.inputs) {
    Shape twice = input.shape;
    twice.insert(twice.begin(), 2);
    plan.push_back({"the input and its gradient", twice, " " + axes_of(input.shape),
                    input.element_size, Held::shown});
  }
  for (const LayerInfo& layer : d.layers) {
    if (!layer.executed || !layer.is_leaf || layer.output_shape.empty()) continue;
    Shape twice = layer.output_shape;
    twice.insert(twice.begin(), 2);
    plan.push_back({fmt::format("{}'s output and its gradient", layer.class_name), twice,
                    " " + axes_of(layer.output_shape), 4, Held::computing, 2});
  }
  return plan;
}

std::size_t or_default(std::size_t given, std::size_t lesson_default) {
  return given != 0 ? given : lesson_default;
}

Shape hidden_states(const ModelRequest& r, std::size_t width) {
  return {r.batch, r.seq, width};
}

Error unknown_variant(std::string_view model, const std::string& variant,
                      std::string_view choices) {
  return Error(ErrorKind::bad_value, "describe",
               fmt::format("'{}' is not a variant of {}: use {}", variant, model, choices))
      .about("variant");
}

Tensor3 float_input(const ModelRequest& r, const GradientRequest& g, Rng& rng, std::size_t width) {
  if (!g.input) return randn(rng, r.batch, r.seq, width);
  LessonOptions options;
  options.input = g.input;
  const Tensor3 x = lesson_input(options, "(B, T, D)", {0, 0, 0});
  if (x.shape(2) != width) {
    throw Error(ErrorKind::bad_size, "backward",
                fmt::format("'{}' is {} but the model is D = {} wide: give --d-model {} or an "
                            "input whose last axis is {}",
                            g.input_name, shape_string_of(x), width, x.shape(2), width))
        .about("input");
  }
  return x;
}

Ids id_input(const ModelRequest& r, const GradientRequest& g, Rng& rng, std::size_t rows) {
  if (!g.input) {
    Ids ids({r.batch, r.seq});
    for (std::int64_t& id : ids)
      id = static_cast<std::int64_t>(rng.uniform() * static_cast<double>(rows)) %
           static_cast<std::int64_t>(rows);
    return ids;
  }
  const Array& a = *g.input;
  if (a.rank() != 2 || (a.dtype != Dtype::int64 && a.dtype != Dtype::int32) || a.size() == 0)
    throw Error(ErrorKind::bad_value, "backward",
                fmt::format("'{}' is {} {}: this model reads token ids, an int64 array (B, T); "
                            "save them with numpy.save(path, ids.astype(numpy.int64))",
                            g.input_name, std::string(dtype_name(a.dtype)), shape_string(a.shape)))
        .about("input");
  Ids ids({a.shape[0], a.shape[1]});
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::int64_t id = a.integer(i);
    if (id < 0 || static_cast<std::size_t>(id) >= rows)
      throw Error(ErrorKind::bad_value, "backward",
                  fmt::format("'{}' holds the id {}, outside the model's {} rows (0 to {})",
                              g.input_name, id, rows, rows - 1))
          .about("input");
    ids.data()[i] = id;
  }
  return ids;
}

Tensor3 gradient_of(const Tensor3& output, const GradientRequest& g, Rng& rng) {
  if (!g.grad_output) return randn(rng, output.shape(0), output.shape(1), output.shape(2));
  const Array& a = *g.grad_output;
  const Shape want = {output.shape(0), output.shape(1), output.shape(2)};
  if (a.shape != want || a.dtype != Dtype::float32)
    throw Error(ErrorKind::bad_size, "backward",
                fmt::format("'{}' is {} {}, but the output it is the gradient of is float32 {}: "
                            "save G with the output's shape",
                            g.grad_output_name, std::string(dtype_name(a.dtype)),
                            shape_string(a.shape), shape_string(want)))
        .about("grad_output");
  return to_tensor<3>(a, "grad_output");
}

LessonRun table_gradients(std::string_view model, const Module& module, Embedding layer,
                          const Ids& ids, const GradientRequest& g, Rng& rng) {
  load_weights(layer, module, g);
  const Tensor3 y = forward(layer, ids);
  const Tensor3 dy = gradient_of(y, g, rng);
  Embedding grad = zeros_like(layer);
  backward(layer, ids, dy, grad);
  return gradient_run(model, g, to_array(ids), y, dy, nullptr, grad);
}

}  // namespace attn::lessons
