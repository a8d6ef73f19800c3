// attn train: lesson 11. Trains a model on a task (core/train/trainer.hpp: the book's encoder
// with a head on every token, or with --model transformer seed 001's encoder-decoder), shows the
// progress and the time on a terminal's stderr (stdout stays the same from run to run), and saves
// the checkpoint as .safetensors with the task and the config in its metadata.
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "11-train/gpt_train_lesson.hpp"
#include "11-train/train_lesson.hpp"
#include "18-induction/induction_lesson.hpp"
#include "ablate.hpp"
#include "base/budget.hpp"
#include "command.hpp"
#include "door.hpp"
#include "image_file.hpp"
#include "io/file_io.hpp"
#include "io/weights.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "output.hpp"
#include "plot_image.hpp"
#include "pretrained.hpp"
#include "save.hpp"
#include "state_dict.hpp"
#include "train/trainer.hpp"

namespace attn::cli {

namespace {

struct TrainCliOptions {
  TrainConfig config;
  std::string task = "reverse";
  std::string model = "encoder";
  std::string norm = "pre";
  std::string checkpoint;
  std::string export_path;  // --export: the curves as a picture
  bool vocab_given = false;
  // --model gpt
  GptTrainConfig gpt;
  std::string corpus, tokenizer, resume;
  std::size_t stop_after = 0;
  bool attention_only = false;
  AblateCliOptions ablate;
  render::OutputOptions output;
};

// "reverse, sort, histogram or previous-token": the names of a task list.
template <class Tasks>
std::string names_of(const Tasks& tasks) {
  std::string words;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0) words += i + 1 == tasks.size() ? " or " : ", ";
    words += tasks[i].name;
  }
  return words;
}
std::string task_words() {
  return names_of(task_list());
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

// "reverse, sort or number-words"
std::string seq2seq_task_words() {
  return names_of(seq2seq_task_list());
}

// Every step's batch loss and accuracy (in %), as the run goes.
struct Curves {
  std::vector<double> losses, accuracies;
  void add(double loss, double accuracy) {
    losses.push_back(loss);
    accuracies.push_back(100.0 * accuracy);
  }
};

std::string norm_name(NormPlacement norm) {
  return norm == NormPlacement::pre ? "pre-LN" : "post-LN";
}

// The loss and accuracy panels, the held-out results marked on the accuracy's.
render::CurvePicture curves_picture(std::string title, std::string model, std::string run,
                                    const Curves& curves, std::vector<render::CurveMark> marks) {
  render::CurvePicture picture;
  picture.title = std::move(title);
  picture.subtitle = {std::move(model), std::move(run)};
  picture.panels.push_back({"loss (cross-entropy)", curves.losses, false, {}});
  picture.panels.push_back({"accuracy on the batch", curves.accuracies, true, std::move(marks)});
  return picture;
}

// --export: the picture's bytes, marked as attn's, for write_outputs.
render::FileOutput curves_file(const render::CurvePicture& picture, const std::string& path) {
  const std::string bytes = render::curve_image(picture, *render::image_format(path));
  return {path, "export", std::vector<unsigned char>(bytes.begin(), bytes.end())};
}

// On a terminal, a line for each file written.
void report_files(bool shown, const std::vector<render::FileOutput>& files) {
  if (!shown) return;
  for (const render::FileOutput& f : files)
    std::fputs(fmt::format("  wrote {} ({} bytes)\n", printable(f.path), f.bytes.size()).c_str(),
               stderr);
}

void report_time(bool shown, const Progress& progress, std::size_t steps) {
  if (!shown) return;
  const double seconds = progress.seconds();
  std::fputs(fmt::format("  trained {} steps in {:.1f} s ({:.0f} steps/s)\n", steps, seconds,
                         static_cast<double>(steps) / std::max(seconds, 1e-9))
                 .c_str(),
             stderr);
}

// The model's words on a picture: "the book's encoder with a head on every token: 2 layers, ...".
std::string model_words(const TrainConfig& c) {
  const std::string sizes = fmt::format("{} layers, D {}, {} heads, F {}, {}", c.layers, c.d_model,
                                        c.heads, c.d_ff, norm_name(c.norm));
  if (is_seq2seq(c.task)) return "seed 001's encoder-decoder: " + sizes;
  return "the book's encoder with a head on every token: " + sizes;
}

// The run's words on a picture: "300 steps of 32 sequences (T 8), AdamW at lr 0.003, seed 0".
std::string run_words(const TrainConfig& c) {
  if (is_seq2seq(c.task))
    return fmt::format("{} steps of {} pairs, AdamW at lr {:g}, seed {}", c.steps, c.batch, c.lr,
                       c.seed);
  return fmt::format("{} steps of {} sequences (T {}), AdamW at lr {:g}{}, seed {}", c.steps,
                     c.batch, c.sizes.tokens, c.lr,
                     c.dropout > 0.0f ? fmt::format(", dropout {:g}", c.dropout) : "", c.seed);
}

// --model and --task as the config's task; the options a model does not take are refused.
TrainTask train_task(const TrainCliOptions& o, const CLI::App& app) {
  if (o.model == "transformer") {
    for (const char* option : {"--tokens", "--vocab", "--dropout"})
      if (app.count(option) > 0)
        throw Error(ErrorKind::bad_value, "train",
                    fmt::format("{} is for --model encoder; the encoder-decoder's tasks fix their "
                                "vocabularies and lengths, and train without dropout: drop {}",
                                option, option))
            .about(std::string(option).substr(2));
    const auto task = seq2seq_task_named(o.task);
    if (!task)
      throw Error(ErrorKind::bad_value, "train",
                  fmt::format("'{}' is not a task of --model transformer: use {}", o.task,
                              seq2seq_task_words()))
          .about("task");
    return *task;
  }
  const auto task = task_named(o.task);
  if (!task)
    throw Error(ErrorKind::bad_value, "train",
                fmt::format("'{}' is not a task: use {}", o.task, task_words()))
        .about("task");
  if (*task == Task::masked && o.vocab_given)
    throw Error(ErrorKind::bad_value, "train",
                fmt::format("the masked task's {} tokens are fixed (a to z, the space and the "
                            "mask '?'): drop --vocab",
                            kTextTokens))
        .about("vocab");
  return *task;
}

// The options one model family takes and another does not, refused in one line each.
void refuse_options(const CLI::App& app, const std::vector<std::string>& options,
                    std::string_view why) {
  for (const std::string& option : options)
    if (app.count(option) > 0)
      throw Error(ErrorKind::bad_value, "train", fmt::format("{} {}: drop {}", option, why, option))
          .about(option.substr(2));
}

// --corpus FILE, or the shipped text.
std::pair<std::string, std::string> read_corpus(const std::string& path) {
  if (path.empty()) {
    const std::string shipped = shipped_corpus();
    const std::vector<unsigned char> bytes = read_file(shipped, "attn's shipped corpus");
    return {std::string(bytes.begin(), bytes.end()), "moby-dick.txt (shipped)"};
  }
  try {
    const std::vector<unsigned char> bytes =
        read_file(path, "a text file to train on (UTF-8, or any bytes with --tokenizer DIR)");
    return {std::string(bytes.begin(), bytes.end()), path};
  } catch (const Error& e) {
    throw Error(e.kind(), e.function(), e.detail()).about("corpus");
  }
}

// A loss with four decimals, and "-" when not a number.
std::string loss_text(double loss) {
  return std::isfinite(loss) ? fmt::format("{:.4f}", loss) : "-";
}

// On a terminal, a line rewritten in place for a GPT's step: its loss, the speed and the time.
void show_step(std::size_t step, std::size_t steps, std::size_t first, float loss,
               std::chrono::steady_clock::time_point start,
               std::chrono::steady_clock::time_point& shown_at) {
  const auto now = std::chrono::steady_clock::now();
  if (step != steps && now - shown_at < std::chrono::milliseconds(100)) return;
  shown_at = now;
  const double seconds = std::chrono::duration<double>(now - start).count();
  const double rate = static_cast<double>(step - first) / std::max(seconds, 1e-9);
  std::fputs(fmt::format("\r  step {:>{}}/{}  loss {:.4f}  {:.1f} steps/s  {:.1f} s ", step,
                         std::to_string(steps).size(), steps, loss, rate, seconds)
                 .c_str(),
             stderr);
  std::fflush(stderr);
}

// attn train --task induction: lesson 18's attention-only GPT on repeated random tokens.
int run_induction_train(TrainCliOptions& o, const CLI::App& app, const Context& context) {
  refuse_options(app,
                 {"--tokens", "--norm", "--dropout", "--d-ff", "--ablate", "--part", "--corpus",
                  "--tokenizer", "--resume", "--block", "--stop-after"},
                 "is not an option of --task induction, which trains an attention-only GPT on "
                 "repeated random tokens (its sizes: --vocab, --layers, --heads, --d-model)");
  InductionConfig c;
  const auto given = [&](const char* option) { return app.count(option) > 0; };
  if (given("--vocab")) c.vocab = o.config.sizes.vocab;
  if (given("--layers")) c.layers = o.config.layers;
  if (given("--d-model")) c.d_model = o.config.d_model;
  if (given("--heads")) c.heads = o.config.heads;
  if (given("--steps")) c.steps = o.config.steps;
  if (given("--batch")) c.batch = o.config.batch;
  if (given("--lr")) c.lr = o.config.lr;
  if (given("--seed")) c.seed = o.config.seed;
  if (given("--eval-interval")) c.eval_interval = o.gpt.eval_interval;
  if (c.layers < 2)
    throw Error(ErrorKind::bad_value, "train",
                "--layers 1: an induction head reads a previous-token head of an earlier layer, "
                "so it needs 2 layers at least: give --layers 2")
        .about("layers");
  check_induction_config(c);
  check_budget("train", plan_gpt_training(induction_model_config(c), c.batch, c.tokens));
  keep_freed_memory();
  const bool shown =
      o.output.format == render::Format::text && !o.output.quiet && isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  auto shown_at = start;
  lessons::InductionLessonOptions lesson;
  lesson.config = c;
  lesson.on_step = [&](std::size_t step, float loss) {
    if (shown) show_step(step, c.steps, 0, loss, start, shown_at);
  };
  lesson.on_evaluation = [&](const InductionEvaluation& e) {
    if (!shown) return;
    std::fputs(fmt::format("\r\x1b[K  step {}: loss {:.4f} on the first copy, {:.4f} on the "
                           "repeats ({:.1f} s)\n",
                           e.step, e.measure.first_loss, e.measure.repeat_loss, e.seconds)
                   .c_str(),
               stderr);
    std::fflush(stderr);
  };
  lessons::InductionLessonResult result = lessons::run_induction(std::move(lesson));
  if (shown) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fputs(fmt::format("  trained {} steps in {:.1f} s ({:.1f} steps/s)\n", c.steps, seconds,
                           static_cast<double>(c.steps) / std::max(seconds, 1e-9))
                   .c_str(),
               stderr);
  }
  std::vector<render::FileOutput> files;
  if (!o.checkpoint.empty()) {
    render::FileOutput folder{o.checkpoint, "save_checkpoint", {}};
    for (NamedFile& f : induction_checkpoint_files(result.model, c, result.history))
      folder.folder.emplace_back(std::move(f.name), std::move(f.bytes));
    files.push_back(std::move(folder));
  }
  if (!o.export_path.empty()) {
    render::CurvePicture picture;
    picture.title = "attn train --task induction: the phase change";
    picture.subtitle = {
        fmt::format("an attention-only GPT of {} layers, D {}, {} heads, on "
                    "repeated segments of {} to {} of {} random tokens",
                    c.layers, c.d_model, c.heads, c.min_period, c.max_period, c.vocab),
        fmt::format("{} steps of {} sequences, AdamW at lr {:g}, seed {}", c.steps, c.batch, c.lr,
                    c.seed)};
    // Each evaluation's values held to the next one, one value a step.
    const auto held = [&](auto value) {
      std::vector<double> out(result.losses.size(), std::nan(""));
      for (std::size_t i = 0; i < out.size(); ++i)
        for (const InductionEvaluation& e : result.history)
          if (e.step <= i + 1) out[i] = value(e);
      return out;
    };
    const std::size_t last = c.layers - 1, head = result.induction_head;
    picture.panels.push_back({"loss on each step's batch", result.losses, false, {}});
    picture.panels.push_back(
        {"held-out loss on the repeats",
         held([](const InductionEvaluation& e) { return e.measure.repeat_loss; }),
         false,
         {}});
    picture.panels.push_back({fmt::format("induction score of head {}.{} (%)", last, head),
                              held([&](const InductionEvaluation& e) {
                                return 100.0 * e.measure.induction[last][head].on_target;
                              }),
                              true,
                              {}});
    files.push_back(curves_file(picture, o.export_path));
  }
  const int code = publish(result.run, o.output, context, files);
  report_files(shown, files);
  return code;
}

int run_gpt(TrainCliOptions& o, const CLI::App& app, const Context& context) {
  refuse_options(app,
                 {"--task", "--vocab", "--tokens", "--norm", "--dropout", "--ablate", "--part"},
                 "is for --model encoder and transformer; a GPT learns its text (--corpus FILE) "
                 "without dropout, its length is --block");
  GptTrainConfig& c = o.gpt;
  if (o.attention_only && app.count("--d-ff") > 0)
    throw Error(ErrorKind::bad_value, "train",
                "--d-ff sizes the MLPs, which --attention-only leaves out: drop --d-ff")
        .about("d_ff");
  c.attention_only = o.attention_only;
  const auto given = [&](const char* option) { return app.count(option) > 0; };
  lessons::GptTrainLessonOptions lesson;
  if (given("--layers")) c.layers = o.config.layers;
  if (given("--d-model")) c.d_model = o.config.d_model;
  if (given("--heads")) c.heads = o.config.heads;
  if (given("--d-ff")) c.d_ff = o.config.d_ff;
  if (given("--steps")) c.steps = o.config.steps;
  if (given("--batch")) c.batch = o.config.batch;
  if (given("--lr")) c.lr = o.config.lr;
  if (given("--seed")) c.seed = o.config.seed;
  if (!o.resume.empty()) {
    refuse_options(app,
                   {"--layers", "--d-model", "--heads", "--d-ff", "--block", "--batch", "--lr",
                    "--seed", "--tokenizer", "--eval-interval", "--attention-only"},
                   "is the resumed run's own (its folder's training_state.safetensors)");
    try {
      PretrainedGpt2 folder = open_gpt2(open_folder(o.resume));
      const std::string state_path = folder.folder.path + "/training_state.safetensors";
      Metadata metadata;
      const StateDict state = read_weights(state_path, &metadata);
      GptResumed resumed = read_gpt_training_state(
          folder.config,
          check_gpt2_weights(folder.config, read_pretrained_weights(folder.folder, gpt2_reads),
                             folder.folder.shown),
          state, metadata, folder.folder.shown);
      const std::size_t steps = c.steps;
      c = resumed.config;
      if (given("--steps")) c.steps = steps;
      if (resumed.steps_done >= c.steps)
        throw Error(
            ErrorKind::bad_value, "train",
            fmt::format("'{}' has already trained {} steps of {}: give --steps above {} "
                        "to train on",
                        printable(o.resume), resumed.steps_done, c.steps, resumed.steps_done))
            .about("steps");
      lesson.tokenizer = saved_tokenizer(folder.folder.path, resumed.characters);
      lesson.tokenizer_name = o.resume;
      lesson.resumed = std::move(resumed);
      lesson.resumed_name = o.resume;
    } catch (const Error& e) {
      if (!e.subject().empty() && e.subject() != "pretrained") throw;
      throw Error(e.kind(), e.function(), e.detail()).about("resume");
    }
  } else {
    if (!given("--d-ff")) c.d_ff = 4 * c.d_model;
    check_gpt_train_config(c);
    if (!o.tokenizer.empty()) {
      try {
        lesson.tokenizer = folder_tokenizer(o.tokenizer);
      } catch (const Error& e) {
        throw Error(e.kind(), e.function(), e.detail()).about("tokenizer");
      }
      lesson.tokenizer_name = o.tokenizer;
    }
  }
  auto [text, name] = read_corpus(o.corpus);
  lesson.text = std::move(text);
  lesson.corpus_name = std::move(name);
  lesson.config = c;
  lesson.stop_after = o.stop_after;
  // The vocabulary decides the model's size: a BPE's is known, characters are counted once here.
  if (!lesson.tokenizer) {
    try {
      lesson.tokenizer = character_tokenizer(lesson.text, "the corpus " + lesson.corpus_name);
    } catch (const Error& e) {
      throw Error(e.kind(), e.function(), e.detail()).about("corpus");
    }
  }
  const std::size_t vocab = lesson.tokenizer->bpe.size();
  MemoryPlan plan = plan_gpt_run(c, vocab);
  plan.push_back({"the corpus as token ids", {lesson.text.size()}, "", 4});
  check_budget("train", plan);
  keep_freed_memory();

  const bool shown =
      o.output.format == render::Format::text && !o.output.quiet && isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  auto shown_at = start;
  const std::size_t first = lesson.resumed ? lesson.resumed->steps_done : 0;
  const std::size_t last = o.stop_after > 0 ? std::min(o.stop_after, c.steps) : c.steps;
  if (last <= first)
    throw Error(ErrorKind::bad_value, "train",
                fmt::format("--stop-after {} is not after the {} steps '{}' has trained: give a "
                            "later step",
                            o.stop_after, first, printable(o.resume)))
        .about("stop_after");
  lesson.on_step = [&](std::size_t step, float loss) {
    if (shown) show_step(step, c.steps, first, loss, start, shown_at);
  };
  lesson.on_evaluation = [&](const GptEvaluation& e, const std::string& sample) {
    if (!shown) return;
    std::string indented = "    ";
    for (char ch : sample)
      indented += ch == '\n' ? std::string("\n    ") : std::string(1, ch);
    std::fputs(
        fmt::format("\r\x1b[K  step {}: train loss {}, val loss {} ({:.1f} s)\n{}\n", e.step,
                    loss_text(e.train_loss), loss_text(e.validation_loss), e.seconds, indented)
            .c_str(),
        stderr);
    std::fflush(stderr);
  };
  lessons::GptTrainLessonResult result = [&] {
    try {
      return lessons::run_gpt_train(std::move(lesson));
    } catch (const Error& e) {
      if (e.function() != "split_corpus" && e.function() != "character_tokenizer") throw;
      throw Error(e.kind(), e.function(), e.detail()).about("corpus");
    }
  }();
  if (shown) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fputs(fmt::format("  trained {} steps in {:.1f} s ({:.1f} steps/s)\n", last - first,
                           seconds, static_cast<double>(last - first) / std::max(seconds, 1e-9))
                   .c_str(),
               stderr);
  }
  std::vector<render::FileOutput> files;
  if (!o.checkpoint.empty()) {
    render::FileOutput folder{o.checkpoint, "save_checkpoint", {}};
    for (NamedFile& f : gpt_checkpoint_files(*result.training, result.tokenizer))
      folder.folder.emplace_back(std::move(f.name), std::move(f.bytes));
    files.push_back(std::move(folder));
  }
  if (!o.export_path.empty()) {
    render::CurvePicture picture;
    picture.title = "attn train --model gpt: the loss while training";
    picture.subtitle = {
        fmt::format("a GPT of {} blocks, D {}, {} heads, block {}, on {}", c.layers, c.d_model,
                    c.heads, c.block, printable(result.run.settings()[1].second)),
        fmt::format("{} steps of {} windows, AdamW at lr {:g}, seed {}", c.steps, c.batch, c.lr,
                    c.seed)};
    // The validation loss held from each evaluation to the next, one value a step.
    std::vector<double> validation(result.losses.size(), std::nan(""));
    const std::vector<GptEvaluation>& history = result.training->history();
    for (std::size_t i = 0; i < validation.size(); ++i) {
      const std::size_t step = first + i + 1;
      for (const GptEvaluation& e : history)
        if (e.step <= step) validation[i] = e.validation_loss;
    }
    picture.panels.push_back({"loss on each step's batch", result.losses, false, {}});
    picture.panels.push_back({fmt::format("validation loss (every {} steps)", c.eval_interval),
                              std::move(validation),
                              false,
                              {}});
    files.push_back(curves_file(picture, o.export_path));
  }
  const int code = publish(result.run, o.output, context, files);
  if (shown)
    for (const render::FileOutput& f : files)
      std::fputs(fmt::format("  wrote {}\n", printable(f.path)).c_str(), stderr);
  return code;
}

int run_train(TrainCliOptions& o, const CLI::App& app, const Context& context) {
  if (o.task == "induction") {
    if (app.count("--model") > 0 && o.model != "gpt")
      throw Error(ErrorKind::bad_value, "train",
                  fmt::format("--task induction trains an attention-only GPT, not --model {}: "
                              "drop --model, or give --model gpt",
                              o.model))
          .about("model");
    return run_induction_train(o, app, context);
  }
  if (o.model == "gpt") return run_gpt(o, app, context);
  refuse_options(app,
                 {"--corpus", "--tokenizer", "--resume", "--block", "--eval-interval",
                  "--stop-after", "--attention-only"},
                 "is for --model gpt, which learns a text");
  if (o.checkpoint.ends_with('/') || std::filesystem::is_directory(o.checkpoint))
    render::check_checkpoint_file(o.checkpoint);
  TrainConfig& c = o.config;
  c.task = train_task(o, app);
  if (std::holds_alternative<Task>(c.task) && std::get<Task>(c.task) == Task::masked)
    c.sizes.vocab = kTextTokens;
  if (app.count("--steps") == 0) c.steps = default_steps(c.task);
  c.norm = o.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  check_train_config(c);
  check_budget("train", plan_training(c));
  const std::string one_part =
      "--model encoder trains an encoder, which has one part, its self-attention: drop --part, or "
      "add --model transformer";
  // The heads are checked against the model's shapes before it trains.
  read_ablation(app, o.ablate, initial_model(c), ViewPart::cross, "train", one_part);
  keep_freed_memory();
  const bool shown =
      o.output.format == render::Format::text && !o.output.quiet && isatty(STDERR_FILENO) != 0;
  Progress progress(c.steps, shown);
  Curves curves;
  lessons::TrainLessonOptions lesson{c, [&](const TrainStep& s) {
                                       progress.update(s);
                                       curves.add(s.loss, s.accuracy);
                                     }};
  lessons::TrainLessonResult result = lessons::run_train(lesson);
  report_time(shown, progress, c.steps);
  std::vector<render::FileOutput> files;
  if (!o.checkpoint.empty()) {
    Metadata metadata = checkpoint_metadata(c, lessons::held_out_results(result.held_out));
    metadata["written_by"] = "attn";
    files.push_back({o.checkpoint, "save_checkpoint",
                     serialize_safetensors(checkpoint_state_dict(result.model), metadata)});
  }
  if (!o.export_path.empty()) {
    std::vector<render::CurveMark> marks;
    for (const lessons::HeldOutMeasure& m : result.held_out)
      marks.push_back({m.label, 100.0 * m.value});
    files.push_back(curves_file(
        curves_picture(fmt::format("attn train{} --task {}: loss and accuracy while "
                                   "training",
                                   is_seq2seq(c.task) ? " --model transformer" : "", o.task),
                       model_words(c), run_words(c), curves, std::move(marks)),
        o.export_path));
  }
  if (const std::optional<Ablation> a =
          read_ablation(app, o.ablate, result.model, ViewPart::cross, "train", one_part))
    result.run.prose(
        ablation_line(result.model, c, *a, "the model saved and shown above has every head."));
  const int code = publish(result.run, o.output, context, files);
  report_files(shown, files);
  return code;
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<TrainCliOptions>();
  CLI::App* sub = add_lesson_command(app, "train");
  sub->add_option("--model", o->model,
                  "encoder (default: the book's encoder with a head on every token), "
                  "transformer (seed 001's encoder-decoder) or gpt (a GPT learning a text)")
      ->check(choice_validator("a model", {"encoder", "transformer", "gpt"}))
      ->option_text("encoder|transformer|gpt");
  sub->add_option("--task", o->task,
                  fmt::format("{} (default reverse); with --model transformer: {}; induction: "
                              "an attention-only GPT on repeated random tokens (lesson 18)",
                              task_words(), seq2seq_task_words()))
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
  size("--layers", o->config.layers, "encoder layers (default 2; --model gpt: 4 blocks)", 1, 64,
       "L");
  size("--d-model", o->config.d_model, "D, the model width (default 32; --model gpt: 128)", 1, 4096,
       "D");
  size("--heads", o->config.heads, "H, heads per layer (default 2; --model gpt: 4)", 1, 256, "H");
  size("--d-ff", o->config.d_ff, "F, the feed-forward width (default 64; --model gpt: 4D)", 1,
       16384, "F");
  sub->add_option("--norm", o->norm, "pre (default, the book) or post (the paper, BERT)")
      ->check(choice_validator("a norm placement", {"pre", "post"}))
      ->option_text("pre|post");
  size("--steps", o->config.steps,
       "training steps (default 1000; --model transformer: 4000; --model gpt: 2000)", 1, 10'000'000,
       "N");
  size("--batch", o->config.batch, "B, sequences per step (default 32; --model gpt: 12 windows)", 1,
       65536, "B");
  sub->add_option("--lr", o->config.lr,
                  "AdamW's peak learning rate (default 0.003; --model gpt: 0.002)")
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
                  "write the trained model as FILE.safetensors, its task and sizes in the "
                  "metadata; with --model gpt, as a Hugging Face GPT-2 folder DIR")
      ->check(not_empty_validator("--save-checkpoint", "model.safetensors"))
      ->option_text("FILE|DIR");
  declare_output(*sub, "--save-checkpoint", [o] {
    if (o->model == "gpt" || o->task == "induction") {
      if (std::filesystem::path(o->checkpoint).extension() == ".safetensors")
        throw Error(ErrorKind::bad_file, "train",
                    fmt::format("'{}': a GPT's checkpoint is a folder (config.json, "
                                "model.safetensors and the tokenizer's files, as Hugging Face "
                                "writes them): give a folder name, e.g. my-gpt",
                                printable(o->checkpoint)))
            .about("save_checkpoint");
      render::check_checkpoint_folder(o->checkpoint, gpt_checkpoint_names());
    } else
      render::check_checkpoint_file(o->checkpoint);
  });
  sub->add_option("--corpus", o->corpus,
                  "--model gpt: the text to learn (default: the shipped moby-dick.txt, 1 MB)")
      ->check(not_empty_validator("--corpus", "book.txt"))
      ->option_text("FILE");
  sub->add_option("--tokenizer", o->tokenizer,
                  "--model gpt: a BPE's folder (vocab.json and merges.txt, e.g. from attn "
                  "tokenizer train) instead of one token per character")
      ->check(not_empty_validator("--tokenizer", "my-bpe"))
      ->option_text("DIR");
  sub->add_option("--resume", o->resume,
                  "--model gpt: go on training from a folder --save-checkpoint wrote")
      ->check(not_empty_validator("--resume", "my-gpt"))
      ->option_text("DIR");
  size("--block", o->gpt.block, "--model gpt: T, the tokens each window trains on (default 64)", 1,
       4096, "T");
  size("--stop-after", o->stop_after,
       "--model gpt: stop after step N of the --steps schedule (save a checkpoint to --resume "
       "later)",
       1, 10'000'000, "N");
  sub->add_flag("--attention-only", o->attention_only,
                "--model gpt: blocks without MLPs (ln_2 and the MLP skipped, their weights kept at "
                "zero); --task induction always is");
  size("--eval-interval", o->gpt.eval_interval,
       "--model gpt: steps between evaluations of the training and validation loss (default 100)",
       1, 10'000'000, "N");
  add_output(*sub, "--export", o->export_path, OutputKind::picture,
             "also draw the loss and accuracy curves, with the held-out accuracy, to FILE.svg or "
             "FILE.png");
  add_ablate_option(*sub, o->ablate, "after training");
  add_ablate_part_option(*sub, o->ablate, ViewPart::cross);
  add_output_options(*sub, o->output);
  add_heatmap_option(*sub, o->output);
  door_callback(*sub, [o, sub, &context] {
    o->vocab_given = sub->count("--vocab") > 0;
    context.exit_code = run_train(*o, *sub, context);
  });
}

const Registration kRegistration{"train", setup};

}  // namespace

}  // namespace attn::cli
