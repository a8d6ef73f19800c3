// The lesson catalog: the only list of lessons. The CLI's subcommands, `attn list`, the models of
// `attn summary` and the tests that cover every lesson all iterate it; adding a lesson is its
// folder and one entry here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/config.hpp"
#include "lesson.hpp"
#include "module.hpp"
#include "summary.hpp"
#include "trace.hpp"

namespace attn::lessons {

// The sizes and choices of `attn summary MODEL`; 0 and "" are the lesson's own defaults, so that
// a summary describes the module the lesson runs.
struct ModelRequest {
  std::size_t batch = 1, seq = 5;
  std::size_t d_model = 0, heads = 0, head_size = 0, d_ff = 0, vocab_size = 0, max_positions = 0,
              layers = 0;
  std::string variant, kind, norm;
  std::optional<EncoderConfig> config;  // the encoder's config.json, already read
  bool embeddings = true;
};

// What `attn summary` prints for a module: its tree, torchinfo's rows for one call and the call's
// inputs (empty: one float32 input (B, T, D)).
struct ModelDescription {
  Module module;
  std::vector<LayerInfo> layers;
  std::vector<SummaryInput> inputs;
};

// For check_budget before a backward run, from the model's description (shapes only): the
// weights, their gradients and their copy in the result; the input and its gradient; every
// executed layer's output, kept for the backward, and its gradient.
MemoryPlan plan_backward(const ModelDescription& d);

// What `attn backward --model` feeds a model: its weights, its input and the gradient of its
// output, each from a file or drawn from the seed (weights: PyTorch's initialisation; X and G:
// N(0, 1) draws; ids: uniform over the vocabulary).
struct GradientRequest {
  std::uint64_t seed = 0;
  std::optional<StateDict> weights;
  std::string weights_name;
  std::optional<Array> input, grad_output;  // --input, --grad-output, already read
  std::string input_name, grad_output_name;
};

struct ModelInfo {
  std::string_view name;  // `attn summary NAME`
  std::string_view help;  // one line
  // The request's fields it reads besides batch and seq, named as their options are in snake
  // case ("d_model", "heads"): `attn summary` refuses the others.
  std::vector<std::string_view> takes;
  ModelDescription (*describe)(const ModelRequest& request);
  // `y.backward(G)` in PyTorch terms: a run whose steps are the input, the output, G, the
  // input's gradient (float inputs only: ids have none) and "grad.<state_dict key>" for every
  // parameter, in state_dict order. Throws attn::Error about "input", "grad_output" or "weights"
  // when a file does not fit the model.
  LessonRun (*differentiate)(const ModelRequest& request, const GradientRequest& gradient);
};

struct LessonInfo {
  int number;
  std::string_view name;     // subcommand: "dot-product"
  std::string_view summary;  // one line for `attn --help` and `attn list`
  // Command lines (the words after `attn <name>`) that show the lesson beyond its defaults, at
  // sizes where OpenBLAS splits its products: `attn <name> --help` shows them, and the tests run
  // every one.
  std::vector<std::vector<std::string_view>> examples;
  // The PyTorch modules of the lesson that `attn summary` describes.
  std::vector<ModelInfo> models;
};

// Every lesson, in course order.
const std::vector<LessonInfo>& catalog();
// The catalog entry of a lesson by its subcommand name; throws attn::Error when there is none.
const LessonInfo& lesson_info(std::string_view name);

}  // namespace attn::lessons
