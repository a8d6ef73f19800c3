// attn scaling: lesson 02.
#include "02-scaling/scaling_lesson.hpp"
#include "command.hpp"
#include "lesson_io.hpp"

namespace attn::cli {

namespace {

void setup(CLI::App& app, Context& context) {
  add_plain_lesson_command(app, context, "scaling", lessons::run_scaling);
}

const Registration kRegistration{"scaling", setup};

}  // namespace

}  // namespace attn::cli
