#pragma once

#include <optional>
#include <string>
#include <vector>

#include "05-multi-head/head_ablation_lesson.hpp"
#include "lesson.hpp"

namespace attn::lessons {

struct MultiHeadLessonOptions {
  LessonOptions common;
  std::string variant = "compare";  // narrow, wide, book, fused, or compare (all four)
  std::size_t heads = 2;
  bool causal = false;
  std::vector<std::size_t> lengths;
  std::optional<StateDict> weights;  // --weights, already read (one variant only)
  std::string weights_name;
  std::optional<TrainedSource> trained;       // --checkpoint: the book's layer of a trained model
  std::optional<HeadAblationInput> ablation;  // and the whole model: its heads ablated
  std::vector<std::string> tokens;  // --pretrained: the input's tokens, the heatmaps' labels
  std::string pretrained;           // --pretrained: "DIR, layer N", the layer these weights are
  bool pretrained_gpt2 = false;     // the layer is a GPT-2 block (a BERT layer otherwise)
};

// Lesson 05: multi-head attention in the notebooks' four forms, side by side or step by step.
LessonRun run_multi_head(const MultiHeadLessonOptions& options);

}  // namespace attn::lessons
