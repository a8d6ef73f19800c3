// The tables of tests/golden/torchinfo/<model>/ and the summary options their file names say:
// `defaultcols` (output_size, num_params) or `allcols` (all seven), at a depth.
#pragma once

#include <filesystem>
#include <string>

#include "fixtures.hpp"
#include "summary.hpp"

namespace attn::testing {

inline std::string torchinfo_golden(const std::string& model, const std::string& file) {
  return read_text((std::filesystem::path(ATTN_GOLDEN_DIR) / "torchinfo" / model / file).string());
}

inline SummaryOptions torchinfo_options(int depth, bool all_columns) {
  SummaryOptions options;
  options.depth = depth;
  if (all_columns) {
    options.col_names = {"input_size",  "output_size", "num_params", "params_percent",
                         "kernel_size", "mult_adds",   "trainable"};
  }
  return options;
}

}  // namespace attn::testing
