// attn LESSON --mine: the student's own functions, run on the lesson's own intermediate tensors,
// and what they returned beside attn's. A lesson whose steps an exercise computes lists its calls
// here; each is compiled with the student's file and run confined, as a test is
// (grader.hpp run_student_calls), and compared with attn's step within a float32 tolerance.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/array.hpp"

namespace attn::course {

// One call of the exercise that a lesson's steps make.
struct MineCall {
  std::string call;                    // the function in attn::exercise
  std::vector<std::string> arguments;  // attn's steps by name; "a|b": the first the run has
  std::vector<std::pair<int, std::string>> results;  // a field of what it returns (-1: all of
                                                     // it) and the step it is compared with
};

// The calls of `lesson`; empty when no step of it is an exercise's.
std::vector<MineCall> mine_calls(const std::string& lesson);

struct MineStep {
  std::string step;            // attn's step, e.g. "weights"
  std::string title;           // "weights from your dot_product_attention(input)"
  std::optional<Array> yours;  // what the student's function gave, when it gave a tensor
  bool same = false;           // within the tolerance of attn's
  std::string detail;          // the comparison, or why there is nothing to compare
};

struct MineRun {
  std::string source;   // the student's file, relative to the tree
  std::string problem;  // a compile error: nothing ran
  std::vector<MineStep> steps;
};

inline constexpr double kMineAtol = 1e-5, kMineRtol = 1e-4;

// Runs `lesson`'s calls on attn's `steps` with the student's exercise in `tree`.
MineRun run_mine(const std::filesystem::path& tree, const std::string& lesson,
                 const std::vector<std::pair<std::string, Array>>& steps);

}  // namespace attn::course
