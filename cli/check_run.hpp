// attn check's run of some exercises, shared with attn watch: their visible tests, the progress
// recorded, the report, and what to do next.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "assignments.hpp"

namespace attn::cli {

struct CheckSettings {
  double timeout = 20.0;  // seconds per test
  bool full_errors = false;
  bool color = false;
};

struct CheckRun {
  std::string text;  // the report, the verdict and the progress bar
  bool passed = false;
};

CheckRun check_exercises(const std::filesystem::path& tree,
                         const std::vector<course::Exercise>& all,
                         const std::vector<course::Exercise>& chosen,
                         const CheckSettings& settings);

// The exercise's next hint (or hint `stage`, from 1), the hints seen recorded in the tree's
// progress; attn::Error when it has none, or fewer than `stage`.
std::string hint_text(const std::filesystem::path& tree, const course::Exercise& exercise,
                      int stage = 0);

}  // namespace attn::cli
