// Lesson 05's model for `attn summary` and `attn backward --model`: MultiHeadAttention, the book's
// form unless --variant says otherwise (the compare view's output).
#include "05-multi-head/multi_head_models.hpp"

#include "05-multi-head/multi_head_lesson.hpp"
#include "models.hpp"
#include "multi_head.hpp"

namespace attn::lessons {

ModelDescription multi_head_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t heads = or_default(r.heads, MultiHeadLessonOptions{}.heads);
  const std::string name = r.variant.empty() ? "book" : r.variant;
  const std::optional<MultiHeadVariant> variant = multi_head_variant(name);
  if (!variant) throw unknown_variant("multi-head", name, "narrow, wide, book or fused");
  const Shape x = hidden_states(r, width);
  return {describe_multi_head(*variant, width, heads),
          trace_multi_head(*variant, width, heads, x),
          {{x, kFloat32}}};
}

LessonRun multi_head_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t heads = or_default(r.heads, MultiHeadLessonOptions{}.heads);
  const std::string name = r.variant.empty() ? "book" : r.variant;
  const std::optional<MultiHeadVariant> variant = multi_head_variant(name);
  if (!variant) throw unknown_variant("multi-head", name, "narrow, wide, book or fused");
  Rng rng(g.seed);
  return hidden_state_gradients("multi-head", r, g, rng,
                                init_multi_head(rng, *variant, width, heads),
                                describe_multi_head(*variant, width, heads), width, unmasked);
}

}  // namespace attn::lessons
