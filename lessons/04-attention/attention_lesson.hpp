#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lesson.hpp"

namespace attn::lessons {

struct AttentionLessonOptions {
  LessonOptions common;
  std::string variant =
      "self-attention";  // seed 004's SelfAttention, or "head": seed 000's AttentionHead
  std::optional<std::size_t> head_size;  // head: its output size (default D)
  bool causal = false;
  std::vector<std::size_t> lengths;  // padding: sequence b has lengths[b] real tokens
  std::optional<StateDict> weights;  // --weights, already read
  std::string weights_name;
  std::optional<TrainedSource> trained;  // --checkpoint: weights, X and labels from a trained model
  std::size_t trained_head = 0;          // which of its heads
  std::vector<std::string> tokens;       // --pretrained: the input's tokens, the heatmaps' labels
  std::string pretrained;        // --pretrained: "DIR, layer N", the layer these weights are
  bool pretrained_gpt2 = false;  // the layer is a GPT-2 block (a BERT layer otherwise)
};

// Lesson 04: one head with learned projections, step by step: Q, K, V, scores, scaled scores,
// weights, output, with masks and the weights as a heatmap.
LessonRun run_attention(const AttentionLessonOptions& options);

}  // namespace attn::lessons
