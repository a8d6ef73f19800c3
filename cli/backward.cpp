// attn backward: lesson 10, and with --model NAME `y.backward(G)` on any model of the catalog:
// the input's and every parameter's gradient, printed and saved (--save DIR) as
// grad_input.npy and grad.<state_dict key>.npy.
#include <memory>
#include <string>

#include "09-encoder/encoder_models.hpp"
#include "10-backward/backward_lesson.hpp"
#include "base/budget.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "io/npy.hpp"
#include "lesson_io.hpp"
#include "mine_option.hpp"
#include "models.hpp"
#include "options.hpp"
#include "pretrained.hpp"

namespace attn::cli {

namespace {

struct BackwardCliOptions {
  LessonCliOptions lesson;
  std::string model, weights, grad_output;
  ModelCliOptions models;
  CheckpointCliOptions pretrained;  // --pretrained, --text, --pair, --layer
  bool mine = false;
};

// --grad-output, when given.
void read_grad_output(const std::string& path, lessons::GradientRequest& gradient) {
  if (path.empty()) return;
  try {
    gradient.grad_output = read_npy(path);
  } catch (const Error& e) {
    throw Error(e.kind(), e.function(), e.detail()).about("grad_output");
  }
  gradient.grad_output_name = path;
}

// --pretrained: one layer of a BERT folder on what it reads for --text (--pair).
int run_pretrained(BackwardCliOptions& o, const CLI::App& sub, Context& context) {
  if (is_gpt2(open_folder(o.pretrained.pretrained)))
    throw Error(ErrorKind::bad_value, "backward",
                fmt::format("'{}' is a GPT-2 folder: backward --pretrained takes a BERT layer (a "
                            "post-LN encoder layer); give a BERT folder such as bert-base-uncased",
                            printable(o.pretrained.pretrained)))
        .about("pretrained");
  std::optional<PretrainedLayer> p = pretrained_layer(
      sub, o.pretrained,
      {"--model", "--weights", "--input", "--batch", "--seq", "--d-model", "--config", "--heads",
       "--d-ff", "--layers", "--variant", "--norm", "--no-embeddings", "--kind", "--head-size",
       "--vocab-size", "--max-positions"},
      "backward");
  lessons::GradientRequest gradient;
  gradient.seed = o.lesson.lesson.seed;
  read_grad_output(o.grad_output, gradient);
  EncoderConfig config;
  config.hidden_size = p->x.shape(2);
  config.num_attention_heads = p->layer.attention.heads.size();
  config.intermediate_size = p->layer.feed_forward.linear_1.weight.shape(0);
  check_budget("backward", lessons::plan_bert_layer_gradients(config, p->x.shape(1)));
  lessons::LessonRun run =
      lessons::bert_layer_gradients(p->layer, o.pretrained.layer, p->x, gradient);
  run.setting("pretrained", p->source);
  return publish(run, o.lesson.output, context);
}

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
  read_grad_output(o.grad_output, gradient);
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
  sub->add_option("--pretrained", o->pretrained.pretrained,
                  "y.backward(G) on one layer of a Hugging Face BERT folder (or a name in the "
                  "Hugging Face cache), on what it reads for --text")
      ->check(not_empty_validator("--pretrained", "bert-base-uncased"))
      ->option_text("DIR");
  sub->add_option("--text", o->pretrained.text,
                  "with --pretrained: the sentence (default: time flies like an arrow)")
      ->check(not_empty_validator("--text", "'time flies'"))
      ->option_text("TEXT");
  sub->add_option("--pair", o->pretrained.pair,
                  "with --pretrained: a second sentence, [CLS] A [SEP] B [SEP]")
      ->check(not_empty_validator("--pair", "'fruit flies like a banana'"))
      ->option_text("TEXT");
  sub->add_option("--layer", o->pretrained.layer, "with --pretrained: the layer (default 0)")
      ->check(CLI::NonNegativeNumber)
      ->option_text("L");
  add_mine_option(*sub, o->mine);
  door_callback(*sub, [o, sub, &context] {
    if (o->mine && (!o->pretrained.pretrained.empty() || !o->model.empty())) {
      throw Error(ErrorKind::bad_value, "backward",
                  "it runs your softmax_backward on the lesson's own head: drop --model and "
                  "--pretrained")
          .about("mine");
    }
    if (!o->pretrained.pretrained.empty()) {
      context.exit_code = run_pretrained(*o, *sub, context);
      return;
    }
    for (const char* name : {"--text", "--pair", "--layer"})
      if (sub->count(name) > 0)
        throw Error(ErrorKind::bad_value, "backward",
                    fmt::format("{} is for `attn backward --pretrained DIR`: add --pretrained, or "
                                "drop {}",
                                name, name))
            .about(std::string(name).substr(2));
    load_lesson_input(o->lesson, context);
    if (!o->model.empty()) {
      context.exit_code = run_model(*o, *sub, context);
      return;
    }
    refuse_model_options(*sub);
    lessons::LessonRun run = lessons::run_backward(o->lesson.lesson);
    add_mine_steps(run, o->mine);
    context.exit_code = publish(run, o->lesson.output, context);
  });
}

const Registration kRegistration{"backward", setup};

}  // namespace

}  // namespace attn::cli
