// attn cross-attention: lesson 12.
#include <memory>
#include <string>

#include "12-cross-attention/cross_attention_lesson.hpp"
#include "command.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct CrossAttentionCliOptions {
  LessonCliOptions cli;
  lessons::CrossAttentionLessonOptions lesson;
  std::string source_lengths, fill = "seed";
};

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
      ->option_text("N,N,...");
  sub->add_option(
         "--fill", o->fill,
         "what a masked score becomes: seed (-1e9, the seed's masked_fill) or torch (-inf)")
      ->check(choice_validator("a fill", {"seed", "torch"}))
      ->option_text("seed|torch");
  sub->callback([o, &context] {
    check_outputs(o->cli.output);
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
