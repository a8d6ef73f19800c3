// attn softmax: lesson 03.
#include <memory>

#include "03-softmax/softmax_lesson.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "mine_option.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct SoftmaxCliOptions {
  LessonCliOptions cli;
  lessons::SoftmaxLessonOptions lesson;
  std::string mask = "none";
  bool mine = false;
};

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<SoftmaxCliOptions>();
  CLI::App* sub = add_lesson_command(app, "softmax");
  add_lesson_options(*sub, o->cli, "(B, T, S)", /*with_width=*/false);
  add_heatmap_option(*sub, o->cli.output);
  sub->add_option("--temperature", o->lesson.temperature,
                  "τ: softmax(S / τ), from 0.001 to 1000 (default 1)")
      ->check(real_validator("a temperature", 1e-3, 1e3, "0.5 or 2"))
      ->option_text("TAU");
  sub->add_option("--mask", o->mask, "none (default) or causal: -inf above the diagonal")
      ->check(choice_validator("a mask", {"none", "causal"}))
      ->option_text("none|causal");
  add_mine_option(*sub, o->mine);
  door_callback(*sub, [o, &context] {
    load_lesson_input(o->cli, context);
    o->lesson.common = o->cli.lesson;
    o->lesson.causal = o->mask == "causal";
    lessons::LessonRun run = lessons::run_softmax_lesson(o->lesson);
    add_mine_steps(run, o->mine);
    context.exit_code = publish(run, o->cli.output, context);
  });
}

const Registration kRegistration{"softmax", setup};

}  // namespace

}  // namespace attn::cli
