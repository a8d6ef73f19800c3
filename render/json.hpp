// A LessonRun as one JSON document (`--format json`).
#pragma once

#include <string>

#include "lesson.hpp"

namespace attn::render {

// {"lesson", "settings", the run's listings, "steps" (name, title, shape, dtype, values),
// "checks", "tables", "parameters"}, indented by two, ending in a newline. Floats are the
// shortest decimals that read back as the same float32; NaN and infinities are the strings
// "NaN", "Infinity" and "-Infinity".
std::string render_json(const lessons::LessonRun& run);

}  // namespace attn::render
