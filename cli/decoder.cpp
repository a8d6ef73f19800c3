// attn decoder: lesson 13.
#include <memory>
#include <string>

#include "13-decoder/decoder_lesson.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct DecoderCliOptions {
  LessonCliOptions cli;
  lessons::DecoderLessonOptions lesson;
  std::string lengths;
};

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<DecoderCliOptions>();
  CLI::App* sub = add_lesson_command(app, "decoder");
  add_lesson_options(*sub, o->cli);
  add_heatmap_option(*sub, o->cli.output);
  sub->add_option("--heads", o->lesson.heads, "H, heads (default 2)")
      ->check(size_validator())
      ->option_text("H");
  sub->add_option("--d-ff", o->lesson.d_ff, "F, the feed-forward width (default 16)")
      ->check(size_validator(16384))
      ->option_text("F");
  sub->add_option("--source-seq", o->lesson.source_seq,
                  "S, the source's tokens the cross-attention reads (default 6)")
      ->check(size_validator(4096))
      ->option_text("S");
  sub->add_option("--vocab", o->lesson.vocab, "V, the target vocabulary (default 10)")
      ->check(size_validator(1'000'000))
      ->option_text("V");
  sub->add_option("--lengths", o->lengths,
                  "pad the targets: target b has the b-th number of real tokens, e.g. 5,3")
      ->check(not_empty_validator("--lengths", "5,3"))
      ->option_text("N,N,...");
  door_callback(*sub, [o, &context] {
    load_lesson_input(o->cli, context);
    o->lesson.common = o->cli.lesson;
    if (!o->lengths.empty())
      o->lesson.lengths = parse_size_list(o->lengths, "lengths", "--lengths");
    context.exit_code = publish(lessons::run_decoder(o->lesson), o->cli.output, context);
  });
}

const Registration kRegistration{"decoder", setup};

}  // namespace

}  // namespace attn::cli
