// attn feed-forward: lesson 08.
#include <memory>

#include "08-feed-forward/feed_forward_lesson.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct FeedForwardCliOptions {
  LessonCliOptions cli;
  lessons::FeedForwardLessonOptions lesson;
  std::size_t d_ff = 0;  // 0: not given
  std::string gelu;      // empty: not given
  std::string weights;
};

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<FeedForwardCliOptions>();
  CLI::App* sub = add_lesson_command(app, "feed-forward");
  add_lesson_options(*sub, o->cli);
  sub->add_option("--d-ff", o->d_ff, "F, the hidden width (default 4 x D, or the --weights' F)")
      ->check(size_validator())
      ->option_text("F");
  sub->add_option(
         "--variant", o->lesson.variant,
         "book (seed 003's FeedForward, default), relu (seed 001) or gelu-last (seed 000's bug)")
      ->check(choice_validator("a feed-forward variant", {"book", "relu", "gelu-last"}))
      ->option_text("book|relu|gelu-last");
  sub->add_option("--gelu", o->gelu,
                  "erf (nn.GELU(), default) or tanh (nn.GELU(approximate='tanh'))")
      ->check(choice_validator("a GELU", {"erf", "tanh"}))
      ->option_text("erf|tanh");
  add_weights_options(*sub, o->weights, o->cli.output);
  door_callback(*sub, [o, &context] {
    load_lesson_input(o->cli, context);
    o->lesson.common = o->cli.lesson;
    if (o->d_ff != 0) o->lesson.d_ff = o->d_ff;
    if (!o->gelu.empty()) o->lesson.gelu = o->gelu;
    load_weights_option(o->lesson, o->weights, context);
    context.exit_code = publish(lessons::run_feed_forward(o->lesson), o->cli.output, context);
  });
}

const Registration kRegistration{"feed-forward", setup};

}  // namespace

}  // namespace attn::cli
