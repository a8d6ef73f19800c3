#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "layer_norm.hpp"
#include "lesson.hpp"

namespace attn::lessons {

struct EncoderLessonOptions {
  LessonOptions common;  // seed; batch, seq and --input for hidden-state input (--no-embeddings)
  EncoderConfig config;  // resolved: --config, then the command-line sizes
  std::string config_name = "built-in tiny config";
  NormPlacement placement = NormPlacement::pre;
  bool embeddings = true;
  // Token input (with embeddings): ids (B,T), from --ids, --ids-file or --text.
  std::vector<std::vector<std::int64_t>> ids;
  std::vector<std::string> tokens;  // when the ids came from --text
  std::size_t show_layer = 0;
  std::optional<StateDict> weights;
  std::string weights_name;
};

// Lesson 09: the book's encoder, embeddings and a stack of layers, one layer shown step by step.
LessonRun run_encoder(const EncoderLessonOptions& options);

}  // namespace attn::lessons
