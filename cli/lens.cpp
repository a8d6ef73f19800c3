// attn lens: lesson 19, the logit lens on a decoder: the shipped gpt-char (default), a GPT folder
// of attn train --model gpt (--checkpoint DIR), or a Hugging Face GPT-2 folder (--pretrained).
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "19-lens/lens_lesson.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "image_file.hpp"
#include "lens_page.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "pretrained.hpp"

namespace attn::cli {

namespace {

constexpr const char* kDefaultCheckpoint = "gpt-char";
// The opening of gpt-char's corpus, Moby-Dick; every GPT-2 vocabulary spells it too.
constexpr const char* kDefaultText = "Call me Ishmael. Some years ago";
constexpr const char* kWhatWorks =
    "the lens needs a decoder trained to predict the next token: give --checkpoint gpt-char, a "
    "folder of attn train --model gpt --save-checkpoint DIR, or --pretrained with a GPT-2 folder";

struct LensCliOptions {
  std::string checkpoint = kDefaultCheckpoint;
  std::string pretrained, text, ids, export_path;
  std::size_t top = 5;
  std::size_t position = 0;
  render::OutputOptions output;
};

// The GPT-2 folder the lens reads, and how the settings name it: --pretrained, a shipped folder by
// its bare name, or a folder path given to --checkpoint. An encoder's checkpoint is refused.
std::pair<std::string, std::string> model_folder(const LensCliOptions& o, const CLI::App& app,
                                                 Context& context) {
  if (!o.pretrained.empty()) {
    if (app.count("--checkpoint") > 0)
      throw Error(ErrorKind::bad_value, "lens",
                  "--checkpoint and --pretrained both name the model: give one")
          .about("checkpoint");
    return {o.pretrained, o.pretrained};
  }
  if (const std::optional<std::string> shipped = shipped_checkpoint_folder(o.checkpoint))
    return {*shipped, o.checkpoint + " (shipped)"};
  std::error_code ec;
  if (std::filesystem::is_directory(o.checkpoint, ec)) return {o.checkpoint, o.checkpoint};
  // A checkpoint file of attn train: an encoder (a head on every token) or an encoder-decoder.
  const TrainedCheckpoint checkpoint = load_checkpoint(o.checkpoint, context);
  const bool seq2seq = std::holds_alternative<Transformer>(checkpoint.model);
  throw Error(ErrorKind::bad_value, "lens",
              fmt::format("'{}' is {}; {}", printable(o.checkpoint),
                          seq2seq ? "attn train's encoder-decoder, whose decoder reads an "
                                    "encoder's memory"
                                  : "a checkpoint of attn train's encoder, which labels tokens "
                                    "rather than predicting the next one",
                          kWhatWorks))
      .about("checkpoint");
}

void run(LensCliOptions& o, const CLI::App& app, Context& context) {
  const std::pair<std::string, std::string> found = model_folder(o, app, context);
  const std::string& path = found.first;
  const std::string& name = found.second;
  const std::string subject = o.pretrained.empty() ? "checkpoint" : "pretrained";
  PretrainedFolder folder = [&] {
    try {
      return open_folder(path);
    } catch (const Error& e) {
      throw Error(e.kind(), e.function(), e.detail()).about(subject);
    }
  }();
  if (!is_gpt2(folder))
    throw Error(ErrorKind::bad_value, "lens",
                fmt::format("'{}' is a BERT folder, an encoder (it fills in [MASK], it does not "
                            "predict the next token); {}",
                            printable(path), kWhatWorks))
        .about(subject);
  const PretrainedGpt2 gpt2 = open_gpt2(std::move(folder));
  const std::string text = o.ids.empty() && o.text.empty() ? kDefaultText : o.text;
  const Gpt2Text tokens = gpt2_text(gpt2, text, o.ids);
  const std::size_t count = tokens.tokens.size();
  const std::size_t vocab = gpt2.config.sizes.vocab_size;
  if (count == 0)
    throw Error(ErrorKind::bad_value, "lens", "the text has no tokens: give a longer --text")
        .about("text");
  if (o.top > vocab)
    throw Error(ErrorKind::bad_value, "lens",
                fmt::format("{} is more than the model's {} tokens: give --top 1 to {}", o.top,
                            vocab, vocab))
        .about("top");
  const std::size_t position =
      app.count("--position") > 0 ? o.position : lessons::default_lens_position(count);
  if (position >= count)
    throw Error(ErrorKind::bad_value, "lens",
                fmt::format("position {} does not exist: the {} has {} tokens, positions 0 to {}",
                            position, o.ids.empty() ? "text" : "--ids list", count, count - 1))
        .about("position");
  if (!o.export_path.empty() && render::extension_of(o.export_path) != ".html")
    throw Error(ErrorKind::bad_value, "lens",
                fmt::format("'{}': the lens exports a page, not a picture: name it e.g. lens.html",
                            printable(o.export_path)))
        .about("export");
  MemoryPlan plan = plan_gpt2_reading(gpt2);
  append(plan, lessons::plan_lens_lesson(gpt2.config, count, o.top));
  if (!o.export_path.empty())
    plan.push_back({"the exported page",
                    {count * (gpt2.config.sizes.num_hidden_layers + 1), 400 + 40 * o.top},
                    "T L/K",
                    1});
  check_budget("lens", plan);
  const Gpt2 model = read_gpt2(gpt2);
  lessons::LensLessonOptions l;
  l.model = &model;
  l.tokenizer = &gpt2.tokenizer;
  l.name = name;
  l.ids.assign(tokens.input.ids.begin(), tokens.input.ids.end());
  l.text = o.ids.empty() ? text : "ids " + o.ids;
  l.top = o.top;
  l.position = position;
  const lessons::LensLessonRun lens = lessons::run_lens(l);
  std::vector<render::FileOutput> files;
  if (!o.export_path.empty()) {
    const std::string page = render::lens_html(lens.picture);
    files.push_back(
        {o.export_path, "export", std::vector<unsigned char>(page.begin(), page.end())});
  }
  context.exit_code = publish(lens.run, o.output, context, files);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<LensCliOptions>();
  CLI::App* sub = add_lesson_command(app, "lens");
  sub->add_option("--checkpoint", o->checkpoint,
                  fmt::format("a shipped GPT (default {}), or a folder of attn train --model gpt "
                              "--save-checkpoint DIR",
                              kDefaultCheckpoint))
      ->check(not_empty_validator("--checkpoint", kDefaultCheckpoint))
      ->option_text("NAME|DIR");
  add_pretrained_option(*sub, o->pretrained)->check(not_empty_validator("--pretrained", "gpt2"));
  sub->add_option("--text", o->text,
                  fmt::format("the text the lens reads (default \"{}\")", kDefaultText))
      ->check(not_empty_validator("--text", kDefaultText))
      ->option_text("TEXT");
  sub->add_option("--ids", o->ids, "the text as token ids instead, e.g. 464,3290")
      ->check(not_empty_validator("--ids", "464,3290"))
      ->option_text("I,I,...");
  sub->add_option("--top", o->top, "the tokens listed per row at --position (default 5)")
      ->check(whole_number_validator(1, 1'000'000))
      ->option_text("K");
  sub->add_option("--position", o->position,
                  "the position whose top K are listed (default: the last whose next token the "
                  "text holds)")
      ->check(whole_number_validator(0, 1'000'000))
      ->option_text("P");
  add_output(*sub, "--export", o->export_path, OutputKind::page,
             "write the lens as a self-contained .html page (every cell's top K on hover)");
  add_output_options(*sub, o->output);
  door_callback(*sub, [o, sub, &context] { run(*o, *sub, context); });
}

const Registration kRegistration{"lens", setup};

}  // namespace

}  // namespace attn::cli
