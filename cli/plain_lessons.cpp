// attn dot-product and attn scaling: lessons 01 and 02, which take the shared options and a
// heatmap and nothing of their own (lesson_io.hpp, add_plain_lesson_command).
#include "01-dot-product/dot_product_lesson.hpp"
#include "02-scaling/scaling_lesson.hpp"
#include "command.hpp"
#include "lesson_io.hpp"

namespace attn::cli {

namespace {

void setup_dot_product(CLI::App& app, Context& context) {
  add_plain_lesson_command(app, context, "dot-product", lessons::run_dot_product);
}

void setup_scaling(CLI::App& app, Context& context) {
  add_plain_lesson_command(app, context, "scaling", lessons::run_scaling);
}

const Registration kDotProduct{"dot-product", setup_dot_product};
const Registration kScaling{"scaling", setup_scaling};

}  // namespace

}  // namespace attn::cli
