// The options subcommands share, with their validators. Every value is checked by a validator of
// ours, so every message about a value is attn's own words, never CLI11's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "lesson.hpp"
#include "output.hpp"

namespace attn::cli {

struct LessonCliOptions {
  lessons::LessonOptions lesson;
  std::string input_path;
  render::OutputOptions output;
  // The size options, to tell a size the user gave from a default.
  const CLI::Option* batch_option = nullptr;
  const CLI::Option* seq_option = nullptr;
  const CLI::Option* width_option = nullptr;
};

// A lesson's subcommand: the catalog's summary as its help, and its examples in the help's footer.
CLI::App* add_lesson_command(CLI::App& app, std::string_view name);

// --seed --batch --seq [--d-model] --input and the output options, on a lesson's subcommand.
// `input_shape` describes --input's axes in the help, e.g. "(B, T, D)". --input and a size it
// fixes may be given together when they agree (see check_input_sizes).
void add_lesson_options(CLI::App& app, LessonCliOptions& options,
                        const char* input_shape = "(B, T, D)", bool with_width = true);
// --format --save --precision --full --color --quiet --max-memory --threads.
void add_output_options(CLI::App& app, render::OutputOptions& options);
// --heatmap-scale auto|fixed|row, on the lessons that draw attention weights.
void add_heatmap_option(CLI::App& app, render::OutputOptions& options);
// --max-memory SIZE: the memory limit of core/base/budget.hpp.
void add_memory_option(CLI::App& app);
// --threads N: OpenBLAS's threads.
void add_threads_option(CLI::App& app);

// --mask none|causal and --lengths N,N,..., on the attention lessons.
struct MaskCliOptions {
  std::string mask = "none";
  std::string lengths;
};
void add_mask_options(CLI::App& app, MaskCliOptions& options);
// --lengths as sizes.
std::vector<std::size_t> mask_lengths(const MaskCliOptions& options);

// --weights and --save-weights, on a lesson with parameters.
void add_weights_options(CLI::App& app, std::string& weights_path, render::OutputOptions& output);

// A whole number from 1 to `max`.
CLI::Validator size_validator(std::size_t max = 1'000'000'000);
// A whole number from `min` to `max` (--threads, --depth, ...).
CLI::Validator whole_number_validator(long long min, long long max);
// A number written in decimal (1.5, 2e-3; no hex, no blanks) from `min` to `max`; `what` names it
// ("a temperature") and `example` is one to show.
CLI::Validator real_validator(std::string what, double min, double max, std::string example);
// A seed: a whole number from 0 to 2^64-1.
CLI::Validator seed_validator();
// A value that may not be empty, which would read as "not given"; `example` follows `option`.
CLI::Validator not_empty_validator(std::string option, std::string example);
// One of `words`; anything else is refused with the words to use.
CLI::Validator choice_validator(std::string what, std::vector<std::string> words);

// The words of a choice travel in its validator's name (CLI11 prints a validator's name nowhere),
// so that the shell completions and the man page (command_tree.hpp) read them off the option.
std::string choice_validator_name(const std::vector<std::string>& words);
// The words `option` takes: those of its choice_validator or enum_validator, or of offer_words;
// empty for an option that takes any value, or none.
std::vector<std::string> offered_words(CLI::Option& option);
// Offers `words` for `option` in the completions without checking them: for a value its command
// checks itself, with a message of its own (attn view's kind, attn summary's model).
CLI::Option* offer_words(CLI::Option* option, const std::vector<std::string>& words);

// The refusal of `text` when it is none of `words`, or "" when it is one.
std::string choice_error(std::string_view what, const std::vector<std::string>& words,
                         const std::string& text);

// One of a fixed set of words, turned into the enum's number for CLI11 (which reads enums as
// integers); anything else, the numbers included, is refused with the words to use.
template <class Enum>
CLI::Validator enum_validator(std::string what, std::vector<std::pair<std::string, Enum>> choices) {
  std::vector<std::string> words;
  for (const auto& choice : choices)
    words.push_back(choice.first);
  std::string name = choice_validator_name(words);
  return CLI::Validator(
      [what = std::move(what), words = std::move(words),
       choices = std::move(choices)](std::string& text) {
        std::string error = choice_error(what, words, text);
        for (const auto& [word, value] : choices)
          if (error.empty() && text == word) text = std::to_string(static_cast<int>(value));
        return error;
      },
      "", std::move(name));
}

// "a", "a or b", "a, b or c" (or with another conjunction: "a, b and c").
std::string or_list(const std::vector<std::string>& words, std::string_view conjunction = "or");

// "3,5" -> {3, 5}: whole numbers of at least 1, comma-separated; the error is about `subject`
// and names `option` in its example.
std::vector<std::size_t> parse_size_list(const std::string& text, std::string_view subject,
                                         std::string_view option);

}  // namespace attn::cli
