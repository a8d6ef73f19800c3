// What a lesson produces: an ordered list of items (prose from the lesson's Markdown, named
// tensors, checks, tables) that the CLI renders as text, JSON or saved .npy files.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/array.hpp"
#include "base/budget.hpp"
#include "base/tensor.hpp"
#include "head_patterns.hpp"
#include "io/weights.hpp"
#include "module.hpp"

namespace attn::lessons {

struct Prose {
  std::string text;  // Markdown
};

struct Step {
  std::string name;   // file stem and JSON name: "raw_weights"
  std::string title;  // what it is: "W' = X Xᵀ, every token's dot product with every other"
  Array value;
  bool printed = true;  // false: text shows its name and shape only (JSON and --save hold it all)
};

struct Check {
  std::string name;  // "rows of W sum to 1"
  bool passed = true;
  std::string detail;  // the measured evidence: "max |sum - 1| = 5.96e-08"
};

// A table cell may mark spans to stand out (lesson 16's merged pair): the text between these two
// control characters, which printable() never lets through, is coloured on a terminal; plain
// text and JSON drop the marks.
inline constexpr char kHighlightStart = '\x1e', kHighlightEnd = '\x1f';
std::string highlighted(std::string_view text);
std::string without_highlights(std::string text);

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// What a heatmap holds, which decides its colour scale: attention weights (0 to 1, or per row
// where all are small; an exact 0 is a masked key) or signed values (centred on 0).
enum class HeatmapKind { weights, signed_values };

// A matrix drawn as a heatmap with labelled rows (queries) and columns (keys).
struct Heatmap {
  std::string title;
  Array values;  // (rows, cols) float32
  std::vector<std::string> row_labels, col_labels;
  HeatmapKind kind = HeatmapKind::weights;
  bool masked = false;  // a mask was applied: an exact 0 is a masked key, else an underflow
  // (rows x cols) row-major: each cell's text shown instead of its value, on the value's colour
  // (the logit lens's top tokens on their probabilities); empty: the values.
  std::vector<std::string> cell_text = {};
};

// Heatmaps are drawn for at most this many rows and columns; past it a line says so instead
// (the numbers stay in the steps, and --save writes them).
inline constexpr std::size_t kHeatmapMaxTokens = 64;

// Which scale a group of weight maps takes: the renderer's choice (per row when every weight is
// small), or always 0 to 1, for maps compared with other groups (before and after training).
enum class WeightsScale { automatic, fixed };

// Heatmaps to compare, drawn side by side as far as the width allows, on one scale choice.
struct Heatmaps {
  std::string title;
  std::vector<Heatmap> maps;
  WeightsScale scale = WeightsScale::automatic;  // --heatmap-scale fixed|row overrides it
};

// A series over steps, drawn as a curve in the terminal (a training run's loss).
struct Curve {
  std::string title;
  std::vector<double> values;  // one per step, the first at step 1
  std::size_t height = 10;     // rows of the drawing
};

using Item = std::variant<Prose, Step, Check, Table, Heatmap, Heatmaps, Curve>;

// A named list a lesson reports beside its steps, such as lesson 00's tokens and ids.
using Listing = std::variant<std::vector<std::string>, std::vector<std::int64_t>>;

class LessonRun {
 public:
  // `lesson` is the subcommand name ("dot-product"); its Markdown sections come from the
  // lesson's folder.
  explicit LessonRun(std::string lesson);

  // The Markdown section `<!-- step: name -->` of the lesson's text.
  void section(std::string_view name);
  // Prose made by the run itself (Markdown), for text that depends on its inputs.
  void prose(std::string text);
  void step(std::string name, std::string title, Array value, bool printed = true);
  void check(std::string name, bool passed, std::string detail);
  void table(Table table);
  void heatmap(Heatmap heatmap);
  void heatmaps(Heatmaps heatmaps);
  void curve(Curve curve);
  // The settings the run used (seed, sizes), in order, for headers and JSON.
  void setting(std::string name, std::string value);
  void listing(std::string name, Listing values);
  // A file the --save folder holds beside the steps (a trained tokenizer's vocab.json), listed in
  // its manifest.json.
  void save_file(std::string name, std::string bytes);

  const std::string& lesson() const { return lesson_; }
  const std::vector<Item>& items() const { return items_; }
  const std::vector<std::pair<std::string, std::string>>& settings() const { return settings_; }
  const std::vector<std::pair<std::string, Listing>>& listings() const { return listings_; }
  const std::vector<std::pair<std::string, std::string>>& save_files() const { return save_files_; }
  std::vector<const Step*> steps() const;
  bool all_checks_passed() const;

  std::int64_t parameters = 0;
  StateDict
      state_dict;  // the weights the run used, keyed like the PyTorch module's (for --save-weights)

 private:
  std::string lesson_;
  std::vector<Item> items_;
  std::vector<std::pair<std::string, std::string>> settings_;
  std::vector<std::pair<std::string, Listing>> listings_;
  std::vector<std::pair<std::string, std::string>> save_files_;
};

// The evidence of a check held to float32 round-off: "max |sum - 1| = 5.96e-08 (round-off allows
// 1.3e-06)". The allowance grows with the sizes, so a check fails only when the math is wrong.
std::string roundoff_evidence(std::string_view measured, double value, double allowed);

// Checks that two float32 results of one function agree: passed when their largest difference is
// at most the two results' own round-off (each one's largest distance from the same computation
// in float64). That holds on every CPU, OpenBLAS kernel and thread count, and a mistake in the
// math (a wrong permutation, another function) is far larger.
void check_same_up_to_roundoff(LessonRun& run, std::string name, std::string_view measured,
                               float difference, float roundoff_a, float roundoff_b);

// "2, 0, 1", or past `shown` entries "5, 3, 0, 1, …, 17; 6000 in all".
std::string index_list(const std::vector<std::size_t>& indices, std::size_t shown = 8);

// How a header names --checkpoint NAME: "reverse (shipped)" for a bare name, which is always a
// shipped checkpoint; a path as given.
std::string checkpoint_label(const std::string& checkpoint);

// Where an attention lesson's weights and input come from when they are a trained model's
// (--checkpoint): a layer of a checkpoint of attn train, on the task's own tokens.
struct TrainedSource {
  std::string checkpoint;           // as given
  std::string task, pattern;        // "reverse"; what a head that solves it attends to
  std::size_t layer = 0;            // whose attention, reading that layer's input
  std::vector<std::string> tokens;  // the heatmaps' labels
  // Every layer's heads measured against the task's keys on `measured_on` held-out sequences
  // (head_patterns.hpp), and what attn claims of them.
  std::vector<PatternScores> measured;
  std::size_t measured_on = 0;
  std::string keys;
  HeadsClaim claim = HeadsClaim::none;
};
// The prose under the heatmap of a layer read from a Hugging Face BERT or GPT-2 folder
// (--pretrained): `source` "DIR, layer N", `which` what of it is shown ("head 2", "the heads").
std::string pretrained_note(std::string_view source, std::string_view which, bool gpt2);
// One paragraph of prose broken at spaces into lines of at most `width` columns.
std::string wrapped_prose(std::string_view text, std::size_t width = 100);
// The prose under a trained head's heatmap: where it comes from.
std::string trained_note(const TrainedSource& source, std::string_view which);
// Under it, what the checkpoint's heads of the shown layer (or its one head `head`) do, measured,
// and the claim checked (show_head_patterns).
void show_trained_heads(LessonRun& run, const TrainedSource& source,
                        std::optional<std::size_t> head = std::nullopt);
// The trained source's settings: the checkpoint and the layer (nothing without one).
void record_trained(LessonRun& run, const std::optional<TrainedSource>& trained);

// A module's state_dict as a table: key, shape, count (grouped in thousands with `commas`), and
// with `total` a last row of the sum.
Table parameter_table(const Module& model, bool commas = false, bool total = true);

// What every lesson takes. Sizes are ignored when `input` is given: then they come from it.
struct LessonOptions {
  std::uint64_t seed = 0;
  std::size_t batch = 1;
  std::size_t seq = 5;
  std::size_t d_model = 6;
  std::optional<Array> input;  // --input, already read
  std::string input_name;      // its path, for the settings line
};

struct Sizes3 {
  std::size_t batch, seq, d_model;
};
// The (B, T, D) sizes a run will use: those of --input when given, else the options'.
Sizes3 lesson_sizes(const LessonOptions& options);

// The lesson's rank-3 input: --input when given (rank, dtype and sizes checked), else N(0, 1)
// draws of shape `generated` from the seed. `axes` names the axes in errors, e.g. "(B, T, D)".
Tensor3 lesson_input(const LessonOptions& options, std::string_view axes, Sizes3 generated);

// For check_budget: X (B,T,D) as lesson_input makes it, and the --input array it came from, kept
// until the end.
MemoryPlan plan_lesson_input(const LessonOptions& options);
// For check_budget: the weights read from a file (--weights), kept until the end; none without.
MemoryPlan plan_weights_file(const std::optional<StateDict>& weights);
// For check_budget: a table of `rows` rows, held in the run and shown as text or JSON.
PlannedTensor planned_table_rows(std::string name, std::size_t rows, std::string axes);
// For check_budget: a heatmap of (rows, cols) kept in the run, and its copy while it is drawn;
// nothing past kHeatmapMaxTokens, where none is drawn.
PlannedTensor planned_heatmap(std::size_t rows, std::size_t cols, std::string axes);

// Row and column labels for T tokens: x0, x1, ...
// "s0", "s1", ...: `count` labels with a prefix.
std::vector<std::string> numbered_labels(std::string_view prefix, std::size_t count);
std::vector<std::string> token_labels(std::size_t tokens);
// A (rows, cols) heatmap of batch entry 0 of a (B, rows, cols) tensor.
Array first_matrix(const Tensor3& t);
// The same of one head of batch entry 0 of a (B, H, rows, cols) tensor.
Array head_matrix(const Tensor4& t, std::size_t head);

// Records the input (seed or file) and the sizes as the run's settings.
void record_settings(LessonRun& run, const LessonOptions& options,
                     std::initializer_list<std::pair<const char*, std::size_t>> sizes);

// The lesson's Markdown text split into sections: the part before the first marker is "intro",
// then one section per `<!-- step: NAME -->` line.
std::vector<std::pair<std::string, std::string>> markdown_sections(std::string_view markdown);
// The whole Markdown of a lesson, compiled in from lessons/NN-name/lesson.md.
std::string_view lesson_markdown(std::string_view lesson);

}  // namespace attn::lessons
