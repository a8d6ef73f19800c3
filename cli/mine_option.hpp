// --mine: a lesson run with the student's own implementation beside attn's (course/mine.hpp),
// on the lessons whose steps an exercise computes.
#pragma once

#include <CLI/CLI.hpp>

#include "lesson.hpp"

namespace attn::cli {

// Adds --mine to a lesson command (only to lessons course::mine_calls lists).
void add_mine_option(CLI::App& sub, bool& mine);

// With `mine`, runs the student's exercise of the assignment tree around the working directory on
// `run`'s own steps and appends what it returned: each as a step ("yours_<step>") and a check
// that it is attn's within float32 round-off, which fails the command (exit 1) where it is not.
void add_mine_steps(lessons::LessonRun& run, bool mine);

}  // namespace attn::cli
