// torchinfo's summary table, byte for byte: torchinfo 1.8 ("current") and 0.1.0 (the layout of
// seed 004's tables). The rows come from a forward pass: one LayerInfo per module call, in call
// order, the way torchinfo's hooks record them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "array.hpp"

namespace attn {

struct Module;

struct ParameterInfo {
  std::string name;  // "weight", "bias", "gamma"
  Shape shape;
  bool trainable = true;
};

struct LayerInfo {
  std::string class_name;  // "Linear"
  std::string var_name;    // attribute name in the parent: "tokeys", "0" inside a ModuleList
  int depth = 0;           // 0 for the model itself
  bool executed = true;    // false for containers that never run (ModuleList): shapes print "--"
  Shape input_shape;       // of the first input
  Shape output_shape;
  std::vector<ParameterInfo> parameters;  // the module's own parameters, registration order
  bool is_leaf = true;                    // no child modules
  // The row of the module this one belongs to in the module tree, when a Trace knows it: not
  // always the nearest row above one level up, since a module may be called from outside its
  // parent (seed 001's ResidualConnection calls the attention through a lambda).
  std::optional<std::size_t> parent;
  // torchinfo lists a module's hierarchy again when the rows of another module came between
  // (add_missing_container_layers). Such a row stands for the module of an earlier row (its
  // parameters are that row's; it adds none to its parents), and when torchinfo inserts the same
  // LayerInfo object again it is the same_as an earlier row: every listing of one object shows
  // the index and the parameters of its last.
  std::optional<std::size_t> stands_for, same_as;
};

struct SummaryInput {
  Shape shape;
  std::size_t element_size = 4;  // bytes per element (float32)
};

enum class TorchinfoFormat { current, v0_1 };

struct SummaryOptions {
  // Any of input_size, output_size, num_params, params_percent, kernel_size, mult_adds, trainable.
  std::vector<std::string> col_names = {"output_size", "num_params"};
  int col_width = 25;
  int depth = 3;
  int verbose = 1;  // 0 quiet (nothing), 1 table, 2 also one row per parameter
  TorchinfoFormat format = TorchinfoFormat::current;
};

// 2362368 -> "2,362,368": counts as torchinfo and the lessons print them.
std::string with_commas(std::int64_t n);

// The table torchinfo.summary(model, input_size=..., **options) prints, ending in a newline.
// Throws attn::Error for an unknown column name or an option out of range.
std::string format_summary(const std::vector<LayerInfo>& layers,
                           const std::vector<SummaryInput>& inputs, const SummaryOptions& options);
// The same, knowing the model's module tree: verbose 2 lists a row's parameters in
// module.named_parameters() order (registration order), which differs from the order the rows
// ran in when a module calls its children in another order than it made them (seed 001's
// EncoderBlock makes its attention first and calls its ResidualConnection first).
std::string format_summary(const Module& model, const std::vector<LayerInfo>& layers,
                           const std::vector<SummaryInput>& inputs, const SummaryOptions& options);

}  // namespace attn
