#include "options.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "catalog.hpp"
#include "door.hpp"
#include "matmul.hpp"
#include "save.hpp"

namespace attn::cli {

std::string or_list(const std::vector<std::string>& words, std::string_view conjunction) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? fmt::format(" {} ", conjunction) : std::string(", ");
    out += words[i];
  }
  return out;
}

std::string choice_error(std::string_view what, const std::vector<std::string>& words,
                         const std::string& text) {
  for (const std::string& word : words)
    if (text == word) return {};
  return fmt::format("'{}' is not {}: use {}", printable(text), what, or_list(words));
}

namespace {
constexpr std::string_view kChoiceTag = "one of:";
}  // namespace

std::string choice_validator_name(const std::vector<std::string>& words) {
  std::string name(kChoiceTag);
  for (const std::string& word : words)
    name += " " + word;
  return name;
}

CLI::Validator choice_validator(std::string what, std::vector<std::string> words) {
  std::string name = choice_validator_name(words);
  return CLI::Validator([what = std::move(what), words = std::move(words)](
                            std::string& text) { return choice_error(what, words, text); },
                        "", std::move(name));
}

std::vector<std::string> offered_words(CLI::Option& option) {
  // CLI11 2.1.2 reaches an option's validators by index only, and throws past the last one.
  for (int i = 0;; ++i) {
    const CLI::Validator* validator = nullptr;
    try {
      validator = option.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return {};
    }
    const std::string& name = validator->get_name();
    if (!name.starts_with(kChoiceTag)) continue;
    std::vector<std::string> words;
    std::istringstream in(name.substr(kChoiceTag.size()));
    for (std::string word; in >> word;)
      words.push_back(word);
    return words;
  }
}

CLI::Option* offer_words(CLI::Option* option, const std::vector<std::string>& words) {
  return option->check([](const std::string&) { return std::string(); }, "",
                       choice_validator_name(words));
}

CLI::Validator size_validator(std::size_t max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        std::size_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc::result_out_of_range ||
            (ec == std::errc() && ptr == end && value > max)) {
          return fmt::format("'{}' is too large: use a size from 1 to {}", printable(text), max);
        }
        if (ec != std::errc() || ptr != end || value == 0) {
          return fmt::format("'{}' is not a size: give a whole number from 1 to {}",
                             printable(text), max);
        }
        return {};
      },
      "SIZE");
}

CLI::Validator whole_number_validator(long long min, long long max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        long long value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc::invalid_argument || ptr != end) {
          return fmt::format("'{}' is not a whole number: give one from {} to {}", printable(text),
                             min, max);
        }
        if (ec == std::errc::result_out_of_range || value < min || value > max) {
          return fmt::format("'{}' is out of range: give a whole number from {} to {}",
                             printable(text), min, max);
        }
        return {};
      },
      "N");
}

CLI::Validator real_validator(std::string what, double min, double max, std::string example) {
  return CLI::Validator(
      [what = std::move(what), min, max,
       example = std::move(example)](std::string& text) -> std::string {
        // Decimal only: digits, one point, an exponent. strtod would also take hex, "inf" and blanks.
        const bool plain =
            !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string::npos;
        double value = 0.0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (!plain || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
          return fmt::format("'{}' is not {}: give a number such as {}", printable(text), what,
                             example);
        }
        if (ec == std::errc::result_out_of_range && !std::isfinite(max)) {
          return fmt::format("'{}' is beyond what a double holds: give {} such as {}",
                             printable(text), what, example);
        }
        if (ec == std::errc::result_out_of_range || !(value >= min && value <= max)) {
          return fmt::format("'{}' is outside {:g} to {:g}: give {} in that range", printable(text),
                             min, max, what);
        }
        return {};
      },
      "X");
}

CLI::Validator seed_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || ptr != text.data() + text.size()) {
          return fmt::format("'{}' is not a seed: give a whole number from 0 to 2^64-1",
                             printable(text));
        }
        return {};
      },
      "N");
}

CLI::Validator not_empty_validator(std::string option, std::string example) {
  return CLI::Validator(
      [option = std::move(option), example = std::move(example)](std::string& text) -> std::string {
        if (text.empty())
          return fmt::format("the value is empty: give one, e.g. {} {}", option, example);
        return {};
      },
      "");
}

CLI::App* add_lesson_command(CLI::App& app, std::string_view name) {
  const lessons::LessonInfo& info = lessons::lesson_info(name);
  CLI::App* sub = app.add_subcommand(std::string(name), std::string(info.summary));
  std::string footer = "Examples:";
  for (const auto& example : info.examples) {
    footer += fmt::format("\n  attn {}", name);
    for (std::string_view word : example) {
      const bool quote = word.find(' ') != std::string_view::npos;
      footer += quote ? fmt::format(" '{}'", word) : fmt::format(" {}", word);
    }
  }
  sub->footer(footer);
  return sub;
}

void add_memory_option(CLI::App& app) {
  app.add_option_function<std::string>(
         "--max-memory",
         [](const std::string& text) {
           try {
             set_memory_limit(parse_memory_size(text, "--max-memory"), "--max-memory");
           } catch (const Error& e) {
             throw Error(e.kind(), e.function(), e.detail()).about("max_memory");
           }
         },
         "refuse sizes whose tensors need more than SIZE, e.g. 512M or 4G (default: half this "
         "machine's memory, or ATTN_MAX_MEMORY)")
      ->check(not_empty_validator("--max-memory", "2G"))
      ->option_text("SIZE");
}

void add_threads_option(CLI::App& app) {
  app.add_option_function<int>(
         "--threads", [](const int& threads) { set_threads(threads); },
         "threads for the matrix products, one pool (default 1); other counts change only the last "
         "bits")
      ->check(whole_number_validator(1, 256))
      ->option_text("N");
}

void add_output_options(CLI::App& app, render::OutputOptions& o) {
  using render::ColorMode;
  using render::Format;
  add_memory_option(app);
  // The run's budget counts what showing it with these options costs.
  app.preparse_callback([&o](std::size_t) {
    set_output_cost([&o](const MemoryPlan& result) { return render::output_memory(o, result); });
  });
  add_threads_option(app);
  app.add_option("--format", o.format, "text (default) or json: one JSON document on stdout")
      ->transform(
          enum_validator<Format>("a format", {{"text", Format::text}, {"json", Format::json}}))
      ->option_text("text|json");
  app.add_option("--save", o.save_dir,
                 "write every step as DIR/<step>.npy plus DIR/manifest.json (all or nothing)")
      ->check(not_empty_validator("--save", "out"))
      ->option_text("DIR");
  declare_output(app, "--save", [&o] { render::check_outputs(o); });
  app.add_option("--precision", o.precision,
                 "digits after the point when printing tensors (default 4)")
      ->check(whole_number_validator(0, 16))
      ->option_text("P");
  app.add_flag("--full", o.full, "print whole tensors, never summarised with ...");
  app.add_option("--color", o.color,
                 "auto (default; off under NO_COLOR or when not a terminal), always, never")
      ->transform(enum_validator<ColorMode>("a color mode", {{"auto", ColorMode::automatic},
                                                             {"always", ColorMode::always},
                                                             {"never", ColorMode::never}}))
      ->option_text("auto|always|never");
  app.add_flag("--quiet", o.quiet, "only the final result and the parameter count");
}

void add_heatmap_option(CLI::App& app, render::OutputOptions& o) {
  using render::WeightScale;
  app.add_option("--heatmap-scale", o.weight_scale,
                 "colours of the weights' heatmaps: fixed (0 to 1), row (0 to each row's largest "
                 "weight), auto (default: row when every weight is below 0.5, else fixed)")
      ->transform(enum_validator<WeightScale>("a heatmap scale", {{"auto", WeightScale::automatic},
                                                                  {"fixed", WeightScale::fixed},
                                                                  {"row", WeightScale::per_row}}))
      ->option_text("auto|fixed|row");
}

void add_lesson_options(CLI::App& app, LessonCliOptions& o, const char* input_shape,
                        bool with_width) {
  app.add_option("--seed", o.lesson.seed, "random seed for the generated input (default 0)")
      ->check(seed_validator())
      ->option_text("N");
  o.batch_option =
      app.add_option("--batch", o.lesson.batch, "B, sequences in the batch (default 1)")
          ->check(size_validator())
          ->option_text("B");
  o.seq_option = app.add_option("--seq", o.lesson.seq, "T, tokens per sequence (default 5)")
                     ->check(size_validator())
                     ->option_text("T");
  app.add_option(
         "--input", o.input_path,
         fmt::format(
             "a float32 .npy of shape {} instead of random numbers (the sizes come from it)",
             input_shape))
      ->check(not_empty_validator("--input", "x.npy"))
      ->option_text("FILE.npy");
  if (with_width) {
    o.width_option =
        app.add_option("--d-model", o.lesson.d_model, "D, numbers per token (default 6)")
            ->check(size_validator())
            ->option_text("D");
  }
  add_output_options(app, o.output);
}

void add_mask_options(CLI::App& app, MaskCliOptions& o) {
  app.add_option("--mask", o.mask, "none (default) or causal: -inf above the diagonal")
      ->check(choice_validator("a mask", {"none", "causal"}))
      ->option_text("none|causal");
  app.add_option("--lengths", o.lengths, "padding: the real length of each sequence, e.g. 3,5")
      ->check(not_empty_validator("--lengths", "3,5"))
      ->option_text("N,N,...");
}

std::vector<std::size_t> mask_lengths(const MaskCliOptions& o) {
  return o.lengths.empty() ? std::vector<std::size_t>{}
                           : parse_size_list(o.lengths, "lengths", "--lengths");
}

void add_weights_options(CLI::App& app, std::string& weights_path, render::OutputOptions& output) {
  app.add_option("--weights", weights_path,
                 "a .safetensors or .npz whose keys are the PyTorch module's state_dict keys")
      ->check(not_empty_validator("--weights", "w.safetensors"))
      ->option_text("FILE");
  app.add_option(
         "--save-weights", output.save_weights,
         "write the weights used as .safetensors or .npz (by extension), loadable with load_state_dict")
      ->check(not_empty_validator("--save-weights", "w.safetensors"))
      ->option_text("FILE");
  declare_output(app, "--save-weights", [&output] { render::check_outputs(output); });
}

std::vector<std::size_t> parse_size_list(const std::string& text, std::string_view subject,
                                         std::string_view option) {
  std::vector<std::size_t> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    std::size_t value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value == 0) {
      throw Error(ErrorKind::bad_value, "parse_size_list",
                  fmt::format("'{}' is not a list of sizes: give whole numbers of at least 1 "
                              "separated by commas, e.g. {} 3,5",
                              printable(text), option))
          .about(std::string(subject));
    }
    values.push_back(value);
    start = comma + 1;
  }
  return values;
}

}  // namespace attn::cli
