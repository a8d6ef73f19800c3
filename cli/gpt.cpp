// attn gpt: lesson 15. GPT-2's decoder-only model step by step on --text: the shipped character
// GPT (gpt-char, trained on Moby-Dick), an untrained one drawn from --seed, or a Hugging Face GPT-2
// folder (--pretrained).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "15-gpt/gpt_lesson.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "pretrained.hpp"

namespace attn::cli {

namespace {

constexpr const char* kDefaultText = "to be or not to be";

struct GptCliOptions {
  std::string text, pretrained;
  std::uint64_t seed = 0;
  std::size_t layer = 0;
  render::OutputOptions output;
};

// The model the lesson runs, its tokenizer and the text's tokens, with the memory plan checked
// before any weight is read: a GPT-2 folder (--pretrained), or the lesson's character GPT.
struct LessonModel {
  Gpt2 model;
  BpeTokenizer tokenizer;
  std::string name;
  std::vector<std::int64_t> ids;
};

std::vector<std::int64_t> character_ids(const BpeTokenizer& tokenizer, const std::string& text,
                                        std::size_t positions) {
  for (std::size_t i = 0; i < text.size(); ++i)
    if (lessons::kGptCharacters.find(text[i]) == std::string_view::npos)
      throw Error(
          ErrorKind::bad_value, "gpt",
          fmt::format("{} is not one of the model's {} characters: use a newline, a "
                      "space, !',-.? and a to z, e.g. --text \"{}\"",
                      printable_character(text, i), lessons::kGptCharacters.size(), kDefaultText))
          .about("text");
  if (text.size() > positions)
    throw Error(ErrorKind::bad_size, "gpt",
                fmt::format("{} characters, more than the model's {} positions (n_positions): "
                            "give a shorter --text",
                            text.size(), positions))
        .about("text");
  return encode(tokenizer, text);
}

LessonModel lesson_model(const GptCliOptions& o, const CLI::App& app) {
  const std::string text = o.text.empty() ? kDefaultText : o.text;
  // By default the shipped character GPT, trained on Moby-Dick; --seed draws an untrained one.
  std::string path = o.pretrained, name = o.pretrained;
  if (path.empty() && app.count("--seed") == 0) {
    if (const std::optional<std::string> shipped = shipped_checkpoint_folder("gpt-char")) {
      path = *shipped;
      name = "gpt-char (shipped)";
    }
  }
  if (path.empty()) {
    lessons::CharacterGpt gpt = lessons::seeded_character_gpt(o.seed);
    LessonModel out{std::move(gpt.model),
                    std::move(gpt.tokenizer),
                    fmt::format("a character GPT drawn from seed {}", o.seed),
                    {}};
    out.ids = character_ids(out.tokenizer, text, out.model.config.sizes.max_position_embeddings);
    check_budget("gpt", lessons::plan_gpt_lesson(out.model.config, out.ids.size()));
    return out;
  }
  refuse_beside_pretrained(app, {"--seed"}, "gpt");
  PretrainedFolder folder = open_folder(path);
  if (!is_gpt2(folder))
    throw Error(ErrorKind::bad_value, "gpt",
                fmt::format("'{}' is a BERT folder, an encoder: lesson 09 shows it (attn encoder "
                            "--pretrained {}); give a GPT-2 folder",
                            printable(o.pretrained), printable(o.pretrained)))
        .about("pretrained");
  PretrainedGpt2 gpt2 = open_gpt2(std::move(folder));
  const Gpt2Text tokens = gpt2_text(gpt2, text, "");
  MemoryPlan plan = plan_gpt2_reading(gpt2);
  append(plan, lessons::plan_gpt_lesson(gpt2.config, tokens.tokens.size()));
  check_budget("gpt", plan);
  LessonModel out{read_gpt2(gpt2), std::move(gpt2.tokenizer), name, {}};
  out.ids.assign(tokens.input.ids.begin(), tokens.input.ids.end());
  return out;
}

void run(const GptCliOptions& o, const CLI::App& app, Context& context) {
  const LessonModel m = lesson_model(o, app);
  const std::size_t blocks = m.model.layers.size();
  if (o.layer >= blocks)
    throw Error(ErrorKind::bad_value, "gpt",
                fmt::format("block {} does not exist: the model has {} blocks, 0 to {}", o.layer,
                            blocks, blocks - 1))
        .about("layer");
  lessons::GptLessonOptions l;
  l.model = &m.model;
  l.tokenizer = &m.tokenizer;
  l.name = m.name;
  l.ids = m.ids;
  l.text = o.text.empty() ? kDefaultText : o.text;
  l.layer = o.layer;
  context.exit_code = publish(lessons::run_gpt(l), o.output, context);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<GptCliOptions>();
  CLI::App* sub = add_lesson_command(app, "gpt");
  sub->add_option("--text", o->text,
                  fmt::format("the text the model reads (default \"{}\"); the lesson's model "
                              "knows a newline, space, !',-.? and a to z",
                              kDefaultText))
      ->check(not_empty_validator("--text", kDefaultText))
      ->option_text("TEXT");
  sub->add_option("--seed", o->seed,
                  "run an untrained character GPT drawn from this seed instead of the shipped "
                  "gpt-char")
      ->check(seed_validator())
      ->option_text("N");
  sub->add_option("--layer", o->layer, "the block shown step by step (default 0)")
      ->check(whole_number_validator(0, 1'000'000))
      ->option_text("N");
  add_pretrained_option(*sub, o->pretrained)->check(not_empty_validator("--pretrained", "gpt2"));
  add_output_options(*sub, o->output);
  add_heatmap_option(*sub, o->output);
  door_callback(*sub, [o, sub, &context] { run(*o, *sub, context); });
}

const Registration kRegistration{"gpt", setup};

}  // namespace

}  // namespace attn::cli
