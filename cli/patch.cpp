// attn patch: lesson 20. Activation patching of a GPT-2 (a Hugging Face folder with --pretrained,
// or the shipped gpt-char) from a clean text into a corrupt one of the same length, and direct
// logit attribution of the clean run (core/interp.hpp).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "20-patch/patch_lesson.hpp"
#include "command.hpp"
#include "door.hpp"
#include "io/bpe.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "output.hpp"
#include "pretrained.hpp"
#include "run_page.hpp"

namespace attn::cli {

namespace {

constexpr const char* kDefaultCheckpoint = "gpt-char";
// gpt-char's default pair: one character apart, and the model's next character differs ('e' after
// "whal", 'l' after "shal").
constexpr const char* kDefaultClean = "the white whal";
constexpr const char* kDefaultCorrupt = "the white shal";

struct PatchCliOptions {
  std::string checkpoint = kDefaultCheckpoint;
  std::string pretrained;
  std::string clean, corrupt, clean_ids, corrupt_ids;
  std::string answer, wrong;
  std::string export_path;
  render::OutputOptions output;
};

// Runs `f`, its attn::Error said to be about the option `subject`.
template <class F>
auto about_option(const std::string& subject, F&& f) {
  try {
    return f();
  } catch (Error& e) {
    e.about(subject);
    throw;
  }
}

// --clean/--corrupt by the folder's tokenizer, or --clean-ids/--corrupt-ids as they are.
std::vector<std::int64_t> tokens_of(const PretrainedGpt2& gpt2, const std::string& text,
                                    const std::string& ids, const std::string& name) {
  if (!ids.empty()) {
    if (!text.empty())
      throw Error(ErrorKind::bad_value, "patch",
                  fmt::format("give the {} tokens once: --{} or --{}-ids", name, name, name))
          .about(name + "_ids");
    return about_option(name + "_ids",
                        [&] { return parse_ids(ids, gpt2.config.sizes.vocab_size); });
  }
  check_utf8(text, name, "patch");
  std::vector<std::int64_t> out = about_option(name, [&] { return encode(gpt2.tokenizer, text); });
  if (out.empty())
    throw Error(ErrorKind::bad_value, "patch",
                fmt::format("--{} has no token: give a text, e.g. --{} \"{}\"", name, name,
                            name == "clean" ? kDefaultClean : kDefaultCorrupt))
        .about(name);
  return out;
}

// --answer/--wrong: one token of the vocabulary, as the text encodes it or as vocab.json spells it
// ("ĠParis").
std::optional<std::int64_t> answer_token(const PretrainedGpt2& gpt2, const std::string& text,
                                         const std::string& name) {
  if (text.empty()) return std::nullopt;
  check_utf8(text, name, "patch");
  if (const std::optional<std::int64_t> id = gpt2.tokenizer.find(text)) return id;
  const std::vector<std::int64_t> ids =
      about_option(name, [&] { return encode(gpt2.tokenizer, text); });
  if (ids.size() == 1) return ids[0];
  std::vector<std::string> pieces;
  for (std::int64_t id : ids)
    pieces.push_back(fmt::format("'{}'", gpt2_token(gpt2, id)));
  throw Error(ErrorKind::bad_value, "patch",
              fmt::format("'{}' is {} tokens of the model's vocabulary ({}), not one: give one "
                          "token, e.g. --{} '{}'",
                          printable(text, 40), ids.size(), fmt::join(pieces, ", "), name,
                          ids.empty() ? "e" : gpt2_token(gpt2, ids[0])))
      .about(name);
}

int run_patch(PatchCliOptions& o, const CLI::App& app, Context& context) {
  if (!o.export_path.empty()) render::check_page_path(o.export_path, "export");
  std::string name;
  if (!o.pretrained.empty()) {
    if (app.count("--checkpoint") > 0)
      throw Error(ErrorKind::bad_value, "patch",
                  "give the model once: --pretrained DIR or --checkpoint gpt-char")
          .about("checkpoint");
    name = o.pretrained;
  } else {
    const std::optional<std::string> folder = shipped_checkpoint_folder(o.checkpoint);
    if (!folder)
      throw Error(ErrorKind::bad_value, "patch",
                  fmt::format("'{}' is not a GPT: attn patch runs a GPT-2, the shipped gpt-char "
                              "(--checkpoint gpt-char) or a Hugging Face folder (--pretrained DIR)",
                              printable(o.checkpoint, 60)))
          .about("checkpoint");
    o.pretrained = *folder;
    name = o.checkpoint + " (shipped)";
  }
  PretrainedFolder folder = open_folder(o.pretrained);
  if (!is_gpt2(folder))
    throw Error(ErrorKind::bad_value, "patch",
                fmt::format("'{}' is a BERT folder, an encoder with no next token to patch: give a "
                            "GPT-2 folder (--pretrained DIR) or --checkpoint gpt-char",
                            printable(o.pretrained, 60)))
        .about("pretrained");
  const PretrainedGpt2 gpt2 = open_gpt2(std::move(folder));
  const bool default_pair =
      o.clean.empty() && o.corrupt.empty() && o.clean_ids.empty() && o.corrupt_ids.empty();
  if (default_pair) {
    if (!shipped_checkpoint_folder(o.checkpoint) || app.count("--pretrained") > 0)
      throw Error(ErrorKind::bad_value, "patch",
                  "give the two texts: --clean TEXT --corrupt TEXT, the same number of tokens")
          .about("clean");
    o.clean = kDefaultClean;
    o.corrupt = kDefaultCorrupt;
  }
  for (const char* side : {"clean", "corrupt"}) {
    const bool text = std::string(side) == "clean" ? !o.clean.empty() : !o.corrupt.empty();
    const bool ids = std::string(side) == "clean" ? !o.clean_ids.empty() : !o.corrupt_ids.empty();
    if (!text && !ids)
      throw Error(ErrorKind::bad_value, "patch",
                  fmt::format("--{} is missing: patching needs a clean and a corrupt text "
                              "(--clean TEXT --corrupt TEXT, or --clean-ids and --corrupt-ids)",
                              side))
          .about(side);
  }
  lessons::PatchLessonOptions l;
  l.clean = tokens_of(gpt2, o.clean, o.clean_ids, "clean");
  l.corrupt = tokens_of(gpt2, o.corrupt, o.corrupt_ids, "corrupt");
  if (l.clean.size() != l.corrupt.size())
    throw Error(ErrorKind::bad_value, "patch",
                fmt::format("the clean text is {} tokens and the corrupt {}: patching puts each "
                            "position of one run into the other, so give two texts of the same "
                            "number of tokens",
                            l.clean.size(), l.corrupt.size()))
        .about(o.corrupt_ids.empty() ? "corrupt" : "corrupt_ids");
  const std::size_t positions = gpt2.config.sizes.max_position_embeddings;
  if (l.clean.size() > positions)
    throw Error(ErrorKind::bad_size, "patch",
                fmt::format("{} tokens, more than the model's {} positions (n_positions): give "
                            "shorter texts",
                            l.clean.size(), positions))
        .about(o.clean_ids.empty() ? "clean" : "clean_ids");
  l.answer = answer_token(gpt2, o.answer, "answer");
  l.wrong = answer_token(gpt2, o.wrong, "wrong");
  l.name = name;
  l.clean_text = o.clean_ids.empty() ? o.clean : "ids " + o.clean_ids;
  l.corrupt_text = o.corrupt_ids.empty() ? o.corrupt : "ids " + o.corrupt_ids;
  l.token = [&gpt2](std::int64_t id) { return gpt2_token(gpt2, id); };

  MemoryPlan plan = plan_gpt2_reading(gpt2);
  append(plan, lessons::plan_patch_lesson(gpt2.config, l.clean.size()));
  check_budget("patch", plan);
  const Gpt2 model = read_gpt2(gpt2);
  l.model = &model;
  const lessons::LessonRun run = [&] {
    try {
      return lessons::run_patch(l);
    } catch (Error& e) {
      if (e.subject() == "corrupt" && !o.corrupt_ids.empty()) e.about("corrupt_ids");
      throw;
    }
  }();
  std::vector<render::FileOutput> files;
  if (!o.export_path.empty()) {
    const std::string page =
        render::run_page_html(run, fmt::format("attn patch: {}", printable(name, 60)));
    files.push_back(
        {o.export_path, "export", std::vector<unsigned char>(page.begin(), page.end())});
  }
  return publish(run, o.output, context, files);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<PatchCliOptions>();
  CLI::App* sub = add_lesson_command(app, "patch");
  sub->add_option("--checkpoint", o->checkpoint,
                  fmt::format("a shipped GPT-2 folder (default {})", kDefaultCheckpoint))
      ->check(not_empty_validator("--checkpoint", kDefaultCheckpoint))
      ->option_text("NAME");
  add_pretrained_option(*sub, o->pretrained)->check(not_empty_validator("--pretrained", "gpt2"));
  sub->add_option("--clean", o->clean,
                  fmt::format("the clean text (gpt-char's default: \"{}\")", kDefaultClean))
      ->check(not_empty_validator("--clean", kDefaultClean))
      ->option_text("TEXT");
  sub->add_option("--corrupt", o->corrupt,
                  fmt::format("the corrupt text, as many tokens as the clean one (gpt-char's "
                              "default: \"{}\")",
                              kDefaultCorrupt))
      ->check(not_empty_validator("--corrupt", kDefaultCorrupt))
      ->option_text("TEXT");
  sub->add_option("--clean-ids", o->clean_ids, "the clean text as token ids, e.g. 464,3290")
      ->check(not_empty_validator("--clean-ids", "464,3290"))
      ->option_text("I,I,...");
  sub->add_option("--corrupt-ids", o->corrupt_ids, "the corrupt text as token ids")
      ->check(not_empty_validator("--corrupt-ids", "464,3291"))
      ->option_text("I,I,...");
  sub->add_option("--answer", o->answer,
                  "the token the clean text should lead to (default: the clean run's top token)")
      ->check(not_empty_validator("--answer", "e"))
      ->option_text("TOKEN");
  sub->add_option("--wrong", o->wrong,
                  "the token to compare it with (default: the corrupt run's top token)")
      ->check(not_empty_validator("--wrong", "l"))
      ->option_text("TOKEN");
  add_output(*sub, "--export", o->export_path, OutputKind::page,
             "write the tables and heatmaps as a page (.html)");
  add_output_options(*sub, o->output);
  door_callback(*sub, [o, sub, &context] { context.exit_code = run_patch(*o, *sub, context); });
}

const Registration kRegistration{"patch", setup};

}  // namespace

}  // namespace attn::cli
