// attn dot-product: lesson 01.
#include <memory>

#include "01-dot-product/dot_product_lesson.hpp"
#include "command.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<LessonCliOptions>();
  CLI::App* sub = add_lesson_command(app, "dot-product");
  add_lesson_options(*sub, *o);
  add_heatmap_option(*sub, o->output);
  sub->callback([o, &context] {
    check_outputs(o->output);
    load_lesson_input(*o, context);
    context.exit_code = publish(lessons::run_dot_product(o->lesson), o->output, context);
  });
}

const Registration kRegistration{"dot-product", setup};

}  // namespace

}  // namespace attn::cli
