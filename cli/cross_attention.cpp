// attn cross-attention: lesson 12.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "12-cross-attention/cross_attention_lesson.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct CrossAttentionCliOptions {
  LessonCliOptions cli;
  lessons::CrossAttentionLessonOptions lesson;
  std::string source_lengths, fill = "seed";
  std::string checkpoint, text;
  std::size_t layer = 0;
};

// --checkpoint: the trained encoder-decoder on --text (the task's example by default), reading
// decoder layer --layer (default the last). Refuses what the checkpoint replaces, and --text and
// --layer without it.
void use_checkpoint(CrossAttentionCliOptions& o, const CLI::App& app, Context& context) {
  if (o.checkpoint.empty()) {
    for (const char* name : {"--text", "--layer"})
      if (app.count(name) > 0)
        throw Error(ErrorKind::bad_value, "cross-attention",
                    fmt::format("{} reads a trained encoder-decoder: add --checkpoint {}, or "
                                "drop {}",
                                name, kShippedSeq2Seq, name))
            .about(std::string(name).substr(2));
    return;
  }
  for (const char* name : {"--seed", "--batch", "--seq", "--d-model", "--input", "--heads",
                           "--source-seq", "--source-lengths", "--fill"})
    if (app.count(name) > 0)
      throw Error(ErrorKind::bad_value, "cross-attention",
                  fmt::format("a checkpoint brings its own model, source and answer: drop {} "
                              "(the sizes and the inputs come from it)",
                              name))
          .about(std::string(name).substr(2));
  TrainedCheckpoint c = load_seq2seq_checkpoint(o.checkpoint, "cross-attention", context);
  lessons::TrainedCrossAttention& t = o.lesson.trained.emplace();
  t.checkpoint = o.checkpoint;
  t.task = std::get<Seq2SeqTask>(c.config.task);
  t.source = parse_source(t.task, o.text.empty() ? seq2seq_example(t.task) : o.text);
  t.model = std::move(std::get<Transformer>(c.model));
  t.layer = app.count("--layer") > 0 ? o.layer : t.model.config.layers - 1;
  t.config = c.config;
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<CrossAttentionCliOptions>();
  CLI::App* sub = add_lesson_command(app, "cross-attention");
  add_lesson_options(*sub, o->cli);
  add_heatmap_option(*sub, o->cli.output);
  sub->add_option("--heads", o->lesson.heads, "H, heads (default 2)")
      ->check(size_validator())
      ->option_text("H");
  sub->add_option("--source-seq", o->lesson.source_seq,
                  "S, the source's tokens: keys and values (default 7)")
      ->check(size_validator(4096))
      ->option_text("S");
  sub->add_option("--source-lengths", o->source_lengths,
                  "pad the sources: source b has the b-th number of real tokens, e.g. 7,4")
      ->check(not_empty_validator("--source-lengths", "7,4"))
      ->option_text("N,N,...");
  sub->add_option(
         "--fill", o->fill,
         "what a masked score becomes: seed (-1e9, the seed's masked_fill) or torch (-inf)")
      ->check(choice_validator("a fill", {"seed", "torch"}))
      ->option_text("seed|torch");
  sub->add_option("--checkpoint", o->checkpoint,
                  fmt::format("a trained encoder-decoder (attn train --model transformer, or {}): "
                              "its cross-attention on the task's tokens",
                              kShippedSeq2Seq))
      ->check(not_empty_validator("--checkpoint", kShippedSeq2Seq))
      ->option_text("NAME|FILE");
  sub->add_option("--text", o->text,
                  "with --checkpoint: the source in the task's tokens (default its example)")
      ->check(not_empty_validator("--text", "hgfedcba"))
      ->option_text("TEXT");
  sub->add_option("--layer", o->layer,
                  "with --checkpoint: which decoder layer's cross-attention (default the last)")
      ->check(CLI::NonNegativeNumber)
      ->option_text("L");
  door_callback(*sub, [o, sub, &context] {
    use_checkpoint(*o, *sub, context);
    load_lesson_input(o->cli, context);
    o->lesson.common = o->cli.lesson;
    if (!o->source_lengths.empty())
      o->lesson.source_lengths =
          parse_size_list(o->source_lengths, "source-lengths", "--source-lengths");
    o->lesson.fill = o->fill == "torch" ? MaskFill::torch : MaskFill::seed;
    context.exit_code = publish(lessons::run_cross_attention(o->lesson), o->cli.output, context);
  });
}

const Registration kRegistration{"cross-attention", setup};

}  // namespace

}  // namespace attn::cli
