// A LessonRun as text for a terminal.
#pragma once

#include <string>

#include "lesson.hpp"
#include "output.hpp"

namespace attn::render {

// The run as `attn <lesson>` prints it: each step under a line with its name and shape, the
// tensor as torch prints it (options.precision, options.full), the lesson's prose, checks,
// tables and heatmaps; with options.quiet only the final result (the step named "output", else
// the last step) and failed checks. `color` adds
// ANSI colours and the heatmaps' colour palettes.
std::string render_text(const lessons::LessonRun& run, const OutputOptions& options, bool color);

}  // namespace attn::render
