// What every lesson subcommand shares: the size and input options, the output options, and
// rendering a LessonRun as text, as JSON or into a --save directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "budget.hpp"
#include "config.hpp"
#include "error.hpp"
#include "lesson.hpp"

namespace attn::cli {

// Exit codes of every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;

enum class ColorMode { automatic, always, never };
enum class Format { text, json };

struct OutputOptions {
  Format format = Format::text;
  std::string save_dir;  // empty: do not save
  int precision = 4;
  bool full = false;
  ColorMode color = ColorMode::automatic;
  bool quiet = false;
  std::string save_weights;  // --save-weights FILE (lessons with weights)
};

struct LessonCliOptions {
  lessons::LessonOptions lesson;
  std::string input_path;
  OutputOptions output;
};

// --seed --batch --seq [--d-model] --input and the output options, on a lesson's subcommand.
// `input_shape` describes --input's axes in the help, e.g. "(B, T, D)".
void add_lesson_options(CLI::App& app, LessonCliOptions& options, const char* input_shape = "(B, T, D)",
                        bool with_width = true);
void add_output_options(CLI::App& app, OutputOptions& options);
// --max-memory SIZE: the memory limit of core/budget.hpp (add_output_options adds it too).
void add_memory_option(CLI::App& app);
// Reads --input into options.lesson.input (throws attn::Error for a bad file).
void load_lesson_input(LessonCliOptions& options);

// --mask none|causal and --lengths N,N,..., on the attention lessons.
struct MaskCliOptions {
  std::string mask = "none";
  std::string lengths;
};
void add_mask_options(CLI::App& app, MaskCliOptions& options);
// --lengths as sizes (attn::Error naming --lengths when it is not a list of sizes).
std::vector<std::size_t> mask_lengths(const MaskCliOptions& options);
// attention_mask's error about a length past T, renamed to the option that gave it.
Error lengths_error(const Error& error);

// --weights and --save-weights, on a lesson with parameters.
void add_weights_options(CLI::App& app, std::string& weights_path, OutputOptions& output);
// Reads --weights (.safetensors or .npz; pickles refused); errors name --weights.
StateDict load_weights_file(const std::string& path);
// Refuses an output FILE that cannot be written (a folder, a missing or read-only folder, a
// path through a file) before anything is computed or written; errors name `option`.
void check_output_file(const std::string& path, const char* option, std::string_view example);
// A validator for a seed: a whole number from 0 to 2^64-1.
CLI::Validator seed_validator();
// A validator that refuses an empty value, which would read as "not given"; `example` is a
// value to show after `option`.
CLI::Validator not_empty_validator(std::string option, std::string example);
// "3,5" -> {3, 5}: whole numbers of at least 1, comma-separated; errors name `option`.
std::vector<std::size_t> parse_size_list(const std::string& text, const char* option);

// --config: a file, or the name of a shipped config (bert-base, tiny, with or without .json,
// under any directory) when no such file exists.
EncoderConfig resolve_config(const std::string& path);

// A validator for sizes: a whole number from 1 to `max`.
CLI::Validator size_validator(std::size_t max = 1'000'000'000);

// Prints the run (text or JSON), saves it when asked, and returns the exit code: kExitOk, or
// kExitCheckFailed when a check failed. Last, it prints the input warnings (NaN, infinities)
// on one stderr line: a refusal before that stays the only line.
int emit(const lessons::LessonRun& run, const OutputOptions& options);

// Whether stdout gets ANSI colours under `mode` (NO_COLOR, TERM=dumb and non-TTY turn auto off).
bool use_color(ColorMode mode);

// Writes every step as DIR/<step>.npy plus DIR/manifest.json, all or nothing.
void save_run(const lessons::LessonRun& run, const std::string& dir);

// What showing a run of `command` with these options costs beyond the run itself (core/budget.hpp's
// OutputCost), given the tensors the run holds: the text, the JSON document, the files.
MemoryPlan output_memory(const OutputOptions& options, std::string_view command,
                         const MemoryPlan& result);

std::string render_text(const lessons::LessonRun& run, const OutputOptions& options, bool color);
std::string render_json(const lessons::LessonRun& run, const OutputOptions& options);

// The subcommands. Each registers itself on `app` and runs from its callback.
void setup_list(CLI::App& app);
void setup_dot_product(CLI::App& app);
void setup_scaling(CLI::App& app);
void setup_softmax(CLI::App& app);
void setup_attention(CLI::App& app);
void setup_multi_head(CLI::App& app);
void setup_summary(CLI::App& app);
void setup_tokens(CLI::App& app);
void setup_positional_encoding(CLI::App& app);
void setup_layer_norm(CLI::App& app);
void setup_feed_forward(CLI::App& app);
void setup_encoder(CLI::App& app);
void setup_bench(CLI::App& app);
// grade, check, hint and assignments (grade.cpp).
void setup_grade(CLI::App& app);

// Set by a subcommand's callback: what main returns.
int& exit_code();

}  // namespace attn::cli
