// attn bpe: lesson 16. attn tokenizer train: the same training on a corpus file, writing GPT-2's
// vocab.json and merges.txt into --save DIR.
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "16-bpe/bpe_lesson.hpp"
#include "base/error.hpp"
#include "base/utf8.hpp"
#include "command.hpp"
#include "door.hpp"
#include "io/bpe_train.hpp"
#include "io/file_io.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

// The lesson prints every merge, so it stops at 200 of them; attn tokenizer train at a million
// tokens (GPT-4's vocabulary has about 100,000).
constexpr long long kLessonMostVocabulary = 256 + 200;
constexpr long long kMostVocabulary = 1'000'000;

// What training holds for a text of `bytes` bytes at worst: the text, each chunk's ids (int32 a
// byte), the distinct chunks and their pairs' counts (a hash entry and a set node each, at most a
// pair a byte; English text has far fewer: 1 MB of it peaks at 40 MB).
MemoryPlan training_plan(std::size_t bytes) {
  return {{"the text", {bytes}, "T", 1, Held::kept},
          {"the chunks' ids", {bytes}, "T", 4, Held::computing, bytes / 4},
          {"the pairs' counts", {bytes}, "T", 8, Held::computing, bytes}};
}

struct BpeCliOptions {
  lessons::BpeLessonOptions lesson;
  render::OutputOptions output;
};

void run_lesson(BpeCliOptions& o, Context& context) {
  check_utf8(o.lesson.text, "text", "bpe");
  if (o.lesson.text.empty())
    throw Error(ErrorKind::bad_value, "bpe",
                "the text is empty: give a sentence to train on, e.g. --text 'low lower lowest'")
        .about("text");
  check_budget("bpe", training_plan(o.lesson.text.size()));
  context.exit_code = publish(lessons::run_bpe(o.lesson), o.output, context);
}

void setup_bpe(CLI::App& app, Context& context) {
  auto o = std::make_shared<BpeCliOptions>();
  CLI::App* sub = add_lesson_command(app, "bpe");
  sub->add_option("--text", o->lesson.text, "the text to train on (default a sentence about cats)")
      ->option_text("TEXT");
  sub->add_option("--vocab-size", o->lesson.vocab_size,
                  fmt::format("the 256 bytes plus the merges, as minbpe's vocab_size (default "
                              "268: 12 merges; at most {})",
                              kLessonMostVocabulary))
      ->check(whole_number_validator(256, kLessonMostVocabulary))
      ->option_text("N");
  add_output_options(*sub, o->output);
  door_callback(*sub, [o, &context] { run_lesson(*o, context); });
}

struct TrainCliOptions {
  std::string corpus;
  std::size_t vocab_size = 512;
  render::OutputOptions output;
};

// The corpus: a regular non-empty file of UTF-8 text; the plan is checked on its size before it
// is read.
std::string read_corpus(const std::string& path) {
  std::string text;
  try {
    InputFile file(path, "a UTF-8 text file");
    check_budget("tokenizer train", training_plan(static_cast<std::size_t>(file.size())));
    const std::vector<unsigned char> bytes =
        file.read_rest(memory_cap("give a smaller corpus, or raise --max-memory"));
    text.assign(bytes.begin(), bytes.end());
  } catch (const Error& e) {
    // The corpus drives the plan: a smaller one is the advice, not the lessons' sizes.
    std::string detail = e.detail();
    if (constexpr std::string_view kSizes = "use smaller sizes"; detail.ends_with(kSizes))
      detail.replace(detail.size() - kSizes.size(), kSizes.size(), "give a smaller --corpus");
    throw Error(e.kind(), e.function(), detail)
        .about(e.kind() == ErrorKind::too_large ? "" : "corpus");
  }
  if (text.empty())
    throw Error(ErrorKind::bad_file, "tokenizer train",
                fmt::format("'{}' is empty: give a text file to train on", printable(path)))
        .about("corpus");
  const std::size_t at = std::min(utf8_error(text), text.find('\0'));
  if (at != std::string::npos)
    throw Error(ErrorKind::bad_file, "tokenizer train",
                fmt::format("'{}' is not UTF-8 text: byte 0x{:02x} at offset {} (a binary "
                            "file?); give a UTF-8 text file",
                            printable(path), static_cast<unsigned char>(text[at]), at))
        .about("corpus");
  return text;
}

void run_train(TrainCliOptions& o, Context& context) {
  const std::string text = read_corpus(o.corpus);
  const BpeTraining training = train_bpe(text, o.vocab_size);
  context.exit_code = publish(
      lessons::run_tokenizer_train(std::filesystem::path(o.corpus).filename().string(), training),
      o.output, context);
}

void setup_tokenizer(CLI::App& app, Context& context) {
  CLI::App* group =
      app.add_subcommand("tokenizer", "tokenizers of your own: train a byte-level BPE");
  group->require_subcommand(0, 1);
  door_callback(*group, [group] {
    if (group->get_subcommands().empty())
      throw Error(ErrorKind::bad_value, "tokenizer",
                  "give a subcommand: `attn tokenizer train --corpus FILE --vocab-size N "
                  "--save DIR` trains a byte-level BPE");
  });
  auto o = std::make_shared<TrainCliOptions>();
  CLI::App* sub = group->add_subcommand(
      "train",
      "train a byte-level BPE on a text file as minbpe does (GPT-2's pattern) and write GPT-2's "
      "vocab.json and merges.txt into --save DIR");
  sub->add_option("--corpus", o->corpus, "the UTF-8 text file to train on")
      ->required()
      ->check(not_empty_validator("--corpus", "book.txt"))
      ->option_text("FILE");
  sub->add_option("--vocab-size", o->vocab_size,
                  fmt::format("the 256 bytes plus the merges, as minbpe's vocab_size; "
                              "<|endoftext|> comes after them (default 512, at most {})",
                              kMostVocabulary))
      ->check(whole_number_validator(256, kMostVocabulary))
      ->option_text("N");
  add_output_options(*sub, o->output);
  sub->footer("Example:\n  attn tokenizer train --corpus book.txt --vocab-size 512 --save my-bpe");
  door_callback(*sub, [o, &context] { run_train(*o, context); });
}

const Registration kBpe{"bpe", setup_bpe};
const Registration kTokenizer{"tokenizer", setup_tokenizer};

}  // namespace

}  // namespace attn::cli
