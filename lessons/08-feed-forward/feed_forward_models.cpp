// Lesson 08's model for `attn summary` and `attn backward --model`: the book's FeedForward(D, F),
// or seed 001's and seed 000's.
#include "08-feed-forward/feed_forward_models.hpp"

#include "08-feed-forward/feed_forward_lesson.hpp"
#include "feed_forward.hpp"
#include "models.hpp"

namespace attn::lessons {

ModelDescription feed_forward_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t hidden = or_default(r.d_ff, 4 * width);
  const std::string name = r.variant.empty() ? FeedForwardLessonOptions{}.variant : r.variant;
  const std::optional<FeedForwardVariant> variant = feed_forward_variant(name);
  if (!variant) throw unknown_variant("feed-forward", name, "book, relu or gelu-last");
  const Shape x = hidden_states(r, width);
  return {describe_feed_forward(*variant, width, hidden),
          trace_feed_forward(*variant, width, hidden, x),
          {{x, kFloat32}}};
}

LessonRun feed_forward_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t hidden = or_default(r.d_ff, 4 * width);
  const std::string name = r.variant.empty() ? FeedForwardLessonOptions{}.variant : r.variant;
  const std::optional<FeedForwardVariant> variant = feed_forward_variant(name);
  if (!variant) throw unknown_variant("feed-forward", name, "book, relu or gelu-last");
  Rng rng(g.seed);
  return hidden_state_gradients("feed-forward", r, g, rng,
                                init_feed_forward(rng, *variant, width, hidden),
                                describe_feed_forward(*variant, width, hidden), width, plain);
}

}  // namespace attn::lessons
