// attn backward: lesson 10, and with --model NAME `y.backward(G)` on any model of the catalog:
// the input's and every parameter's gradient, printed and saved (--save DIR) as
// grad_input.npy and grad.<state_dict key>.npy.
#include <memory>
#include <string>

#include "10-backward/backward_lesson.hpp"
#include "base/budget.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "io/npy.hpp"
#include "lesson_io.hpp"
#include "models.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct BackwardCliOptions {
  LessonCliOptions lesson;
  std::string model, weights, grad_output;
  ModelCliOptions models;
};

// An option only --model reads, given without it: refused, never ignored.
void refuse_model_options(const CLI::App& sub) {
  for (const char* name : {"--weights", "--grad-output"})
    if (sub.count(name) > 0)
      throw Error(ErrorKind::bad_value, "backward",
                  fmt::format("{} is for `attn backward --model NAME`: add --model "
                              "(e.g. multi-head), or drop {}",
                              name, name))
          .about(std::string(name).substr(2));
  if (any_model_option(sub))
    throw Error(ErrorKind::bad_value, "backward",
                "the model's sizes and variants are for `attn backward --model NAME`: "
                "add --model (e.g. multi-head), or drop them")
        .about("model");
}

int run_model(BackwardCliOptions& o, const CLI::App& sub, Context& context) {
  const lessons::ModelInfo& model = find_model(o.model, "backward");
  if (model.differentiate == nullptr)
    throw Error(ErrorKind::bad_value, "backward",
                fmt::format("--model {} has a summary but no backward from the command line: its "
                            "gradients are held to PyTorch in tests/core/transformer_test.cpp; "
                            "pick another model",
                            o.model))
        .about("model");
  refuse_other_options(sub, model, "backward", "backward --model");
  lessons::ModelRequest request = resolved_request(o.models);
  request.batch = o.lesson.lesson.batch;
  request.seq = o.lesson.lesson.seq;
  if (o.lesson.width_option->count() > 0) request.d_model = o.lesson.lesson.d_model;
  lessons::GradientRequest gradient;
  gradient.seed = o.lesson.lesson.seed;
  gradient.input = o.lesson.lesson.input;
  gradient.input_name = o.lesson.input_path;
  if (!o.weights.empty()) {
    gradient.weights = load_weights_file(o.weights, context);
    gradient.weights_name = o.weights;
  }
  if (!o.grad_output.empty()) {
    try {
      gradient.grad_output = read_npy(o.grad_output);
    } catch (const Error& e) {
      throw Error(e.kind(), e.function(), e.detail()).about("grad_output");
    }
    gradient.grad_output_name = o.grad_output;
  }
  check_budget("backward", lessons::plan_backward(model.describe(request)));
  return publish(model.differentiate(request, gradient), o.lesson.output, context);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<BackwardCliOptions>();
  CLI::App* sub = add_lesson_command(app, "backward");
  add_lesson_options(*sub, o->lesson,
                     "(B, T, D), or int64 ids (B, T) for a --model that reads ids");
  sub->add_option("--model", o->model,
                  "y.backward(G) on a model of `attn summary`: " + model_names())
      ->check(not_empty_validator("--model", "multi-head"))
      ->option_text("NAME");
  sub->add_option("--weights", o->weights,
                  "with --model: a .safetensors or .npz keyed like its state_dict (default: "
                  "PyTorch's initialisation from --seed)")
      ->check(not_empty_validator("--weights", "w.safetensors"))
      ->option_text("FILE");
  sub->add_option("--grad-output", o->grad_output,
                  "with --model: G, a float32 .npy of the output's shape (default: N(0, 1) draws)")
      ->check(not_empty_validator("--grad-output", "g.npy"))
      ->option_text("FILE.npy");
  add_model_options(*sub, o->models, false);
  door_callback(*sub, [o, sub, &context] {
    load_lesson_input(o->lesson, context);
    if (!o->model.empty()) {
      context.exit_code = run_model(*o, *sub, context);
      return;
    }
    refuse_model_options(*sub);
    context.exit_code = publish(lessons::run_backward(o->lesson.lesson), o->lesson.output, context);
  });
}

const Registration kRegistration{"backward", setup};

}  // namespace

}  // namespace attn::cli
