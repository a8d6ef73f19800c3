// torchinfo's summary table, byte for byte: torchinfo 1.8 ("current") and 0.1.0 (the layout of
// seed 004's tables). The rows come from a forward pass: one LayerInfo per module call, in call
// order, the way torchinfo's hooks record them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/array.hpp"
#include "base/budget.hpp"
#include "module.hpp"
#include "module_size.hpp"
#include "trace.hpp"

namespace attn {

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

// What a summary (attn summary, or mult-adds from a trace) holds for each row beside the module
// tree: the trace's LayerInfo, the row's line of the table, its JSON object and state_dict keys
// (a JSON summary of 100,000 book heads holds about 2.2 KB a row).
inline constexpr std::size_t kSummaryRowBytes = 2560;
// A summary of a model of `size` as a memory plan: its tree twice (the caller's and the trace's)
// and a row for each module; `axes` names the sizes the rows grow with ("H", "L/H").
MemoryPlan planned_summary(const ModuleSize& size, std::string axes);

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
