// attn dot-product: lesson 01.
#include "01-dot-product/dot_product_lesson.hpp"
#include "command.hpp"
#include "lesson_io.hpp"

namespace attn::cli {

namespace {

void setup(CLI::App& app, Context& context) {
  add_plain_lesson_command(app, context, "dot-product", lessons::run_dot_product);
}

const Registration kRegistration{"dot-product", setup};

}  // namespace

}  // namespace attn::cli
