// A lesson run as one self-contained static page (attn patch --export page.html): its settings,
// prose, tables, heatmaps (cells coloured as the terminal's, signed values on the diverging map)
// and checks, in the exported pages' style (assets/view.css); no script, no link outside.
#pragma once

#include <string>
#include <string_view>

#include "lesson.hpp"

namespace attn::render {

// Refuses, before anything is computed, a path that is not a writable .html file: Error about
// `subject` ("export").
void check_page_path(const std::string& path, std::string_view subject);

// The page: `title` as its heading, the run's settings under it, then its items in order (steps,
// which --save and --format json hold whole, are left out).
std::string run_page_html(const lessons::LessonRun& run, std::string_view title);

}  // namespace attn::render
