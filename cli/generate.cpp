// attn generate: lesson 14. Decodes a trained encoder-decoder (a checkpoint of
// `attn train --model transformer`, or a shipped one) on --text, greedily or sampled.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "14-generate/generate_lesson.hpp"
#include "ablate.hpp"
#include "command.hpp"
#include "door.hpp"
#include "io/weights.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "output.hpp"
#include "train/seq2seq.hpp"

namespace attn::cli {

namespace {

constexpr const char* kDefaultCheckpoint = kShippedSeq2Seq;

struct GenerateCliOptions {
  std::string checkpoint = kDefaultCheckpoint;
  std::string text;
  DecodeOptions decode;
  bool no_cache = false;
  AblateCliOptions ablate;
  render::OutputOptions output;
};

int run_generate(GenerateCliOptions& o, const CLI::App& app, Context& context) {
  TrainedCheckpoint checkpoint = load_seq2seq_checkpoint(o.checkpoint, "generate", context);
  const Seq2SeqTask task = std::get<Seq2SeqTask>(checkpoint.config.task);
  lessons::GenerateLessonOptions lesson;
  lesson.checkpoint_name = lessons::checkpoint_label(o.checkpoint);
  const std::optional<Ablation> ablation =
      read_ablation(app, o.ablate, checkpoint.model, ViewPart::cross, "generate",
                    encoder_has_one_part(o.checkpoint));
  std::string ablation_text;
  if (ablation) {
    ablation_text = ablation_line(checkpoint.model, checkpoint.config, *ablation,
                                  "the decoding above ran with these heads ablated.");
    ablate_heads_in_weights(checkpoint.model, ablation->heads, ablation->part);
    lesson.checkpoint_name =
        fmt::format("{}, with {} ablated", lessons::checkpoint_label(o.checkpoint),
                    ablated_heads_words(checkpoint.model, *ablation));
  }
  lesson.task = task;
  lesson.model = std::move(std::get<Transformer>(checkpoint.model));
  lesson.source = parse_source(task, o.text.empty() ? seq2seq_example(task) : o.text);
  lesson.decode = o.decode;
  lesson.decode.sample =
      app.count("--temperature") + app.count("--top-k") + app.count("--top-p") > 0;
  if (!lesson.decode.sample && app.count("--seed") > 0)
    throw Error(ErrorKind::bad_value, "generate",
                "--seed seeds sampling, and greedy decoding draws nothing: add --temperature, "
                "--top-k or --top-p to sample, or drop --seed")
        .about("seed");
  lesson.decode.cache = !o.no_cache;
  check_decode_options(lesson.decode);
  lessons::LessonRun run = lessons::run_generate(lesson);
  if (ablation) run.prose(ablation_text);
  return publish(run, o.output, context);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<GenerateCliOptions>();
  CLI::App* sub = add_lesson_command(app, "generate");
  sub->add_option("--checkpoint", o->checkpoint,
                  fmt::format("an encoder-decoder from attn train --model transformer, or a "
                              "shipped one (default {})",
                              kDefaultCheckpoint))
      ->check(not_empty_validator("--checkpoint", kDefaultCheckpoint))
      ->option_text("NAME|FILE");
  sub->add_option("--text", o->text,
                  "the source, in the task's tokens: letters a to h (reverse, sort) or a number "
                  "(number-words); default: the task's example")
      ->check(not_empty_validator("--text", "hgfedcba"))
      ->option_text("TEXT");
  sub->add_option("--temperature", o->decode.temperature,
                  "sample from softmax(logits / T) (default: greedy decoding)")
      ->check(real_validator("a temperature", 1e-6, 1e6, "0.8"))
      ->option_text("T");
  sub->add_option("--top-k", o->decode.top_k, "sample from the K most likely tokens only")
      ->check(whole_number_validator(1, 1'000'000))
      ->option_text("K");
  sub->add_option("--top-p", o->decode.top_p,
                  "sample from the smallest set of tokens whose probability reaches P, in (0, 1]")
      ->check(real_validator("a probability", 1e-6, 1.0, "0.9"))
      ->option_text("P");
  sub->add_option("--seed", o->decode.seed, "the seed of sampling (default 0)")
      ->check(seed_validator())
      ->option_text("N");
  sub->add_flag("--no-cache", o->no_cache,
                "recompute the whole prefix at every step instead of keeping keys and values");
  add_ablate_option(*sub, o->ablate, "in --part's attention");
  add_ablate_part_option(*sub, o->ablate, ViewPart::cross);
  add_output_options(*sub, o->output);
  add_heatmap_option(*sub, o->output);
  door_callback(*sub, [o, sub, &context] { context.exit_code = run_generate(*o, *sub, context); });
}

const Registration kRegistration{"generate", setup};

}  // namespace

}  // namespace attn::cli
