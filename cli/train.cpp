// attn train: lesson 11. Trains the book's encoder with a per-token head on a toy task
// (core/tasks.hpp), shows the progress and the time on a terminal's stderr (stdout stays the same
// from run to run), and saves the checkpoint as .safetensors with the task and the config in its
// metadata.
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "11-train/train_lesson.hpp"
#include "command.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "output.hpp"
#include "save.hpp"
#include "state_dict.hpp"
#include "training.hpp"
#include "weights.hpp"

namespace attn::cli {

namespace {

struct TrainCliOptions {
  TrainConfig config;
  std::string task = "reverse";
  std::string norm = "pre";
  std::string checkpoint;
  bool vocab_given = false;
  render::OutputOptions output;
};

// "reverse, sort, histogram or previous-token"
std::string task_words() {
  std::string words;
  const auto& tasks = task_list();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0) words += i + 1 == tasks.size() ? " or " : ", ";
    words += tasks[i].name;
  }
  return words;
}

// The checkpoint's metadata: everything needed to rebuild the model and read its tokens.
Metadata checkpoint_metadata(const TrainConfig& c, const Evaluation& e) {
  nlohmann::ordered_json config = {{"task", std::string(task_info(c.task).name)},
                                   {"vocab", c.sizes.vocab},
                                   {"tokens", c.sizes.tokens},
                                   {"classes", task_classes(c.task, c.sizes)},
                                   {"layers", c.layers},
                                   {"d_model", c.d_model},
                                   {"heads", c.heads},
                                   {"d_ff", c.d_ff},
                                   {"norm", c.norm == NormPlacement::pre ? "pre" : "post"}};
  nlohmann::ordered_json training = {{"steps", c.steps},
                                     {"batch", c.batch},
                                     {"lr", c.lr},
                                     {"weight_decay", c.weight_decay},
                                     {"dropout", c.dropout},
                                     {"seed", c.seed},
                                     {"held_out", c.held_out},
                                     {"optimizer", "AdamW"},
                                     {"schedule", "5% warm-up, cosine"},
                                     {"token_accuracy", e.token_accuracy},
                                     {"sequence_accuracy", e.sequence_accuracy}};
  return {{"attn_model", config.dump()}, {"attn_training", training.dump()}};
}

// On a terminal, one line rewritten in place: step, loss, accuracy, speed and time left.
class Progress {
 public:
  explicit Progress(std::size_t steps, bool shown) : steps_(steps), shown_(shown) {}
  void update(const TrainStep& s) {
    if (!shown_) return;
    const auto now = std::chrono::steady_clock::now();
    if (s.step != steps_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = static_cast<double>(s.step) / std::max(seconds, 1e-9);
    const std::string line = fmt::format(
        "\r  step {:>{}}/{}  loss {:.4f}  accuracy {:5.1f}%  {:.0f} steps/s  {:.1f} s left ",
        s.step, std::to_string(steps_).size(), steps_, s.loss, 100.0 * s.accuracy, rate,
        static_cast<double>(steps_ - s.step) / std::max(rate, 1e-9));
    std::fputs(line.c_str(), stderr);
    if (s.step == steps_) std::fputs("\n", stderr);
    std::fflush(stderr);
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::size_t steps_;
  bool shown_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

int run_train(TrainCliOptions& o, const Context& context) {
  TrainConfig& c = o.config;
  const auto task = task_named(o.task);
  if (!task)
    throw Error(ErrorKind::bad_value, "train",
                fmt::format("'{}' is not a task: use {}", o.task, task_words()))
        .about("task");
  c.task = *task;
  if (c.task == Task::masked) {
    if (o.vocab_given)
      throw Error(ErrorKind::bad_value, "train",
                  fmt::format("the masked task's {} tokens are fixed (a to z, the space and the "
                              "mask '?'): drop --vocab",
                              kTextTokens))
          .about("vocab");
    c.sizes.vocab = kTextTokens;
  }
  c.norm = o.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  check_train_config(c);
  check_budget("train", plan_training(c));
  if (!o.checkpoint.empty()) {
    if (!o.checkpoint.ends_with(".safetensors"))
      throw Error(ErrorKind::bad_value, "train",
                  fmt::format("'{}': checkpoints are .safetensors files; name it *.safetensors",
                              o.checkpoint))
          .about("save_checkpoint");
    render::OutputOptions checkpoint;
    checkpoint.save_weights = o.checkpoint;
    try {
      render::check_outputs(checkpoint);
    } catch (const Error& e) {
      throw Error(e.kind(), e.function(), e.detail()).about("save_checkpoint");
    }
  }
  cli::check_outputs(o.output);
  keep_freed_memory();
  const bool shown =
      o.output.format == render::Format::text && !o.output.quiet && isatty(STDERR_FILENO) != 0;
  Progress progress(c.steps, shown);
  lessons::TrainLessonOptions lesson{c, [&](const TrainStep& s) { progress.update(s); }};
  lessons::TrainLessonResult result = lessons::run_train(lesson);
  if (shown) {
    const double seconds = progress.seconds();
    std::fputs(fmt::format("  trained {} steps in {:.1f} s ({:.0f} steps/s)\n", c.steps, seconds,
                           static_cast<double>(c.steps) / std::max(seconds, 1e-9))
                   .c_str(),
               stderr);
  }
  if (!o.checkpoint.empty()) {
    write_weights(o.checkpoint, collect_state_dict(result.model),
                  checkpoint_metadata(c, result.held_out));
  }
  return publish(result.run, o.output, context);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<TrainCliOptions>();
  CLI::App* sub = add_lesson_command(app, "train");
  sub->add_option("--task", o->task, fmt::format("{} (default reverse)", task_words()))
      ->check(not_empty_validator("--task", "reverse"))
      ->option_text("NAME");
  // A whole-number option from `min` to `max`.
  const auto size = [sub](const char* name, std::size_t& value, const char* help, long long min,
                          long long max, const char* text) {
    sub->add_option(name, value, help)->check(whole_number_validator(min, max))->option_text(text);
  };
  size("--tokens", o->config.sizes.tokens, "T, tokens per sequence (default 8)", 2, 64, "T");
  size("--vocab", o->config.sizes.vocab,
       "V, the letters a.. the task uses (default 8; masked: fixed)", 2, 26, "V");
  size("--layers", o->config.layers, "encoder layers (default 2)", 1, 64, "L");
  size("--d-model", o->config.d_model, "D, the model width (default 32)", 1, 4096, "D");
  size("--heads", o->config.heads, "H, heads per layer (default 2)", 1, 256, "H");
  size("--d-ff", o->config.d_ff, "F, the feed-forward width (default 64)", 1, 16384, "F");
  sub->add_option("--norm", o->norm, "pre (default, the book) or post (the paper, BERT)")
      ->check(choice_validator("a norm placement", {"pre", "post"}))
      ->option_text("pre|post");
  size("--steps", o->config.steps, "training steps (default 1000)", 1, 10'000'000, "N");
  size("--batch", o->config.batch, "B, sequences per step (default 32)", 1, 65536, "B");
  sub->add_option("--lr", o->config.lr, "AdamW's peak learning rate (default 0.003)")
      ->check(real_validator("a learning rate", 1e-8, 10.0, "0.003"))
      ->option_text("LR");
  sub->add_option("--dropout", o->config.dropout,
                  "p of the embeddings' and feed-forwards' dropout while training (default 0)")
      ->check(real_validator("a dropout probability", 0.0, 0.95, "0.1"))
      ->option_text("P");
  sub->add_option("--seed", o->config.seed, "the seed of the weights and batches (default 0)")
      ->check(seed_validator())
      ->option_text("N");
  sub->add_option("--save-checkpoint", o->checkpoint,
                  "write the trained model as FILE.safetensors, its task and sizes in the metadata")
      ->check(not_empty_validator("--save-checkpoint", "reverse.safetensors"))
      ->option_text("FILE");
  add_output_options(*sub, o->output);
  add_heatmap_option(*sub, o->output);
  sub->callback([o, sub, &context] {
    o->vocab_given = sub->count("--vocab") > 0;
    context.exit_code = run_train(*o, context);
  });
}

const Registration kRegistration{"train", setup};

}  // namespace

}  // namespace attn::cli
