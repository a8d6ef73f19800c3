// attn generate: lesson 14. Decodes a trained encoder-decoder (a checkpoint of
// `attn train --model transformer`, or a shipped one) on --text, greedily or sampled; with
// --pretrained, a Hugging Face GPT-2 folder continues --text (or --ids) with the key/value cache.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "14-generate/generate_lesson.hpp"
#include "14-generate/gpt2_generate_lesson.hpp"
#include "ablate.hpp"
#include "command.hpp"
#include "door.hpp"
#include "io/weights.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "output.hpp"
#include "pretrained.hpp"
#include "train/seq2seq.hpp"

namespace attn::cli {

namespace {

constexpr const char* kDefaultCheckpoint = kShippedSeq2Seq;
// The shipped character GPT's prompt without --text: the opening of its corpus, Moby-Dick.
constexpr const char* kGptCharPrompt = "Call me Ishmael. Some years ago";

struct GenerateCliOptions {
  std::string checkpoint = kDefaultCheckpoint;
  std::string pretrained, ids;
  std::size_t max_new_tokens = 20;
  std::string text;
  DecodeOptions decode;
  bool no_cache = false;
  bool show_sampling = false;
  AblateCliOptions ablate;
  render::OutputOptions output;
};

bool sampling(const CLI::App& app, std::string_view command) {
  const bool sample = app.count("--temperature") + app.count("--top-k") + app.count("--top-p") > 0;
  if (!sample && app.count("--seed") > 0)
    throw Error(ErrorKind::bad_value, std::string(command),
                "--seed seeds sampling, and greedy decoding draws nothing: add --temperature, "
                "--top-k or --top-p to sample, or drop --seed")
        .about("seed");
  return sample;
}

// --pretrained: a GPT-2 folder continues the prompt.
int run_pretrained(GenerateCliOptions& o, const CLI::App& app, Context& context) {
  if (o.no_cache)
    throw Error(ErrorKind::bad_value, "generate",
                "--no-cache is lesson 14's comparison on a trained checkpoint; GPT-2 generates "
                "with its key/value cache: drop --no-cache")
        .about("no_cache");
  const std::optional<std::string> shipped = shipped_checkpoint_folder(o.checkpoint);
  const bool from_checkpoint = shipped && *shipped == o.pretrained;
  refuse_beside_pretrained(app,
                           from_checkpoint
                               ? std::vector<std::string>{"--ablate", "--part"}
                               : std::vector<std::string>{"--checkpoint", "--ablate", "--part"},
                           "generate");
  PretrainedFolder folder = open_folder(o.pretrained);
  if (!is_gpt2(folder))
    throw Error(ErrorKind::bad_value, "generate",
                fmt::format("'{}' is a BERT folder, an encoder: it fills in [MASK] tokens rather "
                            "than continuing a text; run attn encoder --pretrained {} --text "
                            "\"... [MASK] ...\", or give a GPT-2 folder",
                            printable(o.pretrained), printable(o.pretrained)))
        .about("pretrained");
  const PretrainedGpt2 gpt2 = open_gpt2(std::move(folder));
  const std::size_t positions = gpt2.config.sizes.max_position_embeddings;
  if (o.max_new_tokens >= positions)
    throw Error(ErrorKind::bad_value, "generate",
                fmt::format("--max-new-tokens {} leaves no room for the prompt in the model's {} "
                            "positions: give at most {}",
                            o.max_new_tokens, positions, positions - 1))
        .about("max_new_tokens");
  if (from_checkpoint && o.text.empty() && o.ids.empty()) o.text = kGptCharPrompt;
  const Gpt2Text text = gpt2_text(gpt2, o.text, o.ids);
  if (text.tokens.size() + o.max_new_tokens > positions) {
    const std::string source = o.ids.empty() ? "text" : "ids";
    throw Error(ErrorKind::bad_size, "generate",
                fmt::format("{} prompt tokens and --max-new-tokens {} need {} positions, more than "
                            "the model's {} (n_positions): give a shorter --{} or at most "
                            "--max-new-tokens {}",
                            text.tokens.size(), o.max_new_tokens,
                            text.tokens.size() + o.max_new_tokens, positions, source,
                            positions > text.tokens.size() ? positions - text.tokens.size() : 0))
        .about(source);
  }
  lessons::Gpt2GenerateOptions l;
  l.name = from_checkpoint ? o.checkpoint + " (shipped)" : o.pretrained;
  l.tokenizer = &gpt2.tokenizer;
  l.prompt.assign(text.input.ids.begin(), text.input.ids.end());
  l.max_new_tokens = o.max_new_tokens;
  l.decode = o.decode;
  l.decode.sample = sampling(app, "generate");
  check_decode_options(l.decode);
  l.forward = !o.output.save_dir.empty() || o.output.format == render::Format::json;
  // On the shipped character GPT always; a real GPT-2 is slower, so there only when asked.
  l.sampling = from_checkpoint || o.show_sampling;
  MemoryPlan plan = plan_gpt2_reading(gpt2);
  append(plan,
         lessons::plan_gpt2_generate(gpt2.config, l.prompt.size(), l.max_new_tokens, l.forward));
  check_budget("generate", plan);
  lessons::Gpt2GenerateRun run =
      l.forward ? lessons::run_gpt2_generate(read_gpt2(gpt2), l)
                : lessons::run_gpt2_generate(gpt2.config, gpt2.heads, read_packed_gpt2(gpt2), l);
  const int code = publish(run.run, o.output, context);
  // The time goes to a terminal's stderr only, as attn train's does: stdout stays the same from
  // run to run.
  if (code == 0 && o.output.format == render::Format::text && !o.output.quiet &&
      isatty(STDERR_FILENO) != 0) {
    const std::size_t later = run.new_tokens > 0 ? run.new_tokens - 1 : 0;
    std::fputs(
        fmt::format(
            "  {} new tokens in {:.2f} s: the first after {:.3f} s (the prompt's {} "
            "tokens at once), then {:.1f} tokens/s\n",
            run.new_tokens, run.prefill_seconds + run.step_seconds, run.prefill_seconds,
            l.prompt.size(),
            later > 0 && run.step_seconds > 0 ? static_cast<double>(later) / run.step_seconds : 0.0)
            .c_str(),
        stderr);
  }
  return code;
}

int run_generate(GenerateCliOptions& o, const CLI::App& app, Context& context) {
  if (!o.pretrained.empty()) return run_pretrained(o, app, context);
  // A shipped checkpoint that is a GPT-2 folder (gpt-char) generates as --pretrained does.
  if (const std::optional<std::string> folder = shipped_checkpoint_folder(o.checkpoint)) {
    o.pretrained = *folder;
    return run_pretrained(o, app, context);
  }
  for (const char* name : {"--ids", "--max-new-tokens", "--show-sampling"})
    if (app.count(name) > 0)
      throw Error(
          ErrorKind::bad_value, "generate",
          fmt::format("{} is for a GPT-2 folder: add --pretrained DIR, or drop {}", name, name))
          .about(std::string(name).substr(2));
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
  lesson.decode.sample = sampling(app, "generate");
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
  add_pretrained_option(*sub, o->pretrained)->check(not_empty_validator("--pretrained", "gpt2"));
  sub->add_option("--text", o->text,
                  "the source, in the task's tokens: letters a to h (reverse, sort) or a number "
                  "(number-words); default: the task's example. With --pretrained, the prompt "
                  "(gpt-char's default: the opening of Moby-Dick)")
      ->check(not_empty_validator("--text", "hgfedcba"))
      ->option_text("TEXT");
  sub->add_option("--ids", o->ids, "with --pretrained: the prompt as token ids, e.g. 464,3290")
      ->check(not_empty_validator("--ids", "464,3290"))
      ->option_text("I,I,...");
  sub->add_option("--max-new-tokens", o->max_new_tokens,
                  "with --pretrained: tokens to generate at most (default 20)")
      ->check(whole_number_validator(1, 1'000'000))
      ->option_text("N");
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
  sub->add_flag("--show-sampling", o->show_sampling,
                "with --pretrained: measure temperature, top-k, top-p, seeds and greedy "
                "repetition on the prompt (always on with --checkpoint gpt-char)");
  add_ablate_option(*sub, o->ablate, "in --part's attention");
  add_ablate_part_option(*sub, o->ablate, ViewPart::cross);
  add_output_options(*sub, o->output);
  add_heatmap_option(*sub, o->output);
  door_callback(*sub, [o, sub, &context] { context.exit_code = run_generate(*o, *sub, context); });
}

const Registration kRegistration{"generate", setup};

}  // namespace

}  // namespace attn::cli
