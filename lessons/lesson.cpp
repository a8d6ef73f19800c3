#include "lesson.hpp"

#include "base/utf8.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/count.hpp"
#include "base/error.hpp"
#include "base/random.hpp"
#include "train/trainer.hpp"

namespace attn::lessons {

LessonRun::LessonRun(std::string lesson) : lesson_(std::move(lesson)) {}

void LessonRun::section(std::string_view name) {
  for (auto& [section_name, text] : markdown_sections(lesson_markdown(lesson_))) {
    if (section_name == name) {
      if (!text.empty()) items_.emplace_back(Prose{std::move(text)});
      return;
    }
  }
  throw Error(ErrorKind::internal, "LessonRun::section",
              fmt::format("lesson {} has no section '{}'", lesson_, name));
}

void LessonRun::prose(std::string text) {
  items_.emplace_back(Prose{std::move(text)});
}

void LessonRun::step(std::string name, std::string title, Array value, bool printed) {
  items_.emplace_back(Step{std::move(name), std::move(title), std::move(value), printed});
}

void LessonRun::check(std::string name, bool passed, std::string detail) {
  items_.emplace_back(Check{std::move(name), passed, std::move(detail)});
}

void LessonRun::table(Table table) {
  items_.emplace_back(std::move(table));
}

void LessonRun::curve(Curve curve) {
  items_.emplace_back(std::move(curve));
}

namespace {
bool too_large(const Heatmap& map) {
  return map.values.rank() != 2 || map.values.shape[0] > kHeatmapMaxTokens ||
         map.values.shape[1] > kHeatmapMaxTokens;
}

Prose left_out(const Heatmap& map) {
  return Prose{fmt::format(
      "(No heatmap of {} x {}: past {} x {} it does not fit a terminal. --save writes the\n"
      "steps as .npy files to plot.)\n",
      map.values.shape.empty() ? 0 : map.values.shape[0],
      map.values.rank() < 2 ? 0 : map.values.shape[1], kHeatmapMaxTokens, kHeatmapMaxTokens)};
}
}  // namespace

void LessonRun::heatmap(Heatmap heatmap) {
  if (too_large(heatmap))
    items_.emplace_back(left_out(heatmap));
  else
    items_.emplace_back(std::move(heatmap));
}

void LessonRun::heatmaps(Heatmaps heatmaps) {
  for (const Heatmap& map : heatmaps.maps)
    if (too_large(map)) {
      items_.emplace_back(left_out(map));
      return;
    }
  items_.emplace_back(std::move(heatmaps));
}

void LessonRun::setting(std::string name, std::string value) {
  settings_.emplace_back(std::move(name), std::move(value));
}

void LessonRun::listing(std::string name, Listing values) {
  listings_.emplace_back(std::move(name), std::move(values));
}

std::string highlighted(std::string_view text) {
  return kHighlightStart + std::string(text) + kHighlightEnd;
}

std::string without_highlights(std::string text) {
  std::erase(text, kHighlightStart);
  std::erase(text, kHighlightEnd);
  return text;
}

void LessonRun::save_file(std::string name, std::string bytes) {
  save_files_.emplace_back(std::move(name), std::move(bytes));
}

std::vector<const Step*> LessonRun::steps() const {
  std::vector<const Step*> out;
  for (const Item& item : items_)
    if (const auto* s = std::get_if<Step>(&item)) out.push_back(s);
  return out;
}

bool LessonRun::all_checks_passed() const {
  for (const Item& item : items_)
    if (const auto* c = std::get_if<Check>(&item); c != nullptr && !c->passed) return false;
  return true;
}

std::string roundoff_evidence(std::string_view measured, double value, double allowed) {
  // The allowance rounded up to two digits, so that it never prints below a value it allows.
  double shown = allowed;
  if (allowed > 0.0 && std::isfinite(allowed)) {
    const double unit = std::pow(10.0, std::floor(std::log10(allowed)) - 1.0);
    shown = std::ceil(allowed / unit * (1.0 - 1e-12)) * unit;
  }
  return fmt::format("{} = {:.3g} (round-off allows {:.2g})", measured, value, shown);
}

void check_same_up_to_roundoff(LessonRun& run, std::string name, std::string_view measured,
                               float difference, float roundoff_a, float roundoff_b) {
  // Each distance from float64 is itself rounded to float: a part in 2^20 covers that.
  const double allowed = (static_cast<double>(roundoff_a) + roundoff_b) * (1.0 + 0x1p-20);
  run.check(std::move(name), difference <= allowed,
            roundoff_evidence(measured, difference, allowed));
}

std::string index_list(const std::vector<std::size_t>& indices, std::size_t shown) {
  if (indices.size() <= shown) return fmt::format("{}", fmt::join(indices, ", "));
  const std::vector<std::size_t> head(indices.begin(),
                                      indices.begin() + static_cast<std::ptrdiff_t>(shown - 1));
  return fmt::format("{}, …, {}; {} in all", fmt::join(head, ", "), indices.back(), indices.size());
}

Sizes3 lesson_sizes(const LessonOptions& options) {
  if (options.input && options.input->rank() == 3) {
    const Shape& s = options.input->shape;
    return {s[0], s[1], s[2]};
  }
  return {options.batch, options.seq, options.d_model};
}

Tensor3 lesson_input(const LessonOptions& options, std::string_view axes, Sizes3 generated) {
  if (!options.input) {
    Rng rng(options.seed);
    return randn(rng, generated.batch, generated.seq, generated.d_model);
  }
  const Array& input = *options.input;
  if (input.rank() != 3) {
    throw Error(ErrorKind::bad_size, "lesson",
                fmt::format("the array has shape {}, but this lesson takes rank 3 {}: {}",
                            shape_string(input.shape), axes,
                            input.rank() == 2
                                ? "add a batch axis, e.g. numpy.save(path, x[None])"
                                : fmt::format("reshape it to 3 axes {}, e.g. numpy.save(path, "
                                              "x.reshape(1, T, -1))",
                                              axes)))
        .about("input");
  }
  if (input.dtype != Dtype::float32) {
    throw Error(ErrorKind::bad_value, "lesson",
                fmt::format("the array has dtype {}, but lessons take float32: save it with "
                            "numpy.save(path, x.astype(numpy.float32))",
                            dtype_name(input.dtype)))
        .about("input");
  }
  for (std::size_t s : input.shape)
    if (s == 0) {
      throw Error(
          ErrorKind::bad_size, "lesson",
          fmt::format(
              "the array has shape {} with an empty axis: every size in {} must be at least 1",
              shape_string(input.shape), axes))
          .about("input");
    }
  return to_tensor<3>(input, "the input");
}

MemoryPlan plan_lesson_input(const LessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options);
  MemoryPlan plan = {{"X", {batch, tokens, width}, "B T D"}};
  if (options.input) {
    plan.push_back({"the input array", options.input->shape, "B T D",
                    dtype_size(options.input->dtype), Held::kept});
  }
  return plan;
}

MemoryPlan plan_weights_file(const std::optional<StateDict>& weights) {
  if (!weights) return {};
  std::size_t bytes = 0;
  for (const auto& [key, array] : *weights)
    bytes += array.bytes.size();
  return {{"the weights read from the file", {bytes}, "", 1, Held::kept, weights->size()}};
}

PlannedTensor planned_table_rows(std::string name, std::size_t rows, std::string axes) {
  // A row of three or four short strings (about 250 bytes in the run), then its line of text or,
  // twice as large, its JSON array.
  constexpr std::size_t kRowBytes = 1024;
  return {std::move(name), {rows}, std::move(axes), kRowBytes, Held::kept};
}

std::vector<std::string> numbered_labels(std::string_view prefix, std::size_t count) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < count; ++i)
    labels.push_back(fmt::format("{}{}", prefix, i));
  return labels;
}

std::vector<std::string> token_labels(std::size_t tokens) {
  return numbered_labels("x", tokens);
}

Array first_matrix(const Tensor3& t) {
  std::vector<float> values(t.data(), t.data() + t.shape(1) * t.shape(2));
  return make_float32({t.shape(1), t.shape(2)}, values);
}

Array head_matrix(const Tensor4& t, std::size_t head) {
  const std::size_t rows = t.shape(2), cols = t.shape(3);
  std::vector<float> values(t.data() + head * rows * cols, t.data() + (head + 1) * rows * cols);
  return make_float32({rows, cols}, values);
}

PlannedTensor planned_heatmap(std::size_t rows, std::size_t cols, std::string axes) {
  if (rows > kHeatmapMaxTokens || cols > kHeatmapMaxTokens) return {"no heatmap", {0}, "", 4};
  return {"a heatmap and its copy", {2, rows, cols}, " " + axes, 4, Held::kept};
}

void record_settings(LessonRun& run, const LessonOptions& options,
                     std::initializer_list<std::pair<const char*, std::size_t>> sizes) {
  if (options.input) {
    run.setting("input", options.input_name);
  } else {
    run.setting("seed", std::to_string(options.seed));
  }
  for (const auto& [name, value] : sizes)
    run.setting(name, std::to_string(value));
}

namespace {
std::string_view trim_newlines(std::string_view s) {
  while (!s.empty() && (s.front() == '\n' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.remove_suffix(1);
  return s;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> markdown_sections(std::string_view markdown) {
  constexpr std::string_view kOpen = "<!-- step: ", kClose = " -->";
  std::vector<std::pair<std::string, std::string>> sections;
  std::string name = "intro";
  std::size_t start = 0;
  auto close_section = [&](std::size_t end) {
    sections.emplace_back(name, std::string(trim_newlines(markdown.substr(start, end - start))));
  };
  std::size_t pos = 0;
  while (pos < markdown.size()) {
    std::size_t eol = markdown.find('\n', pos);
    if (eol == std::string_view::npos) eol = markdown.size();
    const std::string_view line = markdown.substr(pos, eol - pos);
    if (line.starts_with(kOpen) && line.ends_with(kClose)) {
      close_section(pos);
      name = std::string(line.substr(kOpen.size(), line.size() - kOpen.size() - kClose.size()));
      start = eol;
    }
    pos = eol + 1;
  }
  close_section(markdown.size());
  return sections;
}

std::string wrapped_prose(std::string_view text, std::size_t width) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (!line.empty() && column_width(line) + 1 + column_width(word) > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + std::string(word);
    start = end + 1;
  }
  return out + line + "\n";
}

std::string pretrained_note(std::string_view source, std::string_view which, bool gpt2) {
  if (gpt2)
    return wrapped_prose(fmt::format(
               "These weights are not a random initialisation: they are {} of {} (a Hugging Face "
               "GPT-2 folder), and X is what that block's attention reads for the text: ln_1 of "
               "hidden_states of the block before (GPT-2 normalises before each sublayer). "
               "GPT-2's c_attn is one Conv1D(D, 3D) whose columns are [q | k | v]; head h owns "
               "columns h·hs to (h+1)·hs of each third, which, transposed, makes it exactly seed "
               "000's AttentionHead. The mask is causal: token t reads tokens 0 to t only.",
               which, source)) +
           "\n";
  return wrapped_prose(fmt::format(
             "These weights are not a random initialisation: they are {} of {} (a Hugging Face "
             "BERT folder), and X is what that layer reads for the text, hidden_states of the "
             "layer before. BERT's query, key and value are each Linear(D, D); head h owns rows "
             "h·hs to (h+1)·hs of each, which makes it exactly seed 000's AttentionHead.",
             which, source)) +
         "\n";
}

std::string trained_note(const TrainedSource& source, std::string_view which) {
  return wrapped_prose(fmt::format(
      "These weights are {} of layer {} of the checkpoint `{}`, trained on the `{}` task (lesson "
      "11), and X is what that layer's attention reads for the tokens above. Attention could "
      "solve the task with {}; what the heads of this layer do instead of that, measured on the "
      "task's held-out sequences:",
      which, source.layer, source.checkpoint, source.task, source.pattern));
}

std::string checkpoint_label(const std::string& checkpoint) {
  return is_shipped_checkpoint_name(checkpoint) ? checkpoint + " (shipped)" : checkpoint;
}

void record_trained(LessonRun& run, const std::optional<TrainedSource>& trained) {
  if (!trained) return;
  run.setting("checkpoint", checkpoint_label(trained->checkpoint));
  run.setting("layer", std::to_string(trained->layer));
}

Table parameter_table(const Module& model, bool commas, bool total) {
  const auto count = [commas](std::int64_t n) {
    return commas ? with_commas(n) : fmt::format("{}", n);
  };
  Table t{fmt::format("{}'s parameters (state_dict keys)", model.class_name),
          {"key", "shape", "count"},
          {}};
  for (const StateDictEntry& e : state_dict_entries(model))
    t.rows.push_back(
        {e.key, shape_string(e.shape), count(static_cast<std::int64_t>(element_count(e.shape)))});
  if (total) t.rows.push_back({"total", "", count(count_parameters(model))});
  return t;
}

}  // namespace attn::lessons
