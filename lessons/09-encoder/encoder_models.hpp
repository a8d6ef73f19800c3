// Lesson 09's models for `attn summary` and `attn backward --model`: the book's Embeddings and
// TransformerEncoder, from a config.
#pragma once

#include "catalog.hpp"

namespace attn::lessons {

ModelDescription embeddings_model(const ModelRequest& request);
ModelDescription encoder_model(const ModelRequest& request);
LessonRun embeddings_gradients(const ModelRequest& request, const GradientRequest& gradient);
LessonRun encoder_gradients(const ModelRequest& request, const GradientRequest& gradient);

}  // namespace attn::lessons
