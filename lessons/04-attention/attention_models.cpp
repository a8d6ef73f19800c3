// Lesson 04's models for `attn summary` and `attn backward --model`: seed 004's SelfAttention(D),
// seed 000's AttentionHead(D, hs).
#include "04-attention/attention_models.hpp"

#include "attention.hpp"
#include "models.hpp"

namespace attn::lessons {

ModelDescription self_attention_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const Shape x = hidden_states(r, width);
  return {describe_self_attention(width), trace_self_attention(width, x), {{x, kFloat32}}};
}

ModelDescription attention_head_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t hs = or_default(r.head_size, width);  // the lesson's --head-size default
  const Shape x = hidden_states(r, width);
  return {describe_attention_head(width, hs), trace_attention_head(width, hs, x), {{x, kFloat32}}};
}

LessonRun self_attention_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  Rng rng(g.seed);
  return hidden_state_gradients("self-attention", r, g, rng, init_self_attention(rng, width),
                                describe_self_attention(width), width, unmasked);
}

LessonRun attention_head_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t hs = or_default(r.head_size, width);
  Rng rng(g.seed);
  return hidden_state_gradients("attention-head", r, g, rng, init_attention_head(rng, width, hs),
                                describe_attention_head(width, hs), width, unmasked);
}

}  // namespace attn::lessons
