// attn backward: lesson 10.
#include <memory>

#include "10-backward/backward_lesson.hpp"
#include "command.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<LessonCliOptions>();
  CLI::App* sub = add_lesson_command(app, "backward");
  add_lesson_options(*sub, *o);
  sub->callback([o, &context] {
    check_outputs(o->output);
    load_lesson_input(*o, context);
    context.exit_code = publish(lessons::run_backward(o->lesson), o->output, context);
  });
}

const Registration kRegistration{"backward", setup};

}  // namespace

}  // namespace attn::cli
