#include "lesson_io.hpp"

#include "io/tokenizer.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "door.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "io/shipped.hpp"
#include "io/tokenizer.hpp"
#include "mine.hpp"
#include "mine_option.hpp"
#include "save.hpp"

namespace attn::cli {

namespace {

// "holds 1 NaN and 2 infinities (the first at [0, 1, 2])", or "" when every value is finite.
// NaN and infinities are valid float32 and the lessons show what they do, so they are announced,
// not refused.
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
  if (infinities > 0)
    parts.push_back(fmt::format("{} {}", infinities, infinities == 1 ? "infinity" : "infinities"));
  return fmt::format("holds {} (the first at [{}])", fmt::join(parts, " and "),
                     fmt::join(index, ", "));
}

// The first tensor of `weights` that holds NaN or infinities, as a warning in `context`.
void warn_non_finite(const StateDict& weights, std::string_view option, const std::string& path,
                     Context& context) {
  for (const auto& [key, array] : weights) {
    const std::string summary = non_finite_summary(array);
    if (summary.empty()) continue;
    std::string warning =
        fmt::format("{} '{}' ({}) {}", option, printable(path), printable(key), summary);
    // A command that reads one file twice warns once.
    if (std::find(context.warnings.begin(), context.warnings.end(), warning) ==
        context.warnings.end())
      context.warnings.push_back(std::move(warning));
    return;
  }
}

// A size given beside --input must be the array's.
void check_given_size(const CLI::Option* option, std::size_t given, std::size_t actual,
                      const char* letter, const LessonCliOptions& o) {
  if (option == nullptr || option->count() == 0 || given == actual) return;
  throw Error(
      ErrorKind::bad_size, "load_lesson_input",
      fmt::format(
          "the --input array '{}' has {} = {}, not {} (shape {}): drop {}, the array sets it",
          printable(o.input_path), letter, actual, given, shape_string(o.lesson.input->shape),
          option->get_name()))
      .about(option->get_name().substr(2));
}

}  // namespace

void load_lesson_input(LessonCliOptions& o, Context& context) {
  if (o.input_path.empty()) return;
  const std::string& path = o.input_path;
  try {
    if (path.ends_with(".pt") || path.ends_with(".pth")) {
      const InputFile file(path, "a .npy file written by numpy.save(path, array)");
      throw Error(
          ErrorKind::bad_file, "load_lesson_input",
          fmt::format("'{}' is a PyTorch pickle, which attn does not read: save the tensor with "
                      "numpy.save('x.npy', t.numpy()) and pass x.npy",
                      printable(path)));
    }
    o.lesson.input = read_npy(path);
  } catch (const Error& e) {
    throw Error(e.kind(), e.function(), e.detail()).about("input");
  }
  o.lesson.input_name = path;
  if (const std::string summary = non_finite_summary(*o.lesson.input); !summary.empty()) {
    context.warnings.push_back(fmt::format("--input '{}' {}", printable(path), summary));
  }
  const Shape& shape = o.lesson.input->shape;
  if (shape.size() == 3) {
    check_given_size(o.batch_option, o.lesson.batch, shape[0], "B", o);
    check_given_size(o.seq_option, o.lesson.seq, shape[1], "T", o);
    check_given_size(o.width_option, o.lesson.d_model, shape[2], "D", o);
  }
}

StateDict load_weights_file(const std::string& path, Context& context) {
  StateDict weights;
  try {
    weights = read_weights(path);
  } catch (const Error& e) {
    throw Error(e.kind(), e.function(), e.detail()).about("weights");
  }
  warn_non_finite(weights, "--weights", path, context);
  return weights;
}

EncoderConfig resolve_config(const std::string& path) {
  try {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) {
      if (const auto shipped = shipped_config(std::filesystem::path(path).filename().string()))
        return *shipped;
      throw Error(
          ErrorKind::bad_file, "resolve_config",
          fmt::format("'{}' does not exist: give a config.json, or the name of a shipped one: {}",
                      printable(path), fmt::join(shipped_config_names(), ", ")));
    }
    return load_config(path);
  } catch (const Error& e) {
    throw Error(e.kind(), e.function(), e.detail()).about("config");
  }
}

void add_plain_lesson_command(CLI::App& app, Context& context, std::string_view name,
                              lessons::LessonRun (*run)(const lessons::LessonOptions&)) {
  auto o = std::make_shared<LessonCliOptions>();
  auto mine = std::make_shared<bool>(false);
  CLI::App* sub = add_lesson_command(app, name);
  add_lesson_options(*sub, *o);
  add_heatmap_option(*sub, o->output);
  if (!course::mine_calls(std::string(name)).empty()) add_mine_option(*sub, *mine);
  door_callback(*sub, [o, run, mine, &context] {
    load_lesson_input(*o, context);
    lessons::LessonRun result = run(o->lesson);
    add_mine_steps(result, *mine);
    context.exit_code = publish(result, o->output, context);
  });
}

int publish(const lessons::LessonRun& run, const render::OutputOptions& output,
            const Context& context, const std::vector<render::FileOutput>& files) {
  render::write_outputs(run, output, stdout, files);
  print_warnings(run.lesson(), context);
  return run.all_checks_passed() ? kExitOk : kExitCheckFailed;
}

void print_warnings(std::string_view command, const Context& context) {
  if (context.warnings.empty()) return;
  const std::string line =
      printable(fmt::format("attn {}: warning: {}: the run goes on as PyTorch's would, and "
                            "checks may fail; numpy.nan_to_num replaces non-finite values",
                            command, fmt::join(context.warnings, "; ")),
                std::string::npos) +
      "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace attn::cli

namespace attn::cli {

namespace {
std::filesystem::path executable_folder() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}
}  // namespace

std::optional<std::string> shipped_checkpoint_folder(const std::string& name) {
  namespace fs = std::filesystem;
  if (!is_shipped_checkpoint_name(name)) return std::nullopt;
  const fs::path dir = executable_folder();
  std::error_code ec;
  for (const fs::path& folder : {dir / "share" / "attn" / "checkpoints",
                                 dir.parent_path() / "share" / "attn" / "checkpoints"}) {
    if (!fs::is_directory(folder, ec)) continue;
    const fs::path candidate = folder / name;
    if (fs::is_directory(candidate, ec) && fs::is_regular_file(candidate / "config.json", ec))
      return candidate.string();
    return std::nullopt;
  }
  return std::nullopt;
}

std::string shipped_corpus() {
  namespace fs = std::filesystem;
  const fs::path dir = executable_folder();
  std::error_code ec;
  for (const fs::path& folder :
       {dir / "share" / "attn" / "corpus", dir.parent_path() / "share" / "attn" / "corpus"}) {
    if (fs::is_regular_file(folder / "moby-dick.txt", ec))
      return (folder / "moby-dick.txt").string();
  }
  throw Error(ErrorKind::bad_file, "corpus",
              "attn's shipped corpus (share/attn/corpus/moby-dick.txt) is not installed beside "
              "attn: give --corpus FILE, or reinstall attn")
      .about("corpus");
}

std::string resolve_checkpoint(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!is_shipped_checkpoint_name(name)) {
    if (fs::symlink_status(name, ec).type() != fs::file_type::not_found) return name;
    const std::string stem = fs::path(name).stem().string();
    throw Error(
        ErrorKind::bad_file, "checkpoint",
        fmt::format(
            "'{}' does not exist: give a .safetensors from attn train{}", printable(name),
            is_shipped_checkpoint_name(stem) && name.find('/') == std::string::npos
                ? fmt::format(", or a shipped checkpoint by its bare name ({})", printable(stem))
                : std::string()))
        .about("checkpoint");
  }
  if (const std::optional<std::string> folder = shipped_checkpoint_folder(name))
    throw Error(ErrorKind::bad_file, "checkpoint",
                fmt::format("'{}' is a GPT-2 folder, not a checkpoint of attn train's encoders: "
                            "sample from it with `attn generate --checkpoint {}`, or open it as "
                            "--pretrained {}",
                            name, name, printable(*folder)))
        .about("checkpoint");
  const fs::path dir = executable_folder();
  std::vector<std::string> shipped;
  for (const fs::path& folder : {dir / "share" / "attn" / "checkpoints",
                                 dir.parent_path() / "share" / "attn" / "checkpoints"}) {
    if (!fs::is_directory(folder, ec)) continue;
    const fs::path candidate = folder / (name + ".safetensors");
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    for (const auto& entry : fs::directory_iterator(folder, ec))
      if (entry.path().extension() == ".safetensors")
        shipped.push_back(entry.path().stem());
      else if (entry.is_directory(ec))
        shipped.push_back(entry.path().filename());
    break;
  }
  std::sort(shipped.begin(), shipped.end());
  // The local file the user most likely meant: NAME.safetensors (as attn train names them), else
  // a file called NAME.
  const std::string local =
      fs::is_regular_file(name + ".safetensors", ec) ? name + ".safetensors" : name;
  throw Error(ErrorKind::bad_file, "checkpoint",
              fmt::format("'{}' is not a shipped checkpoint (a bare name is always one): give one "
                          "of {}, or ./{} for the file here",
                          printable(name),
                          shipped.empty() ? "(none installed)"
                                          : fmt::format("{}", fmt::join(shipped, ", ")),
                          printable(local)))
      .about("checkpoint");
}

TrainedCheckpoint load_checkpoint(const std::string& name, Context& context) {
  const std::string path = resolve_checkpoint(name);
  // Reading holds the file's bytes, its tensors and the model built from them: three copies.
  std::error_code ec;
  const std::uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  try {
    check_budget("checkpoint", {{"the checkpoint, read and built",
                                 {3, ec ? 0 : static_cast<std::size_t>(file_bytes / 4)},
                                 "",
                                 4,
                                 Held::kept}});
  } catch (const Error& e) {
    constexpr std::string_view kGeneric = "use smaller sizes";
    std::string detail = e.detail();
    if (detail.ends_with(kGeneric))
      detail.replace(detail.size() - kGeneric.size(), kGeneric.size(),
                     "give a smaller checkpoint, or raise the limit");
    throw Error(e.kind(), e.function(), detail).about("checkpoint");
  }
  Metadata metadata;
  StateDict weights;
  CheckpointModel read;
  try {
    weights = read_weights(path, &metadata);
    read = read_checkpoint(weights, metadata, name);
  } catch (const Error& e) {
    const bool not_attn = e.function() == "train_config_from_metadata";
    throw Error(e.kind(), e.function(),
                not_attn
                    ? e.detail() + "; make one with `attn train --save-checkpoint FILE.safetensors`"
                    : e.detail())
        .about("checkpoint");
  }
  warn_non_finite(weights, "--checkpoint", name, context);
  return {name, std::move(read.config), std::move(read.model)};
}

TrainedCheckpoint load_encoder_checkpoint(const std::string& name, Context& context) {
  TrainedCheckpoint c = load_checkpoint(name, context);
  if (is_seq2seq(c.config.task))
    throw Error(ErrorKind::bad_value, "checkpoint",
                fmt::format("'{}' holds seed 001's encoder-decoder, not an encoder: decode with "
                            "`attn generate --checkpoint {}`, or give an encoder's checkpoint "
                            "such as reverse",
                            name, name))
        .about("checkpoint");
  return c;
}

// "2051,10029,2066" -> ids below the vocabulary's size; 0 is a valid id ([PAD]).
std::vector<std::int64_t> parse_ids(const std::string& text, std::size_t vocab_size) {
  std::vector<std::int64_t> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    std::uint64_t id = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    const bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || (ec != std::errc() && ec != std::errc::result_out_of_range) ||
        ptr != item.data() + item.size()) {
      throw Error(ErrorKind::bad_value, "parse_ids",
                  fmt::format("'{}' is not a list of ids: give whole numbers from 0 separated by "
                              "commas, e.g. --ids 2051,10029,2066",
                              printable(text)))
          .about("ids");
    }
    if (ec == std::errc::result_out_of_range || id >= vocab_size) {
      throw Error(
          ErrorKind::bad_value, "parse_ids",
          fmt::format("the id {} is outside the vocabulary (0 to {}): use ids below vocab_size {}",
                      item, vocab_size - 1, vocab_size))
          .about("ids");
    }
    ids.push_back(static_cast<std::int64_t>(id));
    start = comma + 1;
  }
  return ids;
}

TrainedCheckpoint load_seq2seq_checkpoint(const std::string& name, std::string_view command,
                                          Context& context) {
  TrainedCheckpoint c = load_checkpoint(name, context);
  if (!is_seq2seq(c.config.task))
    throw Error(ErrorKind::bad_value, command,
                fmt::format("'{}' holds an encoder with a head on every token, which has no "
                            "decoder: give an encoder-decoder (attn train --model transformer), "
                            "e.g. --checkpoint {}",
                            name, kShippedSeq2Seq))
        .about("checkpoint");
  return c;
}

Ids checkpoint_ids(const TrainedCheckpoint& checkpoint, const std::string& text,
                   std::string_view command) {
  const TrainConfig& c = checkpoint.config;
  const Task task = std::get<Task>(c.task);
  const std::string example = task_example(task, c.sizes);
  const std::vector<std::int64_t> ids =
      parse_task_text(task, text.empty() ? example : text, c.sizes);
  if (ids.empty() || ids.size() > c.sizes.tokens)
    throw Error(ErrorKind::bad_value, command,
                fmt::format("this checkpoint reads 1 to {} tokens, the text has {}: give e.g. "
                            "--text '{}'",
                            c.sizes.tokens, ids.size(), example))
        .about("text");
  Ids out({1, ids.size()});
  std::copy(ids.begin(), ids.end(), out.begin());
  return out;
}

void check_utf8(const std::string& text, const std::string& subject, std::string_view command) {
  if (std::size_t bad = 0; !is_valid_utf8(text, &bad)) {
    throw Error(
        ErrorKind::bad_value, command,
        fmt::format("the text is not valid UTF-8: byte {:#04x} at offset {} does not start a "
                    "UTF-8 character; pass UTF-8 text (a terminal with LANG=C.UTF-8 sends it)",
                    static_cast<unsigned char>(text[bad]), bad))
        .about(subject);
  }
}

void add_checkpoint_options(CLI::App& app, CheckpointCliOptions& o) {
  app.add_option("--checkpoint", o.checkpoint,
                 "a trained model from attn train (a .safetensors, or a shipped one: reverse, "
                 "sort, histogram, previous-token): its layer's attention on the task's tokens")
      ->check(not_empty_validator("--checkpoint", "reverse"))
      ->option_text("NAME|FILE");
  app.add_option("--pretrained", o.pretrained,
                 "a Hugging Face BERT folder, or a name in the Hugging Face cache: its layer's "
                 "attention on --text")
      ->check(not_empty_validator("--pretrained", "bert-base-uncased"))
      ->option_text("DIR");
  app.add_option("--text", o.text,
                 "with --checkpoint: the task's tokens (default its example); with --pretrained: "
                 "a sentence (default: time flies like an arrow)")
      ->check(not_empty_validator("--text", "abcd"))
      ->option_text("TEXT");
  app.add_option("--pair", o.pair, "with --pretrained: a second sentence, [CLS] A [SEP] B [SEP]")
      ->check(not_empty_validator("--pair", "'fruit flies like a banana'"))
      ->option_text("TEXT");
  app.add_option("--layer", o.layer,
                 "with --checkpoint or --pretrained: which layer's attention (default 0)")
      ->check(CLI::NonNegativeNumber)
      ->option_text("L");
}

std::optional<lessons::TrainedAttention> checkpoint_attention(
    const CLI::App& app, const CheckpointCliOptions& o, const std::vector<std::string>& replaced,
    std::string_view command, Context& context,
    const std::function<void(TrainedCheckpoint&)>& prepare) {
  if (!o.pretrained.empty()) return {};
  if (app.count("--pair") > 0)
    throw Error(ErrorKind::bad_value, command,
                "--pair is the second sentence BERT reads: add --pretrained DIR, or drop --pair")
        .about("pair");
  if (o.checkpoint.empty()) {
    for (const char* name : {"--text", "--layer"})
      if (app.count(name) > 0)
        throw Error(ErrorKind::bad_value, command,
                    fmt::format("{} reads a trained model's tokens: add --checkpoint "
                                "reverse (or another checkpoint) or --pretrained DIR, or drop {}",
                                name, name))
            .about(std::string(name).substr(2));
    return {};
  }
  for (const std::string& name : replaced)
    if (app.count(name) > 0)
      throw Error(ErrorKind::bad_value, command,
                  fmt::format("a checkpoint brings its own model, weights and input: "
                              "drop {} (the sizes, --input and --weights come from it)",
                              name))
          .about(name.substr(2));
  TrainedCheckpoint c = load_encoder_checkpoint(o.checkpoint, context);
  if (prepare) prepare(c);
  return lessons::trained_attention(std::get<TokenClassifier>(c.model), c.config,
                                    checkpoint_ids(c, o.text, command), o.layer, o.checkpoint);
}

}  // namespace attn::cli
