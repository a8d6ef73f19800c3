// attn positional-encoding: lesson 06.
#include <memory>

#include "06-positional-encoding/positional_encoding_lesson.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "mine_option.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct PositionalEncodingCliOptions {
  LessonCliOptions cli;
  lessons::PositionalEncodingLessonOptions lesson;
  std::size_t max_positions = 0;  // 0: not given
  std::string weights;
  bool mine = false;
};

void run(PositionalEncodingCliOptions& o, Context& context) {
  if (o.lesson.kind == "sinusoidal" && !o.weights.empty()) {
    throw Error(
        ErrorKind::bad_value, "positional_encoding",
        "the sinusoidal table is computed, not learned, so there are no weights to load: add --kind learned")
        .about("weights");
  }
  if (o.lesson.kind == "sinusoidal" && !o.cli.output.save_weights.empty()) {
    throw Error(
        ErrorKind::bad_value, "positional_encoding",
        "the sinusoidal table is computed, not learned, so there are no weights to save: add --kind learned, "
        "or --save DIR to keep the table as pe.npy")
        .about("save_weights");
  }
  load_lesson_input(o.cli, context);
  o.lesson.common = o.cli.lesson;
  if (o.max_positions != 0) o.lesson.max_positions = o.max_positions;
  load_weights_option(o.lesson, o.weights, context);
  lessons::LessonRun result = lessons::run_positional_encoding(o.lesson);
  add_mine_steps(result, o.mine);
  context.exit_code = publish(result, o.cli.output, context);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<PositionalEncodingCliOptions>();
  CLI::App* sub = add_lesson_command(app, "positional-encoding");
  add_lesson_options(*sub, o->cli);
  sub->add_option(
         "--kind", o->lesson.kind,
         "sinusoidal (seed 001 and the paper, default) or learned (the book's nn.Embedding)")
      ->check(choice_validator("a kind of encoding", {"sinusoidal", "learned"}))
      ->option_text("sinusoidal|learned");
  sub->add_option("--max-positions", o->max_positions,
                  "P, rows of the table, the longest T (default 512 or the rows of --weights)")
      ->check(size_validator())
      ->option_text("P");
  add_weights_options(*sub, o->weights, o->cli.output);
  add_mine_option(*sub, o->mine);
  door_callback(*sub, [o, &context] { run(*o, context); });
}

const Registration kRegistration{"positional-encoding", setup};

}  // namespace

}  // namespace attn::cli
