// attn induction: lesson 18. The induction circuit of an attention-only GPT: a folder attn train
// --task induction saved (by default the shipped `induction` checkpoint), its recorded training
// run, its heads' scores, the composition of its two heads and the ablations that prove it.
// Training one is `attn train --task induction` (cli/train.cpp).
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "18-induction/induction_lesson.hpp"
#include "base/budget.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "io/weights.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "pretrained.hpp"
#include "train/induction.hpp"

namespace attn::cli {

namespace {

struct InductionCliOptions {
  std::string checkpoint = "induction";  // the shipped one
  render::OutputOptions output;
};

void run(const InductionCliOptions& o, Context& context) {
  // The lesson's measurements: the engine on batches of 64 held-out sequences, at the task's sizes.
  const InductionConfig sizes;
  try {
    check_budget("induction", plan_gpt_training(induction_model_config(sizes), 64, sizes.tokens));
  } catch (const Error& e) {
    std::string detail = e.detail();
    if (const auto at = detail.rfind("use smaller sizes"); at != std::string::npos)
      detail.replace(at, detail.size() - at, "give a smaller --checkpoint, or a larger limit");
    throw Error(e.kind(), e.function(), detail).about("max_memory");
  }
  const bool shipped_name = is_shipped_checkpoint_name(o.checkpoint);
  std::string path = o.checkpoint;
  if (shipped_name) {
    const std::optional<std::string> folder = shipped_checkpoint_folder(o.checkpoint);
    if (!folder || o.checkpoint != "induction")
      throw Error(ErrorKind::bad_file, "induction",
                  fmt::format("'{}' is not an induction model: give the shipped induction, or "
                              "train one with attn train --task induction --save-checkpoint DIR "
                              "and give --checkpoint ./DIR",
                              printable(o.checkpoint)))
          .about("checkpoint");
    path = *folder;
  }
  lessons::InductionLessonOptions lesson;
  try {
    PretrainedGpt2 gpt2 = open_gpt2(open_folder(path));
    InductionRecord record = read_induction_record(gpt2.folder.metadata, gpt2.folder.shown);
    const Gpt2Config expected = induction_model_config(record.config);
    const EncoderConfig &s = gpt2.config.sizes, &e = expected.sizes;
    if (s.vocab_size != e.vocab_size || s.max_position_embeddings != e.max_position_embeddings ||
        s.hidden_size != e.hidden_size || s.num_attention_heads != e.num_attention_heads ||
        s.num_hidden_layers != e.num_hidden_layers)
      throw Error(ErrorKind::bad_file, "induction",
                  fmt::format("{}: config.json describes another model than its attn_induction "
                              "record: give the folder as attn train --task induction wrote it",
                              gpt2.folder.shown));
    GptModel model = gpt_from_weights(
        gpt2.config,
        check_gpt2_weights(gpt2.config, read_pretrained_weights(gpt2.folder, gpt2_reads),
                           gpt2.folder.shown),
        gpt2.folder.shown);
    model.attention_only = true;
    lesson.config = record.config;
    lesson.trained = std::move(model);
    lesson.history = std::move(record.history);
    lesson.name = lessons::checkpoint_label(o.checkpoint);
  } catch (const Error& e) {
    if (!e.subject().empty() && e.subject() != "pretrained") throw;
    throw Error(e.kind(), e.function(), e.detail()).about("checkpoint");
  }
  context.exit_code = publish(lessons::run_induction(std::move(lesson)).run, o.output, context);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<InductionCliOptions>();
  CLI::App* sub = add_lesson_command(app, "induction");
  sub->add_option("--checkpoint", o->checkpoint,
                  "the shipped induction (default), or a folder attn train --task induction "
                  "--save-checkpoint wrote")
      ->check(not_empty_validator("--checkpoint", "induction"))
      ->option_text("NAME|DIR");
  add_output_options(*sub, o->output);
  door_callback(*sub, [o, &context] { run(*o, context); });
}

const Registration kRegistration{"induction", setup};

}  // namespace

}  // namespace attn::cli
