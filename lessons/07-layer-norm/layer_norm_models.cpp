// Lesson 07's model for `attn summary` and `attn backward --model`: nn.LayerNorm(D), or seed 001's
// LayerNormalization.
#include "07-layer-norm/layer_norm_models.hpp"

#include "07-layer-norm/layer_norm_lesson.hpp"
#include "layer_norm.hpp"
#include "models.hpp"
#include "trace.hpp"

namespace attn::lessons {

ModelDescription layer_norm_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::string variant = r.variant.empty() ? LayerNormLessonOptions{}.variant : r.variant;
  const Shape x = hidden_states(r, width);
  if (variant == "torch")
    return {describe_layer_norm(width), trace_layer_norm(width, x), {{x, kFloat32}}};
  if (variant != "seed001") throw unknown_variant("layer-norm", variant, "torch or seed001");
  const Module norm = describe_layer_normalization();
  Trace trace;
  trace_layer_norm(trace, norm, x);
  return {norm, trace.layers(), {{x, kFloat32}}};
}

LessonRun layer_norm_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::string variant = r.variant.empty() ? LayerNormLessonOptions{}.variant : r.variant;
  Rng rng(g.seed);
  if (variant == "torch")
    return hidden_state_gradients("layer-norm", r, g, rng, init_layer_norm(width),
                                  describe_layer_norm(width), width, plain);
  if (variant != "seed001") throw unknown_variant("layer-norm", variant, "torch or seed001");
  return hidden_state_gradients("layer-norm", r, g, rng, init_layer_normalization(),
                                describe_layer_normalization(), width, plain);
}

}  // namespace attn::lessons
