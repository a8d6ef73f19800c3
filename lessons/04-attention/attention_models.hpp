// Lesson 04's models for `attn summary` and `attn backward --model`: seed 004's SelfAttention(D),
// seed 000's AttentionHead(D, hs).
#pragma once

#include "catalog.hpp"

namespace attn::lessons {

ModelDescription self_attention_model(const ModelRequest& request);
ModelDescription attention_head_model(const ModelRequest& request);
LessonRun self_attention_gradients(const ModelRequest& request, const GradientRequest& gradient);
LessonRun attention_head_gradients(const ModelRequest& request, const GradientRequest& gradient);

}  // namespace attn::lessons
