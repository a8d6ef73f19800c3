// attn layer-norm: lesson 07.
#include <cmath>
#include <memory>

#include "07-layer-norm/layer_norm_lesson.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct LayerNormCliOptions {
  LessonCliOptions cli;
  lessons::LayerNormLessonOptions lesson;
  double eps = 0.0;
  const CLI::Option* eps_option = nullptr;
  std::string weights;
};

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<LayerNormCliOptions>();
  CLI::App* sub = add_lesson_command(app, "layer-norm");
  add_lesson_options(*sub, o->cli);
  sub->add_option("--variant", o->lesson.variant,
                  "torch (nn.LayerNorm, default) or seed001 (seed 001's LayerNormalization)")
      ->check(choice_validator("a LayerNorm variant", {"torch", "seed001"}))
      ->option_text("torch|seed001");
  o->eps_option =
      sub->add_option("--eps", o->eps,
                      "default 1e-5, BERT 1e-12; seed001 adds it to the std, default 1e-6")
          ->check(real_validator("an eps", -HUGE_VAL, HUGE_VAL, "1e-12"))
          ->option_text("EPS");
  sub->add_option("--blocks", o->lesson.blocks,
                  "residual blocks in the pre-LN / post-LN table (default 6)")
      ->check(size_validator(1000))
      ->option_text("N");
  add_weights_options(*sub, o->weights, o->cli.output);
  door_callback(*sub, [o, &context] {
    load_lesson_input(o->cli, context);
    o->lesson.common = o->cli.lesson;
    if (o->eps_option->count() > 0) o->lesson.eps = o->eps;
    load_weights_option(o->lesson, o->weights, context);
    context.exit_code = publish(lessons::run_layer_norm(o->lesson), o->cli.output, context);
  });
}

const Registration kRegistration{"layer-norm", setup};

}  // namespace

}  // namespace attn::cli
