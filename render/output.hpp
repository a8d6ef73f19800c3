// The output options of a lesson run, and the decision whether a terminal gets colour. The CLI
// fills OutputOptions from its flags; render/ turns a LessonRun into text or JSON (text.hpp,
// json.hpp) and writes every output of one run, all or nothing (save.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/budget.hpp"

namespace attn::render {

enum class Format { text, json };
enum class ColorMode { automatic, always, never };
// The colour scale of attention-weight heatmaps: fixed 0 to 1, per row (0 to the row's largest
// weight), or automatic: per row when every weight of the map is below 0.5, else fixed.
enum class WeightScale { automatic, fixed, per_row };

struct OutputOptions {
  Format format = Format::text;
  std::string save_dir;      // a directory for every step as .npy plus manifest.json; empty: none
  std::string save_weights;  // a .safetensors or .npz for the run's weights; empty: none
  int precision = 4;         // digits after the point when printing tensors
  bool full = false;         // print whole tensors, never summarised with ...
  ColorMode color = ColorMode::automatic;
  bool quiet = false;  // only the final result and the parameter count
  WeightScale weight_scale = WeightScale::automatic;
};

// A file a run writes beside its save and weights (a checkpoint, a picture), its bytes already
// marked as attn's (file_mark.hpp) and its target checked before the run computed; `subject` is
// its option in snake case.
struct FileOutput {
  std::string path;
  std::string subject;
  std::vector<unsigned char> bytes;
  // Not empty: `path` is a folder of these files (name, bytes), written and replaced whole (a
  // checkpoint folder: check_checkpoint_folder).
  std::vector<std::pair<std::string, std::vector<unsigned char>>> folder = {};
};
inline constexpr std::size_t kMostFiles = 4;

// What showing a run with these options costs beyond the run itself (core/base/budget.hpp's
// OutputCost), given the tensors the run holds: the text, the JSON document, the files.
MemoryPlan output_memory(const OutputOptions& options, const MemoryPlan& result);

// Whether stdout gets ANSI colours under `mode`: automatic is off under NO_COLOR, TERM=dumb and
// when stdout is not a terminal.
bool use_color(ColorMode mode);

}  // namespace attn::render
