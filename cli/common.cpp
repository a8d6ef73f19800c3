#include "common.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "budget.hpp"
#include "matmul.hpp"
#include "error.hpp"
#include "file_io.hpp"
#include "npy.hpp"
#include "09-encoder/encoder_lesson.hpp"
#include "weights.hpp"

namespace attn::cli {

int& exit_code() {
  static int code = kExitOk;
  return code;
}

CLI::Validator size_validator(std::size_t max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        std::size_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc::result_out_of_range ||
            (ec == std::errc() && ptr == end && value > max)) {
          return fmt::format("'{}' is too large: use a size from 1 to {}", text, max);
        }
        if (ec != std::errc() || ptr != end || value == 0) {
          return fmt::format("'{}' is not a size: give a whole number from 1 to {}", text, max);
        }
        return {};
      },
      "SIZE");
}

CLI::Validator seed_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || ptr != text.data() + text.size()) {
          return fmt::format("'{}' is not a seed: give a whole number from 0 to 2^64-1", text);
        }
        return {};
      },
      "N");
}

CLI::Validator not_empty_validator(std::string option, std::string example) {
  return CLI::Validator(
      [option = std::move(option), example = std::move(example)](std::string& text) -> std::string {
        if (text.empty()) return fmt::format("the value is empty: give one, e.g. {} {}", option, example);
        return {};
      },
      "");
}

namespace {

namespace fs = std::filesystem;

// "a", "a or b", "a, b or c".
std::string or_list(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

// One of a fixed set of words, turned into the enum's number for CLI11 (which reads enums as
// integers); anything else, the numbers included, is refused with the words to use.
template <class Enum>
CLI::Validator choice_validator(std::string what,
                                std::vector<std::pair<std::string, Enum>> choices) {
  std::vector<std::string> words;
  for (const auto& choice : choices)
    words.push_back(choice.first);
  return CLI::Validator(
      [what = std::move(what), choices = std::move(choices),
       words](std::string& text) -> std::string {
        for (const auto& [word, value] : choices) {
          if (text == word) {
            text = std::to_string(static_cast<int>(value));
            return {};
          }
        }
        return fmt::format("'{}' is not a {}: use {}", text, what, or_list(words));
      },
      "");
}

// A path that must not be empty: `--save ''` or `--input ''` would otherwise mean "not given".
CLI::Validator path_validator(std::string what, std::string example) {
  return CLI::Validator(
      [what = std::move(what), example = std::move(example)](std::string& text) -> std::string {
        if (text.empty())
          return fmt::format("the {} is empty: give a path, e.g. {}", what, example);
        return {};
      },
      "");
}

// --save DIR without trailing separators or a final "." or "..": "out/" and "out/." name the
// directory out, and ".." names the directory above, never a sibling called "..".
std::string normalise_save_dir(const std::string& text) {
  auto strip = [](fs::path p) {
    std::string s = p.string();
    while (s.size() > 1 && s.back() == '/')
      s.pop_back();
    return fs::path(s);
  };
  fs::path p = strip(fs::path(text).lexically_normal());
  if (p.filename() == "." || p.filename() == "..") {
    std::error_code ec;
    const fs::path absolute = fs::absolute(p, ec);
    if (!ec) p = strip(absolute.lexically_normal());
  }
  return p.string();
}

}  // namespace

void add_memory_option(CLI::App& app) {
  app.add_option_function<std::string>(
         "--max-memory",
         [](const std::string& text) { set_memory_limit(parse_memory_size(text, "--max-memory"), "--max-memory"); },
         "refuse sizes whose tensors need more than SIZE, e.g. 512M or 4G (default: half this "
         "machine's memory, or ATTN_MAX_MEMORY)")
      ->option_text("SIZE");
}

void add_output_options(CLI::App& app, OutputOptions& o) {
  add_memory_option(app);
  // The run's budget counts what showing it with these options costs.
  app.preparse_callback([&o, &app](std::size_t) {
    set_output_cost([&o, command = app.get_name()](const MemoryPlan& result) {
      return output_memory(o, command, result);
    });
  });
  app.add_option_function<int>(
         "--threads", [](const int& threads) { set_blas_threads(threads); },
         "OpenBLAS threads for the matrix products (default 1); the output is the same for any count")
      ->check(CLI::Range(1, 256))
      ->option_text("N");
  app.add_option("--format", o.format, "text (default) or json: one JSON document on stdout")
      ->transform(
          choice_validator<Format>("format", {{"text", Format::text}, {"json", Format::json}}))
      ->option_text("text|json");
  app.add_option("--save", o.save_dir,
                 "write every step as DIR/<step>.npy plus DIR/manifest.json (all or nothing)")
      ->check(path_validator("directory name", "--save out"))
      ->option_text("DIR");
  app.add_option("--precision", o.precision,
                 "digits after the point when printing tensors (default 4)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            int value = -1;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, value);
            if (ec != std::errc() || ptr != end || value < 0 || value > 16) {
              return fmt::format(
                  "'{}' is not a precision: give the digits after the point, a whole "
                  "number from 0 to 16",
                  text);
            }
            return {};
          },
          ""))
      ->option_text("P");
  app.add_flag("--full", o.full, "print whole tensors, never summarised with ...");
  app.add_option("--color", o.color,
                 "auto (default; off under NO_COLOR or when not a terminal), always, never")
      ->transform(choice_validator<ColorMode>("color mode", {{"auto", ColorMode::automatic},
                                                             {"always", ColorMode::always},
                                                             {"never", ColorMode::never}}))
      ->option_text("auto|always|never");
  app.add_flag("--quiet", o.quiet, "only the final result and the parameter count");
}

void add_lesson_options(CLI::App& app, LessonCliOptions& o, const char* input_shape,
                        bool with_width) {
  app.add_option("--seed", o.lesson.seed, "random seed for the generated input (default 0)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::uint64_t value = 0;
            const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec != std::errc() || ptr != text.data() + text.size()) {
              return fmt::format("'{}' is not a seed: give a whole number from 0 to 2^64-1", text);
            }
            return {};
          },
          "N"))
      ->option_text("N");
  auto* batch = app.add_option("--batch", o.lesson.batch, "B, sequences in the batch (default 1)")
                    ->check(size_validator())
                    ->option_text("B");
  auto* seq = app.add_option("--seq", o.lesson.seq, "T, tokens per sequence (default 5)")
                  ->check(size_validator())
                  ->option_text("T");
  auto* input = app.add_option("--input", o.input_path,
                               fmt::format("a float32 .npy of shape {} instead of random numbers",
                                           input_shape))
                    ->check(path_validator("file name", "--input x.npy"))
                    ->option_text("FILE.npy")
                    ->excludes(batch)
                    ->excludes(seq);
  if (with_width) {
    input->excludes(
        app.add_option("--d-model", o.lesson.d_model, "D, numbers per token (default 6)")
            ->check(size_validator())
            ->option_text("D"));
  }
  add_output_options(app, o.output);
}

namespace {

// NaN and infinities are valid float32 and the lessons show what they do, so they are announced,
// not refused. emit prints the notes once the run has succeeded.
std::vector<std::string>& input_warnings() {
  static std::vector<std::string> warnings;
  return warnings;
}

// "holds 1 NaN and 2 infinities (the first at [0, 1, 2])", or "" when every value is finite.
std::string non_finite_summary(const Array& array) {
  if (!is_floating(array.dtype)) return {};
  std::size_t nans = 0, infinities = 0, first = 0;
  const std::size_t n = array.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double v = array.real(i);
    if (std::isfinite(v)) continue;
    if (nans + infinities == 0) first = i;
    (std::isnan(v) ? nans : infinities) += 1;
  }
  if (nans + infinities == 0) return {};
  std::vector<std::size_t> index(array.rank());
  for (std::size_t k = array.rank(); k-- > 0;) {
    index[k] = first % array.shape[k];
    first /= array.shape[k];
  }
  std::vector<std::string> parts;
  if (nans > 0) parts.push_back(fmt::format("{} NaN", nans));
  if (infinities > 0) parts.push_back(fmt::format("{} {}", infinities, infinities == 1 ? "infinity" : "infinities"));
  return fmt::format("holds {} (the first at [{}])", fmt::join(parts, " and "), fmt::join(index, ", "));
}

void note_non_finite(const std::string& what, const Array& array) {
  const std::string summary = non_finite_summary(array);
  if (!summary.empty()) input_warnings().push_back(fmt::format("{} {}", what, summary));
}

}  // namespace

void load_lesson_input(LessonCliOptions& o) {
  if (o.input_path.empty()) return;
  const std::string& path = o.input_path;
  try {
    if (path.ends_with(".pt") || path.ends_with(".pth")) {
      const InputFile file(path, "a .npy file written by numpy.save(path, array)");
      throw Error(
          ErrorKind::bad_file, "--input",
          fmt::format("'{}' is a PyTorch pickle, which attn does not read: save the tensor with "
                      "numpy.save('x.npy', t.numpy()) and pass x.npy",
                      printable(path)));
    }
    o.lesson.input = read_npy(path);
  } catch (const Error& e) {
    // read_npy names its own functions (open_input, parse_npy): the user gave --input.
    throw Error(e.kind(), "--input", e.detail()).about("input");
  }
  o.lesson.input_name = path;
  note_non_finite(fmt::format("--input '{}'", printable(path)), *o.lesson.input);
}

bool use_color(ColorMode mode) {
  if (mode != ColorMode::automatic) return mode == ColorMode::always;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return isatty(STDOUT_FILENO) == 1;
}

void add_mask_options(CLI::App& app, MaskCliOptions& o) {
  app.add_option("--mask", o.mask, "none (default) or causal: -inf above the diagonal")
      ->check(CLI::IsMember({"none", "causal"}))
      ->option_text("none|causal");
  app.add_option("--lengths", o.lengths, "padding: the real length of each sequence, e.g. 3,5")
      ->option_text("N,N,...");
}

std::vector<std::size_t> mask_lengths(const MaskCliOptions& o) {
  return o.lengths.empty() ? std::vector<std::size_t>{} : parse_size_list(o.lengths, "--lengths");
}

Error lengths_error(const Error& error) {
  // attention_mask checks --lengths against T, which is known only once the input is.
  return Error("--lengths", error.detail().find(": give") != std::string::npos
                                ? error.detail()
                                : error.detail() + ": give each length from 1 to T, the tokens per sequence");
}

void add_weights_options(CLI::App& app, std::string& weights_path, OutputOptions& output) {
  app.add_option("--weights", weights_path,
                 "a .safetensors or .npz whose keys are the PyTorch module's state_dict keys")
      ->check(not_empty_validator("--weights", "w.safetensors"))
      ->option_text("FILE");
  app.add_option("--save-weights", output.save_weights,
                 "write the weights used as .safetensors or .npz (by extension), loadable with load_state_dict")
      ->check(not_empty_validator("--save-weights", "w.safetensors"))
      ->option_text("FILE");
}

StateDict load_weights_file(const std::string& path) {
  if (path.empty())
    throw Error("--weights", "the file name is empty: give a path, e.g. --weights w.safetensors");
  StateDict weights;
  try {
    weights = read_weights(path);
  } catch (const Error& e) {
    if (e.function() == "--weights") throw;
    throw Error(e.kind(), "--weights", e.detail()).about("weights");
  }
  for (const auto& [key, array] : weights) {
    const std::string summary = non_finite_summary(array);
    if (summary.empty()) continue;
    input_warnings().push_back(
        fmt::format("--weights '{}' ({}) {}", printable(path), printable(key), summary));
    break;
  }
  return weights;
}

void check_output_file(const std::string& path, const char* option, std::string_view example) {
  if (path.empty()) throw Error(option, fmt::format("the file name is empty: give a path, e.g. {} {}", option, example));
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::string dir = path;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    throw Error(option, fmt::format("'{}' is a folder: give a file name, e.g. {} {}/{}", path, option, dir, example));
  }
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  const fs::file_status status = fs::status(parent, ec);
  if (!fs::exists(status)) {
    throw Error(option, fmt::format("cannot write '{}': the directory '{}' does not exist; create it first or "
                                    "choose another path",
                                    path, parent.string()));
  }
  if (!fs::is_directory(status)) {
    throw Error(option, fmt::format("cannot write '{}': '{}' is a file, not a directory; choose another path",
                                    path, parent.string()));
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw Error(option, fmt::format("cannot write '{}': {}; choose a writable directory", path,
                                    std::strerror(errno)));
  }
}

std::vector<std::size_t> parse_size_list(const std::string& text, const char* option) {
  std::vector<std::size_t> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    std::size_t value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value == 0) {
      throw Error(option, fmt::format("'{}' is not a list of sizes: give whole numbers of at least 1 separated by "
                                      "commas, e.g. {} 3,5",
                                      text, option));
    }
    values.push_back(value);
    start = comma + 1;
  }
  return values;
}

EncoderConfig resolve_config(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) {
    const std::string name = fs::path(path).stem().string();
    if (name == "bert-base")
      return EncoderConfig{};  // EncoderConfig's defaults are bert-base-uncased's
    if (name == "tiny") return lessons::tiny_config();
    throw Error(
        ErrorKind::bad_file, "--config",
        fmt::format(
            "'{}' does not exist: give a config.json, or bert-base or tiny for the shipped ones "
            "(data/configs/)",
            printable(path)))
        .about("config");
  }
  try {
    return load_config(path);
  } catch (const Error& e) {
    if (e.function() == "--config") throw;
    throw Error(e.kind(), "--config", e.detail()).about("config");
  }
}

int emit(const lessons::LessonRun& run, const OutputOptions& options) {
  const std::string& weights_path = options.save_weights;
  if (!weights_path.empty()) {
    std::string ext = fs::path(weights_path).extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (ext == ".pt" || ext == ".pth") {
      throw Error("--save-weights", fmt::format("'{}': attn writes .safetensors or .npz, not PyTorch pickles: "
                                                "name it w.safetensors and load it with safetensors.torch.load_file",
                                                weights_path));
    }
    // Into the --save directory, which exists only once the save is made: its checks are save_run's.
    const bool into_save = !options.save_dir.empty() &&
                           fs::path(weights_path).parent_path().lexically_normal() ==
                               fs::path(normalise_save_dir(options.save_dir)).lexically_normal();
    if (!into_save) check_output_file(weights_path, "--save-weights", "w.safetensors");
    if (ext != ".safetensors" && ext != ".npz") {
      throw Error("--save-weights", fmt::format("'{}': attn writes .safetensors or .npz, chosen by the extension: "
                                                "name the file e.g. w.safetensors",
                                                weights_path));
    }
  }
  // Save first: a save that fails must not leave a printed result that looks complete.
  std::string save_dir;
  bool save_dir_existed = false;
  if (!options.save_dir.empty()) {
    save_dir = normalise_save_dir(options.save_dir);
    std::error_code ec;
    save_dir_existed = fs::exists(save_dir, ec);
    save_run(run, save_dir);
  }
  if (!weights_path.empty()) {
    try {
      write_weights(weights_path, run.state_dict);
    } catch (const Error& e) {
      // All or nothing: a --save made by this run goes too.
      std::error_code ec;
      if (!save_dir.empty() && !save_dir_existed) fs::remove_all(save_dir, ec);
      throw Error("--save-weights", fmt::format("{}; choose a writable path", e.detail()));
    }
  }
  const std::string out = options.format == Format::json
                              ? render_json(run, options)
                              : render_text(run, options, use_color(options.color));
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw Error("stdout",
                fmt::format("cannot write the result: {}: free space or redirect the output "
                            "elsewhere",
                            std::strerror(errno)));
  }
  if (!input_warnings().empty()) {
    const std::string line = fmt::format(
        "attn {}: warning: {}: the run goes on as PyTorch's would, and checks may "
        "fail; numpy.nan_to_num replaces non-finite values\n",
        run.lesson(), fmt::join(input_warnings(), "; "));
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  return run.all_checks_passed() ? kExitOk : kExitCheckFailed;
}

}  // namespace attn::cli
