// attn attention: lesson 04.
#include <memory>
#include <string>

#include "04-attention/attention_lesson.hpp"
#include "command.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct AttentionCliOptions {
  LessonCliOptions cli;
  lessons::AttentionLessonOptions lesson;
  std::size_t head_size = 0;
  MaskCliOptions mask;
  std::string weights;
};

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<AttentionCliOptions>();
  CLI::App* sub = add_lesson_command(app, "attention");
  add_lesson_options(*sub, o->cli);
  add_heatmap_option(*sub, o->cli.output);
  sub->add_option(
         "--variant", o->lesson.variant,
         "self-attention (seed 004's SelfAttention, default) or head (seed 000's AttentionHead)")
      ->check(choice_validator("an attention variant", {"self-attention", "head"}))
      ->option_text("self-attention|head");
  sub->add_option("--head-size", o->head_size, "hs of the head variant (default D)")
      ->check(size_validator())
      ->option_text("HS");
  add_mask_options(*sub, o->mask);
  add_weights_options(*sub, o->weights, o->cli.output);
  sub->callback([o, &context] {
    check_outputs(o->cli.output);
    load_lesson_input(o->cli, context);
    o->lesson.common = o->cli.lesson;
    if (o->head_size != 0) o->lesson.head_size = o->head_size;
    o->lesson.causal = o->mask.mask == "causal";
    o->lesson.lengths = mask_lengths(o->mask);
    load_weights_option(o->lesson, o->weights, context);
    context.exit_code = publish(lessons::run_attention(o->lesson), o->cli.output, context);
  });
}

const Registration kRegistration{"attention", setup};

}  // namespace

}  // namespace attn::cli
