#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bert.hpp"
#include "io/config.hpp"
#include "layer_norm.hpp"
#include "lesson.hpp"
#include "linear.hpp"

namespace attn::lessons {

// A checkpoint of `attn train`: its per-token head and what its task asks, to show what the
// trained encoder outputs beside what it should.
struct TrainedHead {
  Linear head;                           // Linear(D, C)
  std::vector<std::string> class_names;  // C: how each output class prints
  std::vector<std::string> expected;     // sequence 0's right answer per token, "" when unknown
  std::vector<bool> asked;  // per token, whether the task asks for an output there (all if empty)
  std::string task, description, pattern, checkpoint;
  TrainedSource measured;  // every layer's heads against the task's keys (lessons/trained.hpp)
};

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
  std::optional<TrainedHead> trained;  // --checkpoint
  std::string ablated;  // with heads ablated: which, and the held-out accuracy with and without
};

// Lesson 09: the book's encoder, embeddings and a stack of layers, one layer shown step by step.
LessonRun run_encoder(const EncoderLessonOptions& options);

// Lesson 09 on a real model: a Hugging Face BERT folder (--pretrained) on one sequence, its
// hidden states and attentions named as transformers' outputs name them.
struct BertLessonOptions {
  const Bert* model = nullptr;
  const Vocabulary* vocab = nullptr;  // the folder's, to name the predicted tokens
  std::string name;                   // the folder as given
  BertInput input;                    // ids (1,T), token types, no padding
  std::vector<std::string> tokens;    // T
  std::size_t pair_split = 0;         // the second sentence's first token; 0 for one sentence
  std::size_t show_layer = 0;         // whose attention maps are drawn
};
// What run_bert holds beside the model, for check_budget: the forward, the steps it shows.
MemoryPlan plan_bert_lesson(const BertConfig& config, BertHeads heads, std::size_t tokens);
LessonRun run_bert(const BertLessonOptions& options);

}  // namespace attn::lessons
