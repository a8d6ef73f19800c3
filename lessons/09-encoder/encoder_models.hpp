// Lesson 09's models for `attn summary` and `attn backward --model`: the book's Embeddings and
// TransformerEncoder, from a config.
#pragma once

#include "catalog.hpp"
#include "encoder.hpp"

namespace attn::lessons {

ModelDescription embeddings_model(const ModelRequest& request);
ModelDescription encoder_model(const ModelRequest& request);
LessonRun embeddings_gradients(const ModelRequest& request, const GradientRequest& gradient);
LessonRun encoder_gradients(const ModelRequest& request, const GradientRequest& gradient);

// `attn backward --pretrained`: y = encoder.layer.<index>(x) of a BERT, then y.backward(G); the
// gradients under transformers' keys. G from the request (--grad-output) or N(0, 1) draws.
LessonRun bert_layer_gradients(const EncoderLayer& layer, std::size_t index, const Tensor3& x,
                               const GradientRequest& gradient);
// For check_budget: that run on x (B,T,D) beside the layer.
MemoryPlan plan_bert_layer_gradients(const EncoderConfig& config, std::size_t tokens);

}  // namespace attn::lessons
